package metrics

import (
	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// JudgeOutputs applies the degenerate-output rules (package degenerate, the same the
// readiness probe applies to its completion) to a trial's measured requests that finished
// with HTTP 200 and no error: empty text although tokens were counted, one code point
// repeated for most of the output, a special token repeated for most of it, byte for byte
// another prompt's output. kinds[i] is the
// first rule records[i] breaks, in that order (degenerate.None for a warmup, a failed or
// cancelled request, one whose output is unknown, or a fine output).
func JudgeOutputs(records []load.RequestResult) (counts results.DegenerateOutputs, kinds []degenerate.Kind) {
	var id degenerate.Identity
	for _, r := range records {
		if !r.Warmup && r.Output != nil && Succeeded(r) {
			id.Add(r.PromptHash, r.OutputHash, r.Output.CodePoints)
		}
	}
	kinds = make([]degenerate.Kind, len(records))
	for i, r := range records {
		if r.Warmup || !r.OK() || r.Output == nil {
			continue
		}
		counts.Checked++
		k := r.Output.Check(completionTokens(r))
		switch k {
		case degenerate.Empty:
			counts.Empty++
		case degenerate.RepeatedCodePoint:
			counts.RepeatedCodePoint++
		case degenerate.RepeatedToken:
			counts.RepeatedToken++
		}
		if Succeeded(r) && id.Shared(r.OutputHash, r.Output.CodePoints) {
			counts.IdenticalAcrossPrompts++
			if k == degenerate.None {
				k = degenerate.IdenticalAcrossPrompts
			}
		}
		if k != degenerate.None {
			counts.Requests++
		}
		kinds[i] = k
	}
	return counts, kinds
}

// completionTokens is what the server said it generated; 0 when it did not say.
func completionTokens(r load.RequestResult) int {
	if !r.UsageReported {
		return 0
	}
	return r.CompletionTokens
}
