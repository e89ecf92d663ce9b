package capacity

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// The two-slot engine serves a request in about 8 × 40 ms, so it holds about 6 requests/s;
// above that the queue grows and the 150 ms p95 TTFT objective or the backlog guard fails.
// The rate search finds a boundary between the ladder's rates around it and keeps every
// trial's rate and open-loop figures.
func TestRunOpenLoopFindsRate(t *testing.T) {
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 2, 16, 1
	cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalConstant}, MinRate: 3, MaxRate: 12, Tolerance: 0.25}
	cfg.RecordsDirectory = t.TempDir() // recomputed from below
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency != nil || w.FirstFailingConcurrency != nil {
		t.Errorf("a rate search reports no concurrency: %v / %v", w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
	}
	if w.MaximumPassingRequestRate == nil || w.FirstFailingRequestRate == nil {
		t.Fatalf("no rate boundary: %v / %v, notes %q", w.MaximumPassingRequestRate, w.FirstFailingRequestRate, w.Notes)
	}
	mp, ff := *w.MaximumPassingRequestRate, *w.FirstFailingRequestRate
	t.Logf("boundary %.3g .. %.3g requests/s, bound by %v", mp, ff, w.BoundBy)
	if mp < 3.7 || ff > 9.2 || ff/mp > 1.26 {
		t.Errorf("boundary %.3g .. %.3g requests/s, want neighbours around 6", mp, ff)
	}
	if !strings.HasPrefix(doc.AIPerf.ArrivalPattern, "open-loop constant") {
		t.Errorf("arrival pattern %q", doc.AIPerf.ArrivalPattern)
	}
	for _, tr := range append(append([]results.Trial{}, w.PassingTrials...), w.FailingTrials...) {
		if tr.OpenLoop == nil || tr.RequestRate == 0 || tr.Concurrency != 0 {
			t.Fatalf("trial without its rate: %+v", tr)
		}
		// A rate trial is timed step by step like a closed-loop one.
		if tm := tr.Timing; tm == nil || tm.TotalS <= 0 || tm.MeasuredS <= 0 || tm.TotalS < tm.WarmupS+tm.MeasuredS {
			t.Errorf("rate trial timing %+v", tm)
		}
	}
	if tr := w.PassingTrials[0]; !tr.OpenLoop.KeptUp || tr.RequestRate != mp || tr.OpenLoop.OfferedRate < 0.99*mp || tr.OpenLoop.OfferedRate > 1.01*mp {
		t.Errorf("passing trial %+v", tr.OpenLoop)
	}
	if len(journal) == 0 || journal[0].Rate == 0 || journal[0].Concurrency != 0 {
		t.Errorf("journal entries carry the rate: %+v", journal)
	}
	// The document round-trips with its rate fields.
	back := roundTrip(t, doc)
	if bw := back.Workloads[0]; bw.MaximumPassingRequestRate == nil || *bw.MaximumPassingRequestRate != mp || bw.PassingTrials[0].OpenLoop == nil ||
		bw.PassingTrials[0].OpenLoop.OfferedRate != w.PassingTrials[0].OpenLoop.OfferedRate {
		t.Errorf("round trip lost the rate fields")
	}
	raw, _ := results.Marshal(doc)
	if again, _ := results.Marshal(back); string(again) != string(raw) {
		t.Errorf("the document does not round-trip byte for byte")
	}

	// Every rendering takes a rate document; the Markdown report states the rate.
	if md := results.Markdown(doc); !strings.Contains(md, " requests/s") {
		t.Errorf("the Markdown report does not state the rate %g requests/s:\n%s", mp, md)
	}
	for _, r := range []string{results.CSV(doc), results.OpenMetrics(doc), results.SVG(doc)} {
		if r == "" {
			t.Error("an empty rendering")
		}
	}

	// Every trial recomputes from its records file, schedule and guards included.
	recomputed, err := records.Recompute(doc, cfg.RecordsDirectory)
	if err != nil {
		t.Fatal(err)
	}
	if len(recomputed) != len(w.AllTrials) {
		t.Fatalf("%d trials recomputed of %d", len(recomputed), len(w.AllTrials))
	}
	for _, r := range recomputed {
		if len(r.Differences) > 0 || r.Recomputed.OpenLoop == nil {
			t.Errorf("%s: recomputed open_loop %+v, differences %q", r.File, r.Recomputed.OpenLoop, r.Differences)
		}
	}

	// Resumed from its journal, the search runs nothing again and finds the same boundary.
	cfg.History, cfg.Progress = journal, func(e JournalEntry) { t.Errorf("trial run again: %+v", e) }
	doc2, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := doc2.Workloads[0].MaximumPassingRequestRate; r == nil || *r != mp {
		t.Errorf("resumed boundary %v, want %g", r, mp)
	}
}

