package records

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/degenerate"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// A trial's degenerate-output counts, its unique outputs and the error summary quoting a
// degenerate output recompute from its records file bit for bit: the file holds the hashes,
// code points and heads the rules read. A file changed under them no longer agrees.
func TestRecomputeDegenerateOutputs(t *testing.T) {
	t.Parallel()
	sent := time.Unix(1_800_000_000, 0)
	var recs []load.RequestResult
	for i, text := range []string{
		strings.Repeat("!", 64), strings.Repeat("!", 64), strings.Repeat("!", 64), // the same "!!!!" for three prompts
		"", // empty, with its tokens counted
		strings.Repeat("and then we went home ", 8), // a healthy phrase loop
	} {
		o := degenerate.Of(text)
		r := load.RequestResult{
			Index: i, Prompt: string(rune('a' + i)), PromptHash: uint64(100 + i), RequestedOutputTokens: 64,
			Sent: sent, Headers: sent.Add(time.Millisecond), Done: sent.Add(time.Second), HTTPStatus: 200, FinishReason: "length",
			UsageReported: true, PromptTokens: 8, CompletionTokens: 64, Output: &o,
		}
		if text != "" {
			r.FirstContent, r.LastContent, r.ContentChunks, r.ContentBytes = sent.Add(10*time.Millisecond), sent.Add(time.Second), 64, len(text)
			r.OutputHash = uint64(len(text)) // the same text, the same hash
		}
		recs = append(recs, r)
	}
	trial, _ := metrics.Summarize(recs, 64)
	if d := trial.Correctness.DegenerateOutputs; d == nil || *d != (results.DegenerateOutputs{Requests: 4, Checked: 5, Empty: 1, RepeatedCodePoint: 3}) {
		t.Fatalf("degenerate_outputs = %+v", d)
	}
	dir := t.TempDir()
	trial.RecordsFile, trial.Trial, trial.Concurrency, trial.Kind = "t.jsonl", 1, 1, "confirmation"
	if _, err := Write(dir, trial.RecordsFile, FromLoad(Trial{Workload: "w", Concurrency: 1, Index: 1}, recs)); err != nil {
		t.Fatal(err)
	}
	doc := &results.Document{Workloads: []results.Workload{{Label: "w", ConfiguredOSL: 64, AllTrials: []results.Trial{trial}}}}
	got, err := Recompute(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Differences) > 0 {
		t.Fatalf("recomputed %+v", got)
	}
	if d := got[0].Recomputed.Correctness.DegenerateOutputs; d == trial.Correctness.DegenerateOutputs {
		t.Fatal("degenerate_outputs was copied from the document, not recomputed")
	}
	quoted := false
	for _, e := range got[0].Recomputed.ErrorSummary {
		quoted = quoted || e.Kind == "degenerate_output" && e.Count == 3 && strings.Contains(e.Example, `repeated for 64 of its 64 code points: "!!!!`)
	}
	if !quoted {
		t.Errorf("error summary %+v does not count and quote the degenerate outputs", got[0].Recomputed.ErrorSummary)
	}

	// One request's dominant count changed: it is no longer degenerate, and Recompute says so.
	path := filepath.Join(dir, trial.RecordsFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(raw), `"dominant_code_points":64`, `"dominant_code_points":6`, 1)
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = Recompute(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(strings.Join(got[0].Differences, "\n"), "correctness.degenerate_outputs: {Requests:4") {
		t.Errorf("a changed file recomputes with differences %v", got[0].Differences)
	}
}
