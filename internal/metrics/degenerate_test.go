package metrics

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// answered is a successful measured request of prompt whose output was text, as the load
// client records it.
func answered(index int, prompt, text string) load.RequestResult {
	r := req{prompt: prompt, sent: 0, first: 10, last: 100, done: 101, osl: 20, promptTokens: 8, chunks: 20, bytes: len(text), hash: fnv64(text)}.record(index)
	if text == "" {
		// A 200 stream that carried no content: no content times, no hash.
		r.FirstContent, r.LastContent, r.ContentChunks, r.OutputHash = time.Time{}, time.Time{}, 0, 0
	}
	r.PromptHash = fnv64(prompt)
	o := degenerate.Of(text)
	r.Output = &o
	return r
}

// A healthy greedy output: a phrase loop, different for every prompt.
func loop(i int) string {
	return fmt.Sprintf("Answer %d: ", i) + strings.Repeat(fmt.Sprintf("and then we went home %d times ", i), 8)
}

func TestJudgeOutputs(t *testing.T) {
	t.Parallel()
	exclamation := strings.Repeat("!", 200)
	stock := strings.Repeat("It seems like you have entered a random list of words. ", 4)
	six := func(text func(i int) string) []load.RequestResult {
		var out []load.RequestResult
		for i := range 6 {
			out = append(out, answered(i, fmt.Sprintf("prompt %d", i), text(i)))
		}
		return out
	}
	failedAndCancelled := six(loop)
	failedAndCancelled[0].HTTPStatus, failedAndCancelled[0].Err = 503, "HTTP 503"
	failedAndCancelled[1].Cancelled = true
	failedAndCancelled[2].Warmup = true
	failedAndCancelled[3].Output = nil // a records file from before outputs were recorded
	samePrompt := six(loop)
	samePrompt[1] = answered(1, "prompt 0", loop(0)) // greedy: the same prompt, the same text
	twoOfSix := six(loop)
	twoOfSix[0], twoOfSix[1] = answered(0, "p0", exclamation), answered(1, "p1", "")
	shortSame := six(func(int) string { return "It seems like you have entered" }) // a stock opening, too short to judge

	for _, tc := range []struct {
		name    string
		records []load.RequestResult
		want    results.DegenerateOutputs
		most    bool
	}{
		{"healthy phrase loops", six(loop), results.DegenerateOutputs{Checked: 6}, false},
		{"llm-scaler #647: \"!!!!\" for every prompt", six(func(int) string { return exclamation }),
			results.DegenerateOutputs{Requests: 6, Checked: 6, RepeatedCodePoint: 6, IdenticalAcrossPrompts: 6}, true},
		{"\"<unk>\" for every prompt", six(func(int) string { return strings.Repeat("<unk>", 40) }),
			results.DegenerateOutputs{Requests: 6, Checked: 6, RepeatedToken: 6, IdenticalAcrossPrompts: 6}, true},
		{"\"[PAD]\" for one prompt", six(func(i int) string {
			if i == 0 {
				return strings.Repeat("[PAD]", 8)
			}
			return loop(i)
		}), results.DegenerateOutputs{Requests: 1, Checked: 6, RepeatedToken: 1}, false},
		{"empty while tokens were counted", six(func(int) string { return "" }), results.DegenerateOutputs{Requests: 6, Checked: 6, Empty: 6}, true},
		{"the same paragraph for every prompt", six(func(int) string { return stock }), results.DegenerateOutputs{Requests: 6, Checked: 6, IdenticalAcrossPrompts: 6}, true},
		{"the same short opening for every prompt", shortSame, results.DegenerateOutputs{Checked: 6}, false},
		{"the same prompt twice", samePrompt, results.DegenerateOutputs{Checked: 6}, false},
		{"failed, cancelled, warmup and unknown outputs are not judged", failedAndCancelled, results.DegenerateOutputs{Checked: 2}, false},
		{"two of six: counted, not most", twoOfSix, results.DegenerateOutputs{Requests: 2, Checked: 6, Empty: 1, RepeatedCodePoint: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, _ := JudgeOutputs(tc.records)
			if got != tc.want {
				t.Errorf("JudgeOutputs = %+v, want %+v", got, tc.want)
			}
			if got.Most() != tc.most {
				t.Errorf("Most = %t, want %t", got.Most(), tc.most)
			}
			trial, _ := Summarize(tc.records, 20)
			if d := trial.Correctness.DegenerateOutputs; d == nil || *d != tc.want {
				t.Errorf("Summarize's degenerate_outputs = %+v, want %+v", d, tc.want)
			}
			if v := results.Verdict(nil, trial); tc.most && v != results.VerdictError {
				t.Errorf("verdict of a trial of mostly degenerate outputs = %q, want error", v)
			}
		})
	}
}

// The error summary counts degenerate outputs as their own kind and quotes the first, safely.
func TestErrorSummaryQuotesDegenerateOutput(t *testing.T) {
	t.Parallel()
	records := []load.RequestResult{
		answered(0, "p0", loop(0)),
		answered(1, "p1", "\x1b[0m"+strings.Repeat("!", 99)),
		answered(2, "p2", strings.Repeat("!", 50)),
	}
	got := ErrorSummary(records, 20)
	want := []results.ErrorCount{{Kind: "degenerate_output", Count: 2,
		Example: `U+0021 '!' repeated for 99 of its 103 code points: "\x1b[0m` + strings.Repeat("!", 36) + `"…`}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ErrorSummary =\n%+v\nwant\n%+v", got, want)
	}
	if strings.Contains(DescribeErrors(got), "\x1b") {
		t.Errorf("DescribeErrors carries a raw escape: %q", DescribeErrors(got))
	}
}
