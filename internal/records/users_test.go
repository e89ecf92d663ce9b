package records

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// A users trial's records keep each request's user, conversation, turn and end, and the
// recompute gives the trial's conversations figures back bit for bit from the file, through
// the same metrics.Conversations the benchmark ran.
func TestUsersTrialRecordsRecompute(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 123)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	n := func(v int) *int { return &v }
	turn := func(user, conv, k, prompt, cached int, sent, ttft, done float64, warm bool) load.RequestResult {
		return load.RequestResult{Warmup: warm, User: user, Conversation: conv, Turn: k, HTTPStatus: 200, UsageReported: true,
			PromptTokens: prompt, CompletionTokens: 16, RequestedOutputTokens: 16, CachedTokens: n(cached), FinishReason: "length", ContentChunks: 16,
			Sent: at(sent), FirstContent: at(sent + ttft), SecondContent: at(sent + ttft + 1), LastContent: at(done - 0.5), Done: at(done)}
	}
	recs := []load.RequestResult{
		turn(0, 1, 1, 603, 0, 0, 900.25, 1000, true),
		turn(1, 2, 1, 610, 0, 10, 901.5, 1010, true),
		turn(0, 3, 1, 603, 413, 2000, 400.125, 3000, false),
		turn(1, 4, 1, 611, 413, 2100, 380, 3100, false),
		turn(0, 3, 2, 818, 603, 3000, 200.75, 4000, false),
		turn(1, 4, 2, 826, 611, 3200, 210, 4300, false),
	}
	for i := range recs {
		recs[i].Index = i
	}
	slos := []results.SLO{{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 1000, Comparison: results.StrictlyLessThan}}
	j, err := metrics.Judge(metrics.TrialRun{Records: recs, SLOs: slos, RequestedOSL: 16, Confirmation: true})
	if err != nil {
		t.Fatal(err)
	}
	reported := j.Trial
	reported.Trial, reported.Kind, reported.Users = 1, "confirmation", 2
	c := metrics.Conversations(recs, 190, 420)
	reported.Conversations = &c

	dir := t.TempDir()
	rel := filepath.Join("01-users", "confirmation-u002-1.jsonl")
	if _, err := Write(dir, rel, FromLoad(Trial{Workload: "users", Index: 1}, recs)); err != nil {
		t.Fatal(err)
	}
	lines, _, err := Read(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		if l.User != recs[i].User || l.Conversation != recs[i].Conversation || l.Turn != recs[i].Turn || l.DoneNs == nil {
			t.Errorf("line %d: user %d conversation %d turn %d done %v", i, l.User, l.Conversation, l.Turn, l.DoneNs)
		}
	}
	got, err := recomputeTrial(slos, 16, reported, lines)
	if err != nil {
		t.Fatal(err)
	}
	if got.Users != 2 || got.Conversations == nil || !reflect.DeepEqual(*got.Conversations, c) {
		t.Fatalf("recomputed users %d, conversations %+v\nwant %+v", got.Users, got.Conversations, c)
	}
	if c.InFlightPeak != 2 || c.FirstTurns != 2 || c.LaterTurnTTFTP50Ms == 0 {
		t.Errorf("figures %+v", c)
	}
}

// Lines of other trials carry none of the users keys.
func TestOtherLinesHaveNoUsersKeys(t *testing.T) {
	t.Parallel()
	r := load.RequestResult{Sent: time.Unix(1, 0), HTTPStatus: 200, Done: time.Unix(2, 0)}
	dir := t.TempDir()
	if _, err := Write(dir, "x.jsonl", FromLoad(Trial{Workload: "w", Concurrency: 1, Index: 1}, []load.RequestResult{r})); err != nil {
		t.Fatal(err)
	}
	lines, _, err := Read(filepath.Join(dir, "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b := string(lines[0].appendJSON(nil))
	for _, key := range []string{`"user"`, `"conversation"`, `"turn"`, `"done_ns"`} {
		if strings.Contains(b, key) {
			t.Errorf("a concurrency line has %s: %s", key, b)
		}
	}
}
