package results

import (
	"os"
	"slices"
	"strings"
	"testing"
)

var (
	ttft95 = SLO{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 100, Comparison: StrictlyLessThan}
	itl95  = SLO{Metric: MetricITL, Percentile: 95, ThresholdMs: 10, Comparison: StrictlyLessThan}
)

// ht builds an entry of a workload's trials with its objective values stated as the
// benchmark states them (met when under the threshold).
func ht(kind string, c int, ttft, itl float64) Trial {
	return Trial{Kind: kind, Concurrency: c, Trial: 1, SLOs: []SLOResult{
		{Metric: MetricTTFT, Percentile: 95, Value: ttft, Met: ttft < 100},
		{Metric: MetricITL, Percentile: 95, Value: itl, Met: itl < 10},
	}}
}

func withErrors(t Trial, n int) Trial { t.Correctness.Errors = n; return t }

func stopped(t Trial) Trial { t.StoppedEarly = true; return t }

func TestDeriveHeadline(t *testing.T) {
	t.Parallel()
	objs := []SLO{ttft95, itl95}
	conf := func(c int, ttft, itl float64) Trial { return ht("confirmation", c, ttft, itl) }
	probe := func(c int, ttft, itl float64) Trial { return ht("probe", c, ttft, itl) }
	tests := []struct {
		name     string
		trials   []Trial
		mp, ff   *int
		bound    Bound
		boundBy  []string
		verdicts []string
	}{
		{"boundary by TTFT", []Trial{conf(1, 10, 1), conf(2, 50, 2), conf(3, 120, 3)},
			intp(2), intp(3), BoundNone, []string{"p95 time_to_first_token"}, []string{"pass", "pass", "fail"}},
		// The Markdown bug of issue 19: ITL met, TTFT failed; or the other way round.
		{"boundary by ITL alone", []Trial{conf(1, 10, 1), conf(2, 50, 12)},
			intp(1), intp(2), BoundNone, []string{"p95 inter_token_latency"}, []string{"pass", "fail"}},
		{"both objectives over two trials", []Trial{conf(1, 10, 1), conf(2, 150, 2), conf(2, 50, 12)},
			intp(1), intp(2), BoundNone, []string{"p95 time_to_first_token", "p95 inter_token_latency"}, []string{"pass", "fail", "fail"}},
		{"one failing confirmation fails the level", []Trial{conf(4, 10, 1), conf(4, 10, 1), conf(5, 10, 1), conf(5, 101, 1)},
			intp(4), intp(5), BoundNone, []string{"p95 time_to_first_token"}, []string{"pass", "pass", "pass", "fail"}},
		{"errors bound the capacity", []Trial{conf(1, 10, 1), withErrors(conf(2, 10, 1), 3)},
			intp(1), intp(2), BoundNone, []string{"errors"}, []string{"pass", "error"}},
		{"errors and a miss", []Trial{conf(1, 10, 1), withErrors(conf(2, 200, 1), 1)},
			intp(1), intp(2), BoundNone, []string{"p95 time_to_first_token", "errors"}, []string{"pass", "error"}},
		{"ceiling: every level passed", []Trial{probe(2, 10, 1), probe(4, 20, 1), conf(4, 20, 1)},
			intp(4), nil, BoundCeiling, nil, []string{"pass", "pass", "pass"}},
		{"floor: the lowest level tried, above 1, failed", []Trial{conf(8, 200, 1)},
			nil, intp(8), BoundFloor, []string{"p95 time_to_first_token"}, []string{"fail"}},
		{"zero capacity is an answer, not a bound", []Trial{conf(1, 200, 1)},
			nil, intp(1), BoundNone, []string{"p95 time_to_first_token"}, []string{"fail"}},
		// A search: probes gallop and bisect, a probe stopped early states no value.
		{"probes and confirmations", []Trial{conf(1, 10, 1), conf(2, 20, 1), probe(4, 60, 1), stopped(Trial{Kind: "probe", Concurrency: 8, Trial: 1}),
			probe(6, 150, 1), conf(5, 120, 1), conf(4, 90, 1), conf(4, 95, 1), conf(5, 130, 1)},
			intp(4), intp(5), BoundNone, []string{"p95 time_to_first_token"}, []string{"pass", "pass", "pass", "fail", "fail", "fail", "pass", "pass", "fail"}},
		// A level's confirmation trials outweigh its probe either way.
		{"confirmations outweigh the probe", []Trial{probe(3, 150, 1), conf(3, 90, 1), conf(4, 120, 1)},
			intp(3), intp(4), BoundNone, []string{"p95 time_to_first_token"}, []string{"fail", "pass", "fail"}},
		// A grid runs every level: a pass above the first failure is non-monotone, not the capacity.
		{"grid, non-monotone", []Trial{conf(2, 10, 1), conf(4, 120, 1), conf(8, 90, 1)},
			intp(2), intp(4), BoundNone, []string{"p95 time_to_first_token"}, []string{"pass", "fail", "pass"}},
		// A probe stopped early states the decision, not a value to judge.
		{"stopped probe's stated miss", []Trial{conf(1, 10, 1), stopped(Trial{Kind: "probe", Concurrency: 2, Trial: 1, SLOs: []SLOResult{
			{Metric: MetricTTFT, Percentile: 95, Value: 40, Met: false}, {Metric: MetricITL, Percentile: 95, Value: 1, Met: true}}}), conf(2, 101, 1)},
			intp(1), intp(2), BoundNone, []string{"p95 time_to_first_token"}, []string{"pass", "fail", "fail"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := DeriveHeadline(objs, Workload{Label: "w", AllTrials: tc.trials})
			if err != nil {
				t.Fatal(err)
			}
			if intOrNull(h.MaximumPassingConcurrency) != intOrNull(tc.mp) || intOrNull(h.FirstFailingConcurrency) != intOrNull(tc.ff) {
				t.Errorf("boundary %s / %s, want %s / %s", intOrNull(h.MaximumPassingConcurrency), intOrNull(h.FirstFailingConcurrency), intOrNull(tc.mp), intOrNull(tc.ff))
			}
			if h.Bound != tc.bound {
				t.Errorf("bound %q, want %q", h.Bound, tc.bound)
			}
			if !slices.Equal(h.BoundBy, tc.boundBy) {
				t.Errorf("bound_by %q, want %q", h.BoundBy, tc.boundBy)
			}
			if !slices.Equal(h.Verdicts, tc.verdicts) {
				t.Errorf("verdicts %q, want %q", h.Verdicts, tc.verdicts)
			}
		})
	}
}

