package capacity

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// writeTrace writes lines to a trace file and returns its path.
func writeTrace(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// constantTrace is n requests gapMs apart, each 64 tokens in (a shared first block of 32,
// then its own) and 8 out.
func constantTrace(t *testing.T, n int, gapMs float64) string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"timestamp": %g, "input_length": 64, "output_length": 8, "hash_ids": [1, %d]}`, float64(i)*gapMs, 100+i)
	}
	return writeTrace(t, lines...)
}

func replayConfig(endpoint, file string) Config {
	cfg := testConfig(endpoint)
	cfg.Workloads = []Workload{{Label: "recorded", TraceFile: file, TraceBlockTokens: 32}}
	cfg.OpenLoop = &OpenLoop{Speedup: true, MinRate: 0.5, MaxRate: 3, Tolerance: 0.25}
	return cfg
}

func TestValidateTrace(t *testing.T) {
	t.Parallel()
	good := constantTrace(t, 12, 100)
	badLine := writeTrace(t, `{"timestamp": 0, "input_length": 64, "output_length": 8}`, `{"timestamp": 5, "input_length": -3, "output_length": 8}`)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   []string // path: detail fragment
	}{
		{"valid", func(*Config) {}, nil},
		{"unreadable", func(c *Config) { c.Workloads[0].TraceFile = filepath.Join(t.TempDir(), "none.jsonl") },
			[]string{"workloads[0].trace.file: workloads[0].trace.file cannot be replayed: read trace: open"}},
		{"bad line", func(c *Config) { c.Workloads[0].TraceFile = badLine },
			[]string{"workloads[0].trace.file: workloads[0].trace.file cannot be replayed: trace line 2: input_length: must be a positive whole number of tokens, got -3"}},
		{"lengths beside the trace", func(c *Config) { c.Workloads[0].InputTokens = 64 },
			[]string{"workloads[0].input_tokens: workloads[0].input_tokens: a trace workload takes every request's lengths"}},
		{"too short after warmups", func(c *Config) { c.WarmupRequests = 6 },
			[]string{"workloads[0].trace.file: " + good + " has 12 requests; after trial.warmup_requests (6)"}},
		{"measured requests at one timestamp", func(c *Config) {
			lines := []string{`{"timestamp": 0, "input_length": 64, "output_length": 8}`}
			for range 9 {
				lines = append(lines, `{"timestamp": 100, "input_length": 64, "output_length": 8}`)
			}
			c.Workloads[0].TraceFile = writeTrace(t, lines...)
		}, []string{"workloads[0].trace.file: "}}, // every measured request on line 2 on has the same timestamp
		{"trace without replay", func(c *Config) { c.OpenLoop = nil },
			[]string{"workloads[0].trace: workloads[0].trace a trace workload is replayed at its recorded arrivals by a search over the speedup"}},
		{"replay without trace", func(c *Config) {
			c.Workloads = append(c.Workloads, Workload{Label: "synthetic", InputTokens: 64, OutputTokens: 8})
		}, []string{`workloads[1]: workloads[1]: search.speedup replays recorded traffic faster or slower, and workloads[1] ("synthetic") has no trace`}},
		{"speedup bounds inverted", func(c *Config) { c.OpenLoop.MinRate = 4 },
			[]string{"search.speedup.max: search.speedup.max (3) is below search.speedup.min (4)"}},
		{"arrival beside a replay", func(c *Config) { c.OpenLoop.MaxInFlight = 2 },
			[]string{"arrival: arrival search.speedup replays each trace's own arrivals"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := replayConfig("http://127.0.0.1:1", good)
			cfg.WarmupRequests, cfg.StallTimeout, cfg.RequestTimeout = 1, time.Minute, time.Minute
			tc.change(&cfg)
			cfg.LoadTraces()
			var got []string
			for _, p := range cfg.Validate() {
				got = append(got, p.Path.String()+": "+p.Detail)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %q, want it to begin %q", got[i], w)
				}
			}
		})
	}
}

// Requests whose hash_ids begin alike begin with the same text, up to the block they part
// at; the rest of each prompt is its own, and every request asks for its own output length.
func TestTracePromptsSharePrefixes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	file := writeTrace(t,
		`{"timestamp": 0, "input_length": 80, "output_length": 3, "hash_ids": [5, 6]}`,
		`{"timestamp": 10, "input_length": 80, "output_length": 4, "hash_ids": [5, 6]}`,
		`{"timestamp": 20, "input_length": 80, "output_length": 5, "hash_ids": [5, 7]}`,
		`{"timestamp": 30, "input_length": 50, "output_length": 6, "hash_ids": [8, 9]}`,
		`{"timestamp": 40, "input_length": 80, "output_length": 7}`,
	)
	cfg := replayConfig(srv.URL, file)
	cfg.WarmupRequests = 1
	cfg.LoadTraces()
	s, err := connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	phases, err := s.trialPrompts(context.Background(), cfg.Workloads[0], "recorded s=1 probe t=0")
	if err != nil {
		t.Fatal(err)
	}
	if len(phases.warmup.texts) != 1 || len(phases.measured.texts) != 4 {
		t.Fatalf("%d warmups and %d measured, want the trace's first request and the other 4", len(phases.warmup.texts), len(phases.measured.texts))
	}
	texts := append(append([]string{}, phases.warmup.texts...), phases.measured.texts...)
	block := func(text string, i int) string { return strings.Split(text, "\n")[i] }
	if block(texts[0], 0) != block(texts[1], 0) || block(texts[0], 1) != block(texts[1], 1) || block(texts[0], 0) != block(texts[2], 0) {
		t.Errorf("shared blocks differ:\n%q\n%q\n%q", texts[0], texts[1], texts[2])
	}
	if block(texts[0], 1) == block(texts[2], 1) {
		t.Errorf("blocks 6 and 7 are the same text %q", block(texts[0], 1))
	}
	if texts[0] == texts[1] {
		t.Error("two requests with the same blocks have no text of their own beyond them")
	}
	if strings.HasPrefix(texts[3], block(texts[0], 0)) || strings.Contains(texts[4], "\n") {
		t.Errorf("unshared prompts share text: %q, %q", texts[3], texts[4])
	}
	// 50 tokens over hash_ids [8, 9] of 32 tokens: a full block and one cut to 18 tokens, nothing of its own.
	if n := strings.Count(texts[3], "\n"); n != 1 {
		t.Errorf("request 4 has %d block breaks, want 1 (two blocks, no text of its own): %q", n, texts[3])
	}
	if got := append(append([]int{}, phases.warmup.maxTokens...), phases.measured.maxTokens...); fmt.Sprint(got) != "[3 4 5 6 7]" {
		t.Errorf("output lengths %v, want the trace's [3 4 5 6 7]", got)
	}
}

// A replay of 2 warmups and 18 measured requests recorded 200 ms apart (5 requests/s) against
// the two-slot engine, which holds about 6 requests/s: the search over the speedup finds the
// boundary near 1.2 times the recorded traffic. Every trial carries its speedup and its rate
// (the trace's mean rate times it), the journal the speedup, and the records recompute the
// trials bit for bit.
func TestRunReplayFindsSpeedup(t *testing.T) {
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := replayConfig(srv.URL, constantTrace(t, 20, 200))
	cfg.WarmupRequests, cfg.ConfirmationTrials = 2, 1
	cfg.RecordsDirectory = t.TempDir() // recomputed from below
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if w.MaximumPassingSpeedup == nil || w.FirstFailingSpeedup == nil {
		t.Fatalf("no speedup boundary: %v / %v, notes %q", w.MaximumPassingSpeedup, w.FirstFailingSpeedup, w.Notes)
	}
	mp, ff := *w.MaximumPassingSpeedup, *w.FirstFailingSpeedup
	t.Logf("speedup boundary %.3g .. %.3g (%.3g .. %.3g requests/s), bound by %v", mp, ff, *w.MaximumPassingRequestRate, *w.FirstFailingRequestRate, w.BoundBy)
	// The ladder 0.5, 0.625, 0.78, 0.98, 1.22, 1.53, 1.91, 2.38, 3: about 6 requests/s is
	// 1.2 times 5, so the boundary is a pair of neighbours between 0.78 and 1.91.
	if mp < 0.78 || ff > 1.91 || ff/mp > 1.26 {
		t.Errorf("speedup boundary %.3g .. %.3g, want neighbours around 1.2", mp, ff)
	}
	if rate := *w.MaximumPassingRequestRate; rate < mp*5*0.999 || rate > mp*5*1.001 {
		t.Errorf("maximum passing rate %g, want the trace's 5 requests/s × %g", rate, mp)
	}
	if w.TraceSHA256 == "" || w.TraceFile != cfg.Workloads[0].TraceFile || w.ConfiguredISL != 64 || w.ConfiguredOSL != 8 {
		t.Errorf("workload trace %q %q, lengths %d / %d", w.TraceFile, w.TraceSHA256, w.ConfiguredISL, w.ConfiguredOSL)
	}
	if doc.AIPerf.ArrivalPattern != "open-loop trace replay" {
		t.Errorf("arrival pattern %q", doc.AIPerf.ArrivalPattern)
	}
	for _, tr := range w.AllTrials {
		if tr.Speedup <= 0 || tr.OpenLoop == nil || tr.OpenLoop.Arrival != "trace" || tr.RequestRate < tr.Speedup*5*0.999 || tr.RequestRate > tr.Speedup*5*1.001 {
			t.Fatalf("trial without its speedup and rate: speedup %g rate %g open loop %+v", tr.Speedup, tr.RequestRate, tr.OpenLoop)
		}
		// 18 measured requests 200 ms / speedup apart: the guard's offered rate is the schedule's.
		if tr.OpenLoop.OfferedRate < tr.RequestRate*0.99 || tr.OpenLoop.OfferedRate > tr.RequestRate*1.01 {
			t.Errorf("offered %g at speedup %g, want %g", tr.OpenLoop.OfferedRate, tr.Speedup, tr.RequestRate)
		}
	}
	if len(journal) == 0 || journal[0].Speedup == 0 || math.Abs(journal[0].Rate-journal[0].Speedup*5) > 1e-9 {
		t.Errorf("journal entries carry the speedup and the rate: %+v", journal[0])
	}
	if h := history(pickAxis(cfg).(onLadder), journal, "recorded"); len(h) != len(journal) || h[0].Rate != journal[0].Speedup {
		t.Errorf("resume history by speedup: %+v", h)
	}
	recomputed, err := records.Recompute(doc, cfg.RecordsDirectory)
	if err != nil {
		t.Fatal(err)
	}
	if len(recomputed) != len(w.AllTrials) {
		t.Fatalf("%d trials recomputed, want %d", len(recomputed), len(w.AllTrials))
	}
	for _, r := range recomputed {
		if len(r.Differences) > 0 {
			t.Errorf("%s: %v", r.File, r.Differences)
		}
	}
	// The document round-trips: Parse re-derives both boundaries from the trials.
	back := roundTrip(t, doc)
	if bw := back.Workloads[0]; *bw.MaximumPassingSpeedup != mp || *bw.FirstFailingSpeedup != ff || bw.TraceSHA256 != w.TraceSHA256 || bw.AllTrials[0].Speedup != w.AllTrials[0].Speedup {
		t.Errorf("round trip: %+v", bw)
	}
}

// The line a person reads when a workload is done states the boundary of its search.
func TestWorkloadLineNamesItsAxis(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	four, five := 4, 5
	for _, tc := range []struct {
		w    results.Workload
		want string
	}{
		{results.Workload{MaximumPassingConcurrency: &four, FirstFailingConcurrency: &five}, "maximum passing concurrency 4, first failing 5"},
		{results.Workload{MaximumPassingRequestRate: f(2.5), FirstFailingRequestRate: f(3.125)}, "maximum passing request rate 2.5 requests/s, first failing 3.12 requests/s"},
		{results.Workload{MaximumPassingRequestRate: f(6.25), MaximumPassingSpeedup: f(1.25), BoundBy: nil}, "maximum passing speed-up ≥ 1.25× (6.25 requests/s), first failing none"},
	} {
		if got := workloadLine(tc.w); got != tc.want {
			t.Errorf("workloadLine = %q, want %q", got, tc.want)
		}
	}
}

// A journal's trials are reused only for the same recording: the fingerprint reads the
// trace's contents (its SHA-256), not only its path.
func TestFingerprintReadsTheTrace(t *testing.T) {
	t.Parallel()
	file := constantTrace(t, 12, 100)
	a := replayConfig("http://127.0.0.1:1", file)
	a.LoadTraces()
	before := a.Fingerprint()
	if err := os.WriteFile(file, []byte(`{"timestamp": 0, "input_length": 64, "output_length": 8}`+"\n"+`{"timestamp": 50, "input_length": 64, "output_length": 8}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := replayConfig("http://127.0.0.1:1", file)
	b.LoadTraces()
	if b.Fingerprint() == before {
		t.Error("a changed trace file keeps the fingerprint: a resumed run would reuse trials of another recording")
	}
	c := replayConfig("http://127.0.0.1:1", file)
	c.LoadTraces()
	if c.Fingerprint() != b.Fingerprint() {
		t.Error("the same trace read twice gives two fingerprints")
	}
}
