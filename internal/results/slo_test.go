package results

import (
	"strings"
	"testing"
)

func TestSLOJudgement(t *testing.T) {
	t.Parallel()
	goodput := 87.5
	trial := Trial{
		TTFTMs:                     Stats{P50: 100, P95: 10000, P99: 12000},
		ITLMs:                      Stats{P50: 30, P95: 45, P99: 50},
		RequestLatencyMs:           Stats{P50: 2000, P95: 3000, P99: 4000},
		PerUserOutputThroughputTPS: Stats{Avg: 30, P50: 33, P95: 22},
		SLOs:                       []SLOResult{{Metric: "time_to_second_token", Percentile: 90, Value: 41, Met: true}},
		GoodputPercent:             &goodput,
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
		{"p95 per-user throughput above its floor", SLO{Metric: "output_token_throughput_per_user", Percentile: 95, ThresholdMs: 20, Comparison: "greater_than"}, 22, "", "pass"},
		{"p95 per-user throughput at a strict floor", SLO{Metric: "output_token_throughput_per_user", Percentile: 95, ThresholdMs: 22, Comparison: "greater_than"}, 22, "", "fail"},
		{"goodput at least 85 %", SLO{Metric: "goodput", ThresholdMs: 85, Comparison: "greater_than_or_equal"}, 87.5, "", "pass"},
		{"goodput over 90 %", SLO{Metric: "goodput", ThresholdMs: 90, Comparison: "greater_than"}, 87.5, "", "fail"},
		{"recorded objective value wins", SLO{Metric: "time_to_second_token", Percentile: 90, ThresholdMs: 40, Comparison: "strictly_less_than"}, 41, "", "fail"},
		{"unknown metric", SLO{Metric: "queue_time", Percentile: 95}, 0, `slo metric "queue_time"`, "n/a"},
		{"unrecorded percentile", SLO{Metric: "time_to_first_token", Percentile: 97.5}, 0, "slo percentile 97.5 of time_to_first_token is not recorded", "n/a"},
		{"unrecorded metric", SLO{Metric: "time_to_second_token", Percentile: 50}, 0, "records no time_to_second_token", "n/a"},
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
			if got := Verdict([]SLO{tc.slo}, trial); got != tc.verdict {
				t.Errorf("Verdict() = %q, want %q", got, tc.verdict)
			}
		})
	}
	both := []SLO{
		{Metric: "time_to_first_token", Percentile: 50, ThresholdMs: 200, Comparison: "strictly_less_than"},
		{Metric: "inter_token_latency", Percentile: 95, ThresholdMs: 40, Comparison: "strictly_less_than"},
	}
	if got := Verdict(both, trial); got != "fail" {
		t.Errorf("every objective must hold: p95 ITL 45 ≥ 40, got %q", got)
	}
	withErrors := trial
	withErrors.Correctness.Errors = 1
	if got := Verdict(both[:1], withErrors); got != "error" {
		t.Errorf("a trial with errors is an error: got %q", got)
	}
}

// The reference records p50/p95/p99 only: p90 of its trials is unknown, not zero, while a
// trial written by this provider has every statistic.
func TestStatsRecordedKeys(t *testing.T) {
	t.Parallel()
	ref := parseReference(t).Workloads[0].PassingTrials[0]
	p90 := SLO{Metric: MetricTTFT, Percentile: 90}
	if _, err := p90.Value(ref); err == nil {
		t.Fatal("p90 of a reference trial must be unknown")
	}
	if v, err := (SLO{Metric: MetricTTFT, Percentile: 95}).Value(ref); err != nil || v != 7095.03604365 {
		t.Fatalf("p95 = %v, %v", v, err)
	}
	if ref.TTFTMs.Has("avg") || !ref.PerUserOutputThroughputTPS.Has("avg") || ref.PerUserOutputThroughputTPS.Has("p99") {
		t.Fatalf("recorded keys: ttft %+v per-user %+v", ref.TTFTMs, ref.PerUserOutputThroughputTPS)
	}
	full := Trial{TTFTMs: Stats{P90: 12}}
	if v, err := p90.Value(full); err != nil || v != 12 {
		t.Fatalf("p90 of a full trial = %v, %v", v, err)
	}
	raw, err := full.TTFTMs.MarshalJSON()
	want := `{"avg":0,"min":0,"max":0,"std":0,"p1":0,"p5":0,"p10":0,"p25":0,"p50":0,"p75":0,"p90":12,"p95":0,"p99":0}`
	if err != nil || string(raw) != want {
		t.Fatalf("MarshalJSON = %s, %v; want %s", raw, err, want)
	}
}

