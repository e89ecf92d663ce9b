package capacity

import (
	"context"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// A rate trial's progress line names the rate it was scheduled at and the rate it really
// offered, the guard that failed it beside objectives that were met, and what is left.
func TestRateProgressLine(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Workloads:          []Workload{{Label: "chat"}},
		SLOs:               []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 1500, Comparison: results.StrictlyLessThan}},
		ConfirmationTrials: 2,
		OpenLoop:           &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 1, MaxRate: 8, Tolerance: 0.15},
	}
	var lines []string
	w := newRunTracker(cfg, cfg.SLOs, func(l string) { lines = append(lines, l) })
	w.axis = pickAxis(cfg)
	entry := func(rate, offered float64, pass bool, missed ...string) JournalEntry {
		ol := &results.OpenLoopTrial{Arrival: "poisson", OfferedRate: offered, CompletionRate: offered, KeptUp: len(missed) == 0, Missed: missed,
			BacklogGrowth: 3.1, BacklogAllowance: 2}
		if len(missed) > 0 {
			ol.CompletionRate = 13.4
		}
		return JournalEntry{Workload: "chat", Rate: rate, Kind: "probe", Pass: pass, Verdict: map[bool]string{true: "pass", false: "fail"}[pass],
			SLOs:    []results.SLOResult{{Metric: "time_to_first_token", Percentile: 95, Value: 1342.9, Met: true}},
			Metrics: &results.Trial{RequestRate: rate, OpenLoop: ol}}
	}
	ladder := cfg.OpenLoop.Ladder()
	w.finished("chat", outcome{Request: search.Request{Kind: search.Probe}, Pass: true}, entry(ladder.Rate(9), 2.316, true))
	w.finished("chat", outcome{Request: search.Request{Kind: search.Probe}, Pass: false}, entry(ladder.Rate(14), 15.4, false, "completion_rate", "backlog"))
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	for i, want := range [][]string{
		{`"chat" rate 3.06/s offered 2.32/s probe  PASS`, "p95 TTFT 1342.9 ms (limit < 1500 ms) met", "trials left"},
		{`"chat" rate 6.15/s offered 15.4/s probe  FAIL`, "p95 TTFT 1342.9 ms (limit < 1500 ms) met  did not keep up: completions 13.4/s < 15.4/s offered, backlog grew by 3.1 requests (allowed 2)", "trials left"},
	} {
		for _, s := range want {
			if !strings.Contains(lines[i], s) {
				t.Errorf("line %d lacks %q:\n%s", i+1, s, lines[i])
			}
		}
	}
	// A replay's line says its speed-up and the rate it stands for.
	if got := rateAt(JournalEntry{Rate: 6.103515625, Speedup: 1.220703125, Metrics: &results.Trial{OpenLoop: &results.OpenLoopTrial{OfferedRate: 6.05}}}); got != "speedup 1.22× (6.1/s) offered 6.05/s" {
		t.Errorf("replay at %q", got)
	}
}

// The estimate of a rate search's trials left brackets what the search then really runs,
// after every trial of searches ending at each rung of the ladder.
func TestRemainingRateTrialsBracketsTheSearch(t *testing.T) {
	t.Parallel()
	cfg := Config{ConfirmationTrials: 2, OpenLoop: &OpenLoop{MinRate: 3, MaxRate: 12, Tolerance: 0.25}}
	l := cfg.OpenLoop.Ladder()
	for boundary := 0; boundary <= l.Rungs(); boundary++ {
		var all []search.RateOutcome
		_, err := search.RunRate(context.Background(), search.RateConfig{Ladder: l, ConfirmationTrials: cfg.ConfirmationTrials, Threshold: 1, GuardBand: guardBand,
			Progress: func(o search.RateOutcome) { all = append(all, o) }},
			func(_ context.Context, q search.RateRequest) (search.Outcome, error) {
				rung, _ := l.Rung(q.Rate)
				v := 2.0
				if rung <= boundary {
					v = 0.5
				}
				return search.Outcome{Pass: rung <= boundary, Value: v}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k <= len(all); k++ {
			lo, hi := remainingRateTrials(cfg, all[:k])
			if left := len(all) - k; left < lo || left > hi {
				t.Errorf("boundary at rung %d, after %d of %d trials: estimate %d–%d, really %d left", boundary, k, len(all), lo, hi, left)
			}
		}
	}
}

// BenchmarkRemainingRateTrials is what the estimate costs a progress line of a rate search:
// a 100-rung ladder (1 to 100 requests/s at 5 %), three confirmation trials, after a probe.
func BenchmarkRemainingRateTrials(b *testing.B) {
	cfg := Config{ConfirmationTrials: 3, OpenLoop: &OpenLoop{MinRate: 1, MaxRate: 100, Tolerance: 0.05}}
	done := []search.RateOutcome{{OutcomeOf: search.Outcome{Request: search.Request{Kind: search.Probe}, Pass: true, Value: 0.5}, Rate: cfg.OpenLoop.Ladder().Rate(40)}}
	for b.Loop() {
		remainingRateTrials(cfg, done)
	}
}

// A probe stopped before any request finished knows no value: it says so, where it used to
// read "p95 TTFT ≥ 0 ms". One stopped with finished requests keeps its lower bound.
func TestStoppedProbeObjectiveText(t *testing.T) {
	t.Parallel()
	slos := []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 1500, Comparison: results.StrictlyLessThan}}
	got := objectiveText(slos, results.SLOResult{Metric: "time_to_first_token", Percentile: 95, Value: 0}, true)
	if want := "p95 TTFT unknown: stopped before a request finished (limit < 1500 ms) missed"; got != want {
		t.Errorf("no request finished: %q, want %q", got, want)
	}
	if got := objectiveText(slos, results.SLOResult{Metric: "time_to_first_token", Percentile: 95, Value: 1612.34}, true); got != "p95 TTFT ≥ 1612.3 ms (limit < 1500 ms) missed" {
		t.Errorf("with a bound: %q", got)
	}
}
