package metrics

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// ErrorSummary counts a trial's measured requests that did not give a clean result, by
// kind (HTTP errors by status), with the first message of each kind as an example: failed
// requests (those counted in correctness.errors) and successful ones whose output length
// missed the request (output_length_mismatches) or whose output was degenerate
// (degenerate_output, quoting the output: JudgeOutputs). Cancelled requests are the runner's doing
// and are left out. requestedOSL is as for Summarize. Entries are ordered by count, highest
// first, then by kind; nil when there is nothing to report.
func ErrorSummary(records []load.RequestResult, requestedOSL int) []results.ErrorCount {
	type key struct {
		kind   string
		status int
	}
	var order []key
	byKey := map[key]*results.ErrorCount{}
	_, kinds := JudgeOutputs(records)
	add := func(k key, example string) {
		e := byKey[k]
		if e == nil {
			e = &results.ErrorCount{Kind: k.kind, HTTPStatus: k.status, Example: example}
			byKey[k] = e
			order = append(order, k)
		}
		e.Count++
	}
	for i, r := range records {
		if r.Warmup || r.Cancelled {
			continue
		}
		if !Succeeded(r) {
			k := key{kind: string(r.Failure)}
			if r.Failure == load.FailHTTPStatus {
				k.status = r.HTTPStatus
			}
			example := r.Err
			if k.kind == "" {
				// A 200 stream without error and without content: the user got nothing.
				k.kind = string(load.FailNoContent)
				example = fmt.Sprintf("HTTP %d stream finished without a content chunk (finish_reason %q)", r.HTTPStatus, r.FinishReason)
			}
			add(k, example)
			continue
		}
		requested := cmp.Or(max(requestedOSL, 0), r.RequestedOutputTokens)
		if r.UsageReported && OutputLengthMismatch(r.CompletionTokens, requested) {
			add(key{kind: string(load.FailLengthMismatch)},
				fmt.Sprintf("requested %d output tokens, the server generated %d (finish_reason %q)", requested, r.CompletionTokens, r.FinishReason))
		}
		if k := kinds[i]; k != degenerate.None {
			add(key{kind: string(load.FailDegenerate)}, r.Output.Describe(k, r.CompletionTokens))
		}
	}
	if len(order) == 0 {
		return nil
	}
	out := make([]results.ErrorCount, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	slices.SortStableFunc(out, func(a, b results.ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.HTTPStatus, b.HTTPStatus))
	})
	return out
}

// DescribeErrors is a summary in one line for diagnostics and logs, e.g.
// `3 stalled (e.g. "stalled while ..."), 1 HTTP 503 (e.g. "HTTP 503 from ...")`.
func DescribeErrors(summary []results.ErrorCount) string {
	parts := make([]string, 0, len(summary))
	for _, e := range summary {
		parts = append(parts, fmt.Sprintf("%d %s (e.g. %q)", e.Count, e.Label(), e.Example))
	}
	return strings.Join(parts, ", ")
}