// A rate search's bound is told in rates and the rate search's settings, never by
// dereferencing the concurrency boundary it does not have.
func TestBoundNoteOfARateSearch(t *testing.T) {
	t.Parallel()
	four, two := 4.0, 2.0
	for _, tc := range []struct {
		w    results.Workload
		want string
	}{
		{results.Workload{MaximumPassingRequestRate: &four}, "every rate tried passed, up to 4 requests/s: capacity is at least that; raise search.rate.max"},
		{results.Workload{FirstFailingRequestRate: &two}, "even the lowest rate tried, 2 requests/s, failed: capacity is below it; lower search.rate.min"},
		{results.Workload{MaximumPassingRequestRate: &two, FirstFailingRequestRate: &four}, ""},
	} {
		if got := BoundNote(tc.w, false); !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("BoundNote = %q, want %q", got, tc.want)
		}
	}
}

func TestOpenLoopValidation(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://127.0.0.1:1")
	cfg.StallTimeout, cfg.RequestTimeout = 1, 1
	cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalGamma}, MinRate: 5, MaxRate: 1}
	cfg.ConcurrencyLevels = []int{1, 2}
	var got []string
	for _, p := range cfg.Validate() {
		got = append(got, p.Path.String())
	}
	for _, want := range []string{"arrival.burstiness", "search.rate", "search.concurrency_levels"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("problems at %v, want one at %s", got, want)
		}
	}
}

// TestOpenLoopExplicitValues: a value the user wrote is honoured or refused at its path,
// never replaced by a default or ignored.
func TestOpenLoopExplicitValues(t *testing.T) {
	t.Parallel()
	rate := func(f func(o *OpenLoop)) *OpenLoop {
		o := &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 1, MaxRate: 4, Tolerance: 0.25}
		f(o)
		return o
	}
	speedup := func(f func(o *OpenLoop)) *OpenLoop {
		o := &OpenLoop{Speedup: true, MinRate: 0.5, MaxRate: 2, Tolerance: 0.25}
		f(o)
		return o
	}
	tests := []struct {
		name       string
		open       *OpenLoop
		path, want string // want "" : no problem at path
	}{
		{"tolerance 0 is refused, not run at the default", rate(func(o *OpenLoop) { o.Tolerance = 0 }), "search.rate.tolerance",
			"search.rate.tolerance must be in (0, 1), the relative step between neighbouring rates tried, got 0; remove it for the default 0.05"},
		{"tolerance 1", rate(func(o *OpenLoop) { o.Tolerance = 1 }), "search.rate.tolerance", "must be in (0, 1)"},
		{"a valid tolerance", rate(func(o *OpenLoop) {}), "search.rate.tolerance", ""},
		{"burstiness with poisson", rate(func(o *OpenLoop) { o.Arrival.Burstiness = 2 }), "arrival.burstiness",
			`arrival.burstiness (2) is the shape of gamma gaps and would be ignored with pattern = "poisson": set pattern = "gamma" to use it, or remove burstiness.`},
		{"burstiness with constant", rate(func(o *OpenLoop) { o.Arrival = load.Arrival{Pattern: load.ArrivalConstant, Burstiness: 0.5} }), "arrival.burstiness", `would be ignored with pattern = "constant"`},
		{"burstiness with gamma", rate(func(o *OpenLoop) { o.Arrival = load.Arrival{Pattern: load.ArrivalGamma, Burstiness: 0.5} }), "arrival.burstiness", ""},
		{"rate.min 1e-300", rate(func(o *OpenLoop) { o.MinRate = 1e-300 }), "search.rate.min",
			"search.rate.min must be at least 0.001 requests/s (one request every 1000 s), got 1e-300"},
		{"rate.min negative", rate(func(o *OpenLoop) { o.MinRate = -2 }), "search.rate.min", "got -2"},
		{"rate.min at the bound", rate(func(o *OpenLoop) { o.MinRate = 0.001 }), "search.rate.min", ""},
		{"speedup.min 1e-300", speedup(func(o *OpenLoop) { o.MinRate = 1e-300 }), "search.speedup.min", "must be a factor of at least 0.001"},
		{"speedup tolerance 0", speedup(func(o *OpenLoop) { o.Tolerance = 0 }), "search.speedup.tolerance", "must be in (0, 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig("http://127.0.0.1:1")
			cfg.StallTimeout, cfg.RequestTimeout = 1, 1
			cfg.OpenLoop = tc.open
			var at []string
			for _, p := range cfg.Validate() {
				if p.Path.String() != tc.path {
					continue
				}
				at = append(at, p.Detail)
				if tc.want == "" {
					t.Errorf("problem at %s: %s", tc.path, p.Detail)
				} else if !strings.Contains(p.Detail, tc.want) {
					t.Errorf("problem at %s says %q, want %q", tc.path, p.Detail, tc.want)
				}
			}
			if tc.want != "" && len(at) == 0 {
				t.Errorf("no problem at %s", tc.path)
			}
		})
	}
}

