package results

import (
	"strings"
	"testing"
)

func TestSLOJudgement(t *testing.T) {
	trial := Trial{
		TTFTMs:           Percentiles{P50: 100, P95: 10000, P99: 12000},
		ITLMs:            Percentiles{P50: 30, P95: 45, P99: 50},
		RequestLatencyMs: Percentiles{P50: 2000, P95: 3000, P99: 4000},
	}
	cases := []struct {
		name      string
		slo       SLO
		wantValue float64
		wantErr   string
		verdict   string
	}{
		{"p95 TTFT at the threshold fails a strict SLO", SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "strictly_less_than"}, 10000, "", "fail"},
		{"p95 TTFT at the threshold passes an inclusive SLO", SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "less_than_or_equal"}, 10000, "", "pass"},
		{"p50 ITL", SLO{Metric: "inter_token_latency", Percentile: 50, ThresholdMs: 31, Comparison: "strictly_less_than"}, 30, "", "pass"},
		{"p99 request latency", SLO{Metric: "request_latency", Percentile: 99, ThresholdMs: 3999, Comparison: "less_than_or_equal"}, 4000, "", "fail"},
		{"unknown metric", SLO{Metric: "queue_time", Percentile: 95}, 0, `slo.metric "queue_time"`, "n/a"},
		{"unrecorded percentile", SLO{Metric: "time_to_first_token", Percentile: 90}, 0, "slo.percentile 90 is not recorded", "n/a"},
		{"unknown comparison", SLO{Metric: "time_to_first_token", Percentile: 50, Comparison: "about"}, 100, "", "n/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.slo.Value(trial)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Value() error = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil || v != tc.wantValue {
				t.Fatalf("Value() = %v, %v, want %v", v, err, tc.wantValue)
			}
			if got := tc.slo.Verdict(trial); got != tc.verdict {
				t.Errorf("Verdict() = %q, want %q", got, tc.verdict)
			}
		})
	}
}

func TestWorkloadTrialsConcurrency(t *testing.T) {
	w := Workload{
		MaximumPassingConcurrency: intp(11),
		FirstFailingConcurrency:   nil,
		PassingTrials:             []Trial{{Trial: 1}, {Trial: 2, Concurrency: 9}},
		FailingTrials:             []Trial{{Trial: 1}},
	}
	got := w.Trials()
	want := []struct {
		side Side
		c    int
	}{
		{SidePassing, 11}, // from the boundary
		{SidePassing, 9},  // the trial's own field wins
		{SideFailing, 0},  // no boundary, no field: unknown
	}
	if len(got) != len(want) {
		t.Fatalf("got %d trials, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Side != w.side || got[i].Concurrency != w.c {
			t.Errorf("trial %d = %s at %d, want %s at %d", i, got[i].Side, got[i].Concurrency, w.side, w.c)
		}
	}
}

func TestChartHelpers(t *testing.T) {
	steps := []struct {
		raw, want float64
	}{
		{0.3, 0.5}, {1, 1}, {1.1, 2}, {2.2, 5}, {3.3, 5}, {7, 10}, {13, 20}, {0, 1}, {-4, 1},
	}
	for _, s := range steps {
		if got := niceStep(s.raw); got != s.want {
			t.Errorf("niceStep(%v) = %v, want %v", s.raw, got, s.want)
		}
	}
	ticks := []struct {
		v, step float64
		want    string
	}{
		{4, 2, "4"}, {4.5, 0.5, "4.5"}, {0.25, 0.05, "0.25"}, {10, 5, "10"},
	}
	for _, tc := range ticks {
		if got := tick(tc.v, tc.step); got != tc.want {
			t.Errorf("tick(%v, %v) = %q, want %q", tc.v, tc.step, got, tc.want)
		}
	}
	ids := []struct {
		i     int
		label string
		want  string
	}{
		{0, "2K / 512", "workload-1-2K-512"}, {2, "16K / 2K", "workload-3-16K-2K"}, {4, "", "workload-5"}, {1, "ä b", "workload-2-b"},
	}
	for _, tc := range ids {
		if got := svgID(tc.i, tc.label); got != tc.want {
			t.Errorf("svgID(%d, %q) = %q, want %q", tc.i, tc.label, got, tc.want)
		}
	}
	floats := []struct {
		v    float64
		want string
	}{
		{2099, "2099"}, {11215.331829699991, "11215.331829699991"}, {1e21, "1000000000000000000000"}, {0.5, "0.5"},
	}
	for _, tc := range floats {
		if got := formatFloat(tc.v); got != tc.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	labels := []struct{ in, want string }{
		{`a"b`, `a\"b`}, {`a\b`, `a\\b`}, {"a\nb", `a\nb`},
	}
	for _, tc := range labels {
		if got := escapeLabel(tc.in); got != tc.want {
			t.Errorf("escapeLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A trial whose percentiles meet the SLO but that had failed requests was failed by the
// benchmark; the renderings must say so too.
func TestSLOVerdictFailsTrialWithErrors(t *testing.T) {
	slo := SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "strictly_less_than"}
	trial := Trial{TTFTMs: Percentiles{P95: 500}}
	if got := slo.Verdict(trial); got != "pass" {
		t.Fatalf("clean trial: Verdict() = %q, want pass", got)
	}
	trial.Correctness.Errors = 2
	if got := slo.Verdict(trial); got != "fail" {
		t.Fatalf("trial with 2 errors: Verdict() = %q, want fail", got)
	}
}
