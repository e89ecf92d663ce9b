package capacity

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// twoSlotEngine has a boundary at concurrency 2 for a 150 ms p95 TTFT SLO: two requests
// start at once, a third waits about 8 × 40 ms for a slot.
func twoSlotEngine(t *testing.T, opts simengine.Options) *simengine.Server {
	t.Helper()
	opts.Model = simengine.TwoSlotModel()
	if opts.ModelName == "" {
		opts.ModelName = "sim"
	}
	s, err := simengine.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testConfig(endpoint string) Config {
	return Config{
		Endpoint: endpoint, Model: "sim", API: "chat",
		Workloads:      []Workload{{Label: "64 / 8", InputTokens: 64, OutputTokens: 8}},
		SLOs:           []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 150}},
		MinConcurrency: 1, MaxConcurrency: 5,
		WarmupRequests: 1, MeasuredRequests: 8, ConfirmationTrials: 2,
		CacheFlush: "auto", Seed: 1,
	}
}

// runRecorded runs cfg, its records in a temporary directory unless it names one, and returns
// the document with the journal's entries in order.
func runRecorded(t *testing.T, cfg Config) (*results.Document, []JournalEntry) {
	t.Helper()
	if cfg.RecordsDirectory == "" {
		cfg.RecordsDirectory = t.TempDir()
	}
	var journal []JournalEntry
	cfg.Progress = func(e JournalEntry) { journal = append(journal, e) }
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return doc, journal
}