// TestRateSearchNeverBelowATrialThatKeptUp is the run: search.rate from 8 to 16
// requests/s with 8 measured requests and no warmups against a server that serves each
// request in about 80 ms (16 slots). Every trial keeps up, but the backlog guard can get at
// most 7 samples; it used to fail every trial for the eighth and report "even the lowest rate
// tried, 8 requests/s, failed". The guard does not judge such a trial and says so in its
// notes; the search reports a capacity of at least 8 requests/s.
func TestRateSearchNeverBelowATrialThatKeptUp(t *testing.T) {
	t.Parallel()
	m := simengine.DefaultModel()
	m.Slots, m.DecodeStep, m.DecodePerSeq, m.TrialNoise, m.RequestNoise = 16, 10*time.Millisecond, 0, 0, 0
	eng, err := simengine.NewServer(simengine.Options{Model: m, ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.SLOs[0].ThresholdMs = 1000
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 0, 8, 1
	cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalConstant}, MinRate: 8, MaxRate: 16, Tolerance: 0.25}
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := doc.Workloads[0]
	if w.MaximumPassingRequestRate == nil || *w.MaximumPassingRequestRate < 8 {
		t.Fatalf("maximum passing rate %v, notes %q; want at least 8 requests/s", w.MaximumPassingRequestRate, w.Notes)
	}
	for _, n := range w.Notes {
		if strings.Contains(n, "even the lowest rate") {
			t.Errorf("note %q", n)
		}
	}
	unjudged := 0
	for _, tr := range w.AllTrials {
		for _, n := range tr.Notes {
			if strings.Contains(n, "the backlog guard did not judge this trial") && strings.Contains(n, "judges on 8") {
				unjudged++
			}
		}
	}
	if unjudged == 0 {
		t.Errorf("no trial says the backlog guard did not judge it: %+v", w.AllTrials)
	}
	// The apply says so too (issue 39), at the setting that fixes it, naming the trials.
	warned := false
	for _, p := range cfg.ResultWarnings(doc) {
		if p.Path.String() == "trial.measured_requests" && strings.Contains(p.Summary, fmt.Sprintf("The backlog guard could not judge %d trial", unjudged)) &&
			strings.Contains(p.Detail, "requests/s had fewer than 8 in-flight samples after the first response") && strings.Contains(p.Detail, "raise trial.measured_requests") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning at apply for the %d unjudged trials: %+v", unjudged, cfg.ResultWarnings(doc))
	}
}