func TestValidateSLOs(t *testing.T) {
	t.Parallel()
	ttft := SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "strictly_less_than"}
	cases := []struct {
		name string
		slos []SLO
		want []string // substrings of the error; none: valid
	}{
		{"one TTFT objective", []SLO{ttft}, nil},
		{"goodput without percentile", []SLO{ttft, {Metric: "goodput", ThresholdMs: 90, Comparison: "greater_than_or_equal"}}, nil},
		{"none", nil, []string{"slos: at least one objective"}},
		{"unknown metric", []SLO{{Metric: "ttft", Percentile: 95, ThresholdMs: 1, Comparison: "strictly_less_than"}}, []string{`slos[0].metric must be one of time_to_first_token,`}},
		{"percentile out of range", []SLO{{Metric: "request_latency", Percentile: 0, ThresholdMs: 1, Comparison: "strictly_less_than"}}, []string{"slos[0].percentile must be in (0, 100], got 0"}},
		{"goodput with a percentile", []SLO{{Metric: "goodput", Percentile: 95, ThresholdMs: 90, Comparison: "greater_than"}}, []string{"slos[0].percentile must be left out: goodput is one number per trial"}},
		{"goodput over 100 %", []SLO{{Metric: "goodput", ThresholdMs: 101, Comparison: "greater_than"}}, []string{"slos[0].threshold_ms must be at most 100, got 101: goodput is a percentage"}},
		{"less-than on a higher-is-better metric", []SLO{{Metric: "output_token_throughput_per_user", Percentile: 50, ThresholdMs: 20, Comparison: "strictly_less_than"}},
			[]string{`slos[0].comparison "strictly_less_than" does not fit output_token_throughput_per_user, where higher is better; use greater_than or greater_than_or_equal`}},
		{"greater-than on a latency", []SLO{{Metric: "inter_token_latency", Percentile: 50, ThresholdMs: 20, Comparison: "greater_than"}}, []string{"where lower is better"}},
		{"repeated objective", []SLO{ttft, ttft}, []string{"slos[1] repeats the metric and percentile of slos[0]"}},
		{"every problem reported", []SLO{{Metric: "time_to_first_token", Percentile: 101, ThresholdMs: -1, Comparison: "strictly_less_than"}}, []string{"slos[0].percentile", "slos[0].threshold_ms"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateSLOs(tc.slos)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSLOWording(t *testing.T) {
	t.Parallel()
	cases := []struct {
		slo            SLO
		str, sentence  string
		key            string
		closenessOf100 float64
	}{
		{SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "strictly_less_than"}, "p95 TTFT < 10000 ms", "p95 TTFT under 10000 ms", "p95 time_to_first_token", 0.01},
		{SLO{Metric: "output_token_throughput_per_user", Percentile: 50, ThresholdMs: 25, Comparison: "greater_than_or_equal"}, "p50 Per-user output throughput ≥ 25 tokens/s", "p50 Per-user output throughput at least 25 tokens/s", "p50 output_token_throughput_per_user", 0.25},
		{SLO{Metric: "goodput", ThresholdMs: 90, Comparison: "greater_than"}, "Goodput > 90 %", "Goodput over 90 %", "goodput", 0.9},
	}
	for _, tc := range cases {
		if got := tc.slo.String(); got != tc.str {
			t.Errorf("String() = %q, want %q", got, tc.str)
		}
		if got := tc.slo.Sentence(); got != tc.sentence {
			t.Errorf("Sentence() = %q, want %q", got, tc.sentence)
		}
		if got := tc.slo.Key(); got != tc.key {
			t.Errorf("Key() = %q, want %q", got, tc.key)
		}
		if got := tc.slo.Closeness(100); got != tc.closenessOf100 {
			t.Errorf("Closeness(100) = %v, want %v", got, tc.closenessOf100)
		}
	}
	if got := (SLO{}).WithDefaults(); got.Metric != "time_to_first_token" || got.Comparison != "strictly_less_than" {
		t.Errorf("defaults: %+v", got)
	}
	if got := (SLO{Metric: "goodput"}).WithDefaults(); got.Comparison != "greater_than" {
		t.Errorf("goodput default comparison: %+v", got)
	}
}

func TestWorkloadTrialsConcurrency(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
		{"a\rb", `a\nb`}, {"a\r\nb", `a\nb`}, {"a\r\r\nb", `a\n\nb`}, {"a\tb", "a b"},
		{"a\x00b\x1bc\x7fd\u0085e", "a\ufffdb\ufffdc\ufffdd\ufffde"},
		{"a\xffb", "a\ufffdb"}, {"8K \u00b7 1K \u2014 p95", "8K \u00b7 1K \u2014 p95"},
	}
	for _, tc := range labels {
		if got := escapeLabel(tc.in); got != tc.want {
			t.Errorf("escapeLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A trial whose percentiles meet the SLO but that had failed requests was never passed by
// the benchmark, and the document calls it "error"; the renderings must say the same.
func TestSLOVerdictFailsTrialWithErrors(t *testing.T) {
	t.Parallel()
	slo := SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 10000, Comparison: "strictly_less_than"}
	trial := Trial{TTFTMs: Stats{P95: 500}}
	if got := Verdict([]SLO{slo}, trial); got != "pass" {
		t.Fatalf("clean trial: Verdict() = %q, want pass", got)
	}
	trial.Correctness.Errors = 2
	if got := Verdict([]SLO{slo}, trial); got != "error" {
		t.Fatalf("trial with 2 errors: Verdict() = %q, want error", got)
	}
}