// roundTrip is doc written as JSON and parsed back, as a reader of results_json gets it.
func roundTrip(t *testing.T, doc *results.Document) *results.Document {
	t.Helper()
	raw, err := results.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := results.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestRunFindsBoundary(t *testing.T) {
	t.Parallel()
	engine := twoSlotEngine(t, simengine.Options{})
	srv := httptest.NewServer(engine)
	defer srv.Close()

	var trials []JournalEntry
	cfg := testConfig(srv.URL)
	cfg.MaxConcurrency = 16 // wide enough for the search to probe, not only walk up
	cfg.Progress = func(r JournalEntry) { trials = append(trials, r) }
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 || w.FirstFailingConcurrency == nil || *w.FirstFailingConcurrency != 3 {
		t.Fatalf("boundary = %v / %v, want 2 / 3", w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
	}
	if len(w.Notes) != 0 {
		t.Errorf("notes %q on a boundary found inside the search", w.Notes)
	}
	if len(w.PassingTrials) != 2 || len(w.FailingTrials) != 2 {
		t.Fatalf("got %d passing and %d failing confirmation trials, want 2 and 2", len(w.PassingTrials), len(w.FailingTrials))
	}
	for i, tr := range w.PassingTrials {
		if tr.Trial != i+1 || tr.Concurrency != 2 || tr.TTFTMs.P95 >= 150 {
			t.Errorf("passing trial %d: trial=%d concurrency=%d p95=%.1f", i, tr.Trial, tr.Concurrency, tr.TTFTMs.P95)
		}
	}
	// Every trial is kept, probes included, each with its kind, verdict and full metrics;
	// the confirmation trials at the boundary are among them.
	kinds := map[string]int{}
	for _, tr := range w.AllTrials {
		kinds[tr.Kind]++
		if tr.Concurrency < 1 || (tr.Verdict != "pass" && tr.Verdict != "fail") || tr.Correctness.ProfilingRecords == 0 {
			t.Errorf("trial %+v lacks its concurrency, verdict or counters", tr)
		}
		if tr.Kind == "confirmation" && (tr.TTSTMs == nil || tr.InterChunkLatencyMs == nil || tr.TTFTMs.P99 < tr.TTFTMs.P1) {
			t.Errorf("confirmation trial lacks full statistics: %+v", tr)
		}
		if len(tr.SLOs) != 1 && !tr.StoppedEarly {
			t.Errorf("trial at %d records %d objective values, want 1", tr.Concurrency, len(tr.SLOs))
		}
	}
	if kinds["confirmation"] < 4 || kinds["probe"] < 1 || len(w.AllTrials) != len(trials) {
		t.Errorf("trials by kind %v (%d in all), progress saw %d", kinds, len(w.AllTrials), len(trials))
	}
	if len(w.BoundBy) != 1 || w.BoundBy[0] != "p95 time_to_first_token" {
		t.Errorf("bound_by %q", w.BoundBy)
	}
	if engine.Stats().Flushes < 4 {
		t.Errorf("flushes = %d, want one before each of at least 4 trials", engine.Stats().Flushes)
	}
	if doc.AIPerf.CachePolicy != `radix enabled; flushed before every trial (/flush_cache) (picked by cache_flush = "auto": the server identified itself as sglang)` {
		t.Errorf("cache policy %q", doc.AIPerf.CachePolicy)
	}
	if len(trials) < 4 {
		t.Errorf("progress saw %d trials, want at least 4", len(trials))
	}
}

func TestRunPreflightDiagnostics(t *testing.T) {
	t.Parallel()
	noUsage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.Write([]byte(`{"data":[{"id":"sim"}]}`))
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" there\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
		default:
			http.NotFound(w, r)
		}
	})
	notStreaming := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.Write([]byte(`{"data":[{"id":"sim"}]}`))
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`))
		default:
			http.NotFound(w, r)
		}
	})
	// Issue 39: chunks with empty content while usage counts 24 completion tokens. It streams:
	// its output is what is broken.
	emptyChunks := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			w.Write([]byte(`{"data":[{"id":"sim"}]}`))
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			for range 24 {
				w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n"))
			}
			w.Write([]byte("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":24}}\n\ndata: [DONE]\n\n"))
		default:
			http.NotFound(w, r)
		}
	})
	cases := []struct {
		name    string
		handler http.Handler
		mutate  func(*Config)
		want    string
	}{
		{"wrong api key", twoSlotEngine(t, simengine.Options{APIKey: "right"}), func(c *Config) { c.APIKey = "sk-not-the-right-one-93b1" }, "api_key is missing or wrong"},
		{"missing api key", twoSlotEngine(t, simengine.Options{APIKey: "right"}), nil, "api_key is missing or wrong"},
		{"unknown model", twoSlotEngine(t, simengine.Options{}), func(c *Config) { c.Model = "llama" }, `set model to one of them`},
		{"no usage", noUsage, func(c *Config) { c.CacheFlush = "none" }, "sent no usage"},
		{"not streaming", notStreaming, func(c *Config) { c.CacheFlush = "none" }, "is the server streaming?"},
		{"empty chunks with tokens counted", emptyChunks, func(c *Config) { c.CacheFlush = "none" },
			"preflight request: degenerate output (empty output although the server counted 24 completion tokens): the server streams and counts tokens but sends no text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			cfg := testConfig(srv.URL)
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			_, err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if cfg.APIKey != "" && strings.Contains(err.Error(), cfg.APIKey) {
				t.Fatalf("error reveals the API key: %v", err)
			}
		})
	}
}

func TestRunUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	cfg := testConfig(url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Run(ctx, cfg)
	if err == nil || !errors.Is(err, engine.ErrUnreachable) {
		t.Fatalf("error = %v, want ErrUnreachable", err)
	}
}

// TestRunServerDiesThenResumes: the server starts failing mid-benchmark; the run stops with
// a diagnostic, the journal keeps every finished trial, and a second run with a healthy
// server resumes from them instead of measuring again.
func TestRunServerDiesThenResumes(t *testing.T) {
	t.Parallel()
	engine := twoSlotEngine(t, simengine.Options{})
	var generations, failAfter atomic.Int64
	// The preflight request and the first trial (at the minimum, 9 requests) succeed; the server
	// dies during the second, so the search confirms the minimum again and finds it failing.
	failAfter.Store(14)
	flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") && generations.Add(1) > failAfter.Load() {
			http.Error(w, "CUDA error: device lost", http.StatusInternalServerError)
			return
		}
		engine.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(flaky)
	defer srv.Close()

	journalPath := filepath.Join(t.TempDir(), "progress.jsonl")
	cfg := testConfig(srv.URL)
	j, err := OpenJournal(journalPath, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Progress = func(r JournalEntry) {
		if err := j.Append(r); err != nil {
			t.Error(err)
		}
	}
	_, err = Run(context.Background(), cfg)
	j.Close()
	if err == nil || !errors.Is(err, ErrServerFailing) || !strings.Contains(err.Error(), "device lost") {
		t.Fatalf("error = %v, want ErrServerFailing quoting the server", err)
	}
	if !strings.Contains(err.Error(), `workload "64 / 8"`) || !strings.Contains(err.Error(), "concurrency") {
		t.Fatalf("error %q does not say which workload and concurrency failed", err)
	}

	cfg2 := testConfig(srv.URL)
	j2, err := OpenJournal(journalPath, cfg2)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	var finished, errored int
	for _, r := range j2.History() {
		if r.Errors > 0 {
			// Kept in the journal as a record of what happened, measured again on resume.
			errored++
			if r.DecidedEarly && (r.Closeness != 0 || len(r.SLOs) != 0) {
				t.Errorf("probe stopped by failed requests journaled a value: %+v", r)
			}
			if len(r.ErrorSummary) == 0 || r.ErrorSummary[0].HTTPStatus != 500 {
				t.Errorf("errored trial without its error summary: %+v", r)
			}
			continue
		}
		finished++
	}
	if finished == 0 || errored == 0 {
		t.Fatalf("the journal kept %d finished and %d errored trials, want both", finished, errored)
	}
	failAfter.Store(1 << 40)
	cfg2.History = j2.History()
	var rerun int
	cfg2.Progress = func(JournalEntry) { rerun++ }
	doc, err := Run(context.Background(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Workloads[0].MaximumPassingConcurrency; got == nil || *got != 2 {
		t.Fatalf("resumed boundary = %v, want 2", got)
	}
	plain := testConfig(srv.URL)
	var fresh int
	plain.Progress = func(JournalEntry) { fresh++ }
	if _, err := Run(context.Background(), plain); err != nil {
		t.Fatal(err)
	}
	if rerun+finished != fresh {
		t.Errorf("resumed run measured %d trials after reusing %d; a fresh run measures %d", rerun, finished, fresh)
	}
}

// TestRunAbortKeepsTheTrial: when every measured request at the minimum concurrency fails,
// the run stops, but the trial that says so is journaled with its error summary and its
// records file is written; a resumed run measures it again.
func TestRunAbortKeepsTheTrial(t *testing.T) {
	t.Parallel()
	engine := twoSlotEngine(t, simengine.Options{})
	var generations atomic.Int64
	var healthy atomic.Bool
	flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The preflight request succeeds; every generation after it fails until healed.
		if strings.HasSuffix(r.URL.Path, "/completions") && generations.Add(1) > 1 && !healthy.Load() {
			http.Error(w, "CUDA error: device lost", http.StatusInternalServerError)
			return
		}
		engine.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(flaky)
	defer srv.Close()

	dir := t.TempDir()
	cfg := testConfig(srv.URL)
	cfg.RecordsDirectory = filepath.Join(dir, "records")
	var journal []JournalEntry
	cfg.Progress = func(e JournalEntry) { journal = append(journal, e) }
	if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrServerFailing) {
		t.Fatalf("error = %v, want ErrServerFailing", err)
	}
	if len(journal) == 0 {
		t.Fatal("the aborting trial was not journaled")
	}
	last := journal[len(journal)-1]
	if last.Concurrency != cfg.MinConcurrency || last.verdict() != "error" || last.Errors != cfg.MeasuredRequests {
		t.Fatalf("last journaled trial = concurrency %d, verdict %s, %d errors; want the aborting trial: concurrency %d, error, %d errors",
			last.Concurrency, last.verdict(), last.Errors, cfg.MinConcurrency, cfg.MeasuredRequests)
	}
	if len(last.ErrorSummary) != 1 || last.ErrorSummary[0].HTTPStatus != 500 || last.ErrorSummary[0].Count != cfg.MeasuredRequests ||
		!strings.Contains(last.ErrorSummary[0].Example, "device lost") {
		t.Errorf("error summary = %+v, want %d HTTP 500 quoting the server", last.ErrorSummary, cfg.MeasuredRequests)
	}
	if last.Metrics == nil || last.Metrics.RecordsFile == "" {
		t.Fatalf("the aborting trial names no records file: %+v", last.Metrics)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.RecordsDirectory, filepath.FromSlash(last.Metrics.RecordsFile)))
	if err != nil {
		t.Fatalf("records file of the aborting trial: %v", err)
	}
	// One line per request sent, the warmup included.
	if n := bytes.Count(raw, []byte("\n")); n != cfg.WarmupRequests+cfg.MeasuredRequests {
		t.Errorf("records file has %d lines, want %d", n, cfg.WarmupRequests+cfg.MeasuredRequests)
	}

	healthy.Store(true)
	resumed := testConfig(srv.URL)
	resumed.History = journal
	remeasured := false
	resumed.Progress = func(e JournalEntry) {
		remeasured = remeasured || e.Concurrency == last.Concurrency && e.Kind == last.Kind && e.Index == last.Index
	}
	doc, err := Run(context.Background(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	if !remeasured {
		t.Errorf("the resumed run reused the errored %s %d at concurrency %d instead of measuring it again", last.Kind, last.Index, last.Concurrency)
	}
	if got := doc.Workloads[0].MaximumPassingConcurrency; got == nil || *got != 2 {
		t.Errorf("resumed boundary = %v, want 2", got)
	}
}

func TestJournalIgnoresOtherConfigurations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p.jsonl")
	a := testConfig("http://a:1")
	j, err := OpenJournal(path, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(JournalEntry{Workload: "64 / 8", Concurrency: 3, Kind: "probe", Index: 1}); err != nil {
		t.Fatal(err)
	}
	j.Close()

	b := a
	b.SLOs = []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 200}}
	jb, err := OpenJournal(path, b)
	if err != nil {
		t.Fatal(err)
	}
	defer jb.Close()
	if n := len(jb.History()); n != 0 {
		t.Fatalf("a different SLO reused %d trials", n)
	}
	keyed := a
	keyed.APIKey = "another-key"
	if keyed.Fingerprint() != a.Fingerprint() {
		t.Fatal("the API key changed the fingerprint; it must not matter (and must not be hashed into files)")
	}
}

// A probe whose requests queue far past the threshold is decided by their waiting alone:
// it stops before any request completes, where counting first tokens would have had to
// wait for whole requests to finish and free the single slot.
func TestProbeDecidedByWaiting(t *testing.T) {
	m := simengine.DefaultModel()
	m.Slots = 1
	m.DecodeStep = 100 * time.Millisecond // one request holds the slot for 0.8 s
	m.DecodePerSeq = 0
	engine, err := simengine.NewServer(simengine.Options{Model: m, ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.WarmupRequests = 0
	s, err := connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	engine.ResetStats()
	runner := &trialRunner{s: s, w: cfg.Workloads[0]}
	out, err := runner.run(context.Background(), trialAt{Kind: search.Probe, Index: 1, Level: 4, Value: 4})
	if err != nil {
		t.Fatal(err)
	}
	if out.Pass || !out.DecidedEarly {
		t.Fatalf("probe pass=%v decidedEarly=%v, want a fail decided early", out.Pass, out.DecidedEarly)
	}
	if served := engine.Stats().RequestsServed; served != 0 {
		t.Fatalf("%d requests completed before the probe stopped; waiting should have decided it first", served)
	}
}

func TestProbeTick(t *testing.T) {
	t.Parallel()
	ttft := func(ms float64) results.SLO {
		return results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: ms}
	}
	itl := results.SLO{Metric: results.MetricITL, Percentile: 50, ThresholdMs: 20}
	rl := results.SLO{Metric: results.MetricRequestLatency, Percentile: 99, ThresholdMs: 4000}
	for _, tc := range []struct {
		name string
		slos []results.SLO
		want time.Duration
	}{
		{"a twentieth of 10 s", []results.SLO{ttft(10000)}, 500 * time.Millisecond},
		{"at least 10 ms", []results.SLO{ttft(100)}, 10 * time.Millisecond},
		{"at most 1 s", []results.SLO{ttft(60000)}, time.Second},
		{"ITL bounds nothing by waiting", []results.SLO{itl}, time.Second},
		{"the smallest waitable threshold", []results.SLO{ttft(10000), itl, rl}, 200 * time.Millisecond},
	} {
		if got := probeTick(tc.slos); got != tc.want {
			t.Errorf("%s: probeTick = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A finished run is never replayed: applying the same configuration again (a replaced
// resource, a tainted one) measures afresh, and so does a changed run key (a trigger).
func TestJournalCompletedRunIsNotReplayed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p.jsonl")
	cfg := testConfig("http://a:1")
	j, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []int{1, 2} {
		if err := j.Append(probeEntry(c)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	again, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(again.History()); n != 2 {
		t.Fatalf("an interrupted run resumes from %d trials, want 2", n)
	}
	if err := again.Complete(); err != nil {
		t.Fatal(err)
	}
	again.Close()

	after, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if n := len(after.History()); n != 0 {
		t.Fatalf("a completed run was replayed: %d trials reused", n)
	}
	retriggered := cfg
	retriggered.Triggers = map[string]string{"server": "two"}
	if retriggered.Fingerprint() == cfg.Fingerprint() {
		t.Fatal("a changed trigger keeps the fingerprint; its trials would be reused")
	}
}

// A server that sheds load above its capacity (503 past 3 concurrent requests) gives failing
// trials there, not an aborted benchmark: the probe that meets the first 503 is a fail.
func TestRunServerSheddingLoadIsAFail(t *testing.T) {
	t.Parallel()
	engine := twoSlotEngine(t, simengine.Options{})
	var inFlight atomic.Int64
	shedding := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			engine.ServeHTTP(w, r)
			return
		}
		if inFlight.Add(1) > 3 {
			inFlight.Add(-1)
			http.Error(w, "server overloaded", http.StatusServiceUnavailable)
			return
		}
		// Leave the count before the client can see the end of the stream, or its next
		// request could race the handler's return and meet a 503 at concurrency 3.
		dw := &doneWriter{ResponseWriter: w, done: func() { inFlight.Add(-1) }}
		engine.ServeHTTP(dw, r)
		dw.finish()
	})
	srv := httptest.NewServer(shedding)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.SLOs[0].ThresholdMs = 5000 // queueing alone never fails; only the 503s do
	cfg.MaxConcurrency = 8
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 3 || w.FirstFailingConcurrency == nil || *w.FirstFailingConcurrency != 4 {
		t.Fatalf("boundary = %v / %v, want 3 / 4", w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
	}
	for _, tr := range w.FailingTrials {
		if tr.Correctness.Errors == 0 {
			t.Errorf("failing trial %d at 4 has no errors; the 503s are what fail it", tr.Trial)
		}
	}
}

// doneWriter calls done once, just before the stream's [DONE] is written (or at finish).
type doneWriter struct {
	http.ResponseWriter
	done func()
	once sync.Once
}

func (d *doneWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("[DONE]")) {
		d.finish()
	}
	return d.ResponseWriter.Write(p)
}

func (d *doneWriter) Flush() { d.ResponseWriter.(http.Flusher).Flush() }

func (d *doneWriter) finish() { d.once.Do(d.done) }

// The two-slot engine's boundary is 2 / 3; bounds that leave it outside the search must say
// so in the notes instead of passing the edge of the search off as the capacity.
func TestRunSearchBoundNotes(t *testing.T) {
	t.Parallel()
	engine := twoSlotEngine(t, simengine.Options{})
	srv := httptest.NewServer(engine)
	defer srv.Close()

	for _, tc := range []struct {
		name               string
		min, max           int
		levels             []int
		wantPass, wantFail string
		wantNote           string
	}{
		{"ceiling", 1, 2, nil, "2", "none", "every concurrency tried passed, up to 2: capacity is at least 2; raise search.max_concurrency to find the boundary"},
		{"floor", 3, 5, nil, "none", "3", "even the lowest concurrency tried, 3, failed: capacity is below 3; lower search.min_concurrency to find the boundary"},
		{"grid ceiling", 0, 0, []int{1, 2}, "2", "none", "every concurrency tried passed, up to 2: capacity is at least 2; add a higher level to search.concurrency_levels to find the boundary"},
		{"grid floor", 0, 0, []int{3, 4}, "none", "3", "even the lowest concurrency tried, 3, failed: capacity is below 3; add a lower level to search.concurrency_levels to find the boundary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(srv.URL)
			cfg.MinConcurrency, cfg.MaxConcurrency = tc.min, tc.max
			if tc.levels != nil {
				cfg.MinConcurrency, cfg.MaxConcurrency = tc.levels[0], tc.levels[len(tc.levels)-1]
				cfg.ConcurrencyLevels = tc.levels
			}
			doc, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			w := doc.Workloads[0]
			show := func(c *int) string {
				if c == nil {
					return "none"
				}
				return strconv.Itoa(*c)
			}
			if show(w.MaximumPassingConcurrency) != tc.wantPass || show(w.FirstFailingConcurrency) != tc.wantFail {
				t.Fatalf("boundary = %s / %s, want %s / %s", show(w.MaximumPassingConcurrency), show(w.FirstFailingConcurrency), tc.wantPass, tc.wantFail)
			}
			var got string
			if len(w.Notes) > 0 {
				got = w.Notes[len(w.Notes)-1]
			}
			if got != tc.wantNote {
				t.Errorf("last note = %q, want %q", got, tc.wantNote)
			}
		})
	}
}
