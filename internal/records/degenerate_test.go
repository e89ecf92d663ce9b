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

// The repeated-token rule reads what a line keeps of the unit: a "<unk>" output is flagged
// again from its file, and a line without a repeated unit carries no such field.
func TestRecordsKeepTheRepeatedToken(t *testing.T) {
	t.Parallel()
	sent := time.Unix(1_800_000_000, 0)
	var recs []load.RequestResult
	for i, text := range []string{"A: " + strings.Repeat("<unk>", 40), strings.Repeat("and then we went home ", 8)} {
		o := degenerate.Of(text)
		recs = append(recs, load.RequestResult{Index: i, Prompt: "p", PromptHash: uint64(i), RequestedOutputTokens: 41, Sent: sent,
			Headers: sent.Add(time.Millisecond), FirstContent: sent.Add(2 * time.Millisecond), LastContent: sent.Add(time.Second), Done: sent.Add(time.Second),
			HTTPStatus: 200, FinishReason: "length", UsageReported: true, PromptTokens: 8, CompletionTokens: 41, Output: &o, OutputHash: uint64(10 + i)})
	}
	dir := t.TempDir()
	if _, err := Write(dir, "t.jsonl", FromLoad(Trial{Workload: "w", Concurrency: 1, Index: 1}, recs)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if !strings.Contains(lines[0], `"repeated_token":"\u003cunk\u003e","repeated_token_code_points":200`) || strings.Contains(lines[1], "repeated_token") {
		t.Fatalf("records:\n%s", raw)
	}
	back, _, err := Read(filepath.Join(dir, "t.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var again []load.RequestResult
	for _, l := range back {
		again = append(again, l.RequestResult())
	}
	counts, kinds := metrics.JudgeOutputs(again)
	if counts != (results.DegenerateOutputs{Requests: 1, Checked: 2, RepeatedToken: 1}) || kinds[0] != degenerate.RepeatedToken {
		t.Errorf("judged from the file: %+v %v", counts, kinds)
	}
}