// The reference document has no list of trials: its sides, judged by ttft_ms.p95 against
// 10 000 ms, give its own boundaries (DESIGN.md: 11, 7 and 5 users).
func TestDeriveHeadlineReference(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	want := [][2]int{{11, 12}, {7, 8}, {5, 6}}
	for i, w := range d.Workloads {
		h, err := DeriveHeadline(d.Objectives(), w)
		if err != nil {
			t.Fatal(err)
		}
		if *h.MaximumPassingConcurrency != want[i][0] || *h.FirstFailingConcurrency != want[i][1] || h.Bound != BoundNone ||
			!slices.Equal(h.BoundBy, []string{"p95 time_to_first_token"}) || h.Verdicts != nil {
			t.Errorf("%s: %+v", w.Label, h)
		}
	}
	// A failing side whose trials all pass contradicts the headline.
	w := d.Workloads[0]
	w.FailingTrials = slices.Clone(w.PassingTrials)
	got := CheckHeadline(d.Objectives(), 0, w)
	if len(got) != 3 || got[1].Error() != `workloads[0].first_failing_concurrency: workload "2K / 512": first_failing_concurrency states 12, but its trials give null` {
		t.Fatalf("contradictions %v", got)
	}
}

// The recorded run (testdata/recorded, a real benchmark of the simulated engine): the
// headline and every verdict derive from its trials as the benchmark wrote them.
func TestDeriveHeadlineRecorded(t *testing.T) {
	t.Parallel()
	d := readRecorded(t)
	w := d.Workloads[0]
	h, err := DeriveHeadline(d.Objectives(), w)
	if err != nil {
		t.Fatal(err)
	}
	if *h.MaximumPassingConcurrency != 4 || *h.FirstFailingConcurrency != 5 || !slices.Equal(h.BoundBy, []string{"p95 time_to_first_token"}) {
		t.Fatalf("%+v", h)
	}
	want := []string{"pass", "pass", "pass", "fail", "fail", "pass", "pass", "pass", "pass", "pass", "fail"}
	if !slices.Equal(h.Verdicts, want) {
		t.Fatalf("verdicts %q, want %q", h.Verdicts, want)
	}
}

func readRecorded(t *testing.T) *Document {
	t.Helper()
	raw, err := os.ReadFile("testdata/recorded/result.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A document whose headline, bound, bound_by, a verdict or a met flag contradicts its own
// trials is refused by Parse, naming the workload, the field, the stated and the derived
// value.
func TestParseRefusesContradictingHeadline(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/recorded/result.json")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	tests := []struct {
		name, old, new string
		want           []string
	}{
		// The case of issue 19: 4 edited to 6 while 5 still fails.
		{"forged maximum passing", `"maximum_passing_concurrency": 4`, `"maximum_passing_concurrency": 6`, []string{
			`workloads[0].maximum_passing_concurrency: workload "64 / 8": maximum_passing_concurrency states 6, but its trials give 4`}},
		{"forged first failing", `"first_failing_concurrency": 5`, `"first_failing_concurrency": 9`, []string{
			`workloads[0].first_failing_concurrency: workload "64 / 8": first_failing_concurrency states 9, but its trials give 5`}},
		{"boundary removed", `"first_failing_concurrency": 5`, `"first_failing_concurrency": null`, []string{
			`workloads[0].first_failing_concurrency: workload "64 / 8": first_failing_concurrency states null, but its trials give 5`,
			`workloads[0]: workload "64 / 8": capacity_bounded_by_search states true, but its trials give false`}},
		{"bound_by", `"p95 time_to_first_token"
      ]`, `"p95 inter_token_latency"
      ]`, []string{
			`workloads[0].bound_by: workload "64 / 8": bound_by states ["p95 inter_token_latency"], but its trials give ["p95 time_to_first_token"]`}},
		{"verdict", `"verdict": "fail"`, `"verdict": "pass"`, []string{
			`workloads[0].trials[3].verdict: workload "64 / 8": verdict states "pass", but its trials give "fail"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(doc, tc.old) {
				t.Fatalf("document lacks %s", tc.old)
			}
			_, err := Parse([]byte(strings.Replace(doc, tc.old, tc.new, 1)))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant %s", err, w)
				}
			}
		})
	}
	// A met flag against the value it states.
	d := readRecorded(t)
	tr := &d.Workloads[0].AllTrials[0]
	tr.SLOs[0].Met = false
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(out); err == nil || !strings.Contains(err.Error(), `workloads[0].trials[0].slos[0].met: workload "64 / 8": met of p95 time_to_first_token states false, but its trials give true (its value`) {
		t.Fatalf("err = %v", err)
	}
}
