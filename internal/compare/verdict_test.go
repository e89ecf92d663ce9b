package compare

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// levelsDoc is a concurrency run with capacity c (first failing c+1) and the given p95 TTFT
// values per level, three trials each spread ±s around each value.
func levelsDoc(capacity int, firstFailing *int, s float64, values map[int]float64) *results.Document {
	d := doc(capacity)
	d.Workloads[0].FirstFailingConcurrency = firstFailing
	for c := 1; c <= 64; c++ {
		if v, ok := values[c]; ok {
			d.Workloads[0].AllTrials = append(d.Workloads[0].AllTrials, trials(c, v, v*(1+s), v*(1-s))...)
		}
	}
	return d
}

// Unchanged is a finding: the interval inside ±10 %. Where it is not, the verdict is
// inconclusive and says what would decide it (issue 32: "+32.6 % (noise ± 24.3 %)" was called
// unchanged).
func TestCompareUnchangedIsAFinding(t *testing.T) {
	t.Parallel()
	base := levelsDoc(4, ptr(5), 0.02, map[int]float64{3: 800, 4: 900, 5: 1100})
	for _, tc := range []struct {
		name    string
		cur     *results.Document
		verdict string
		notes   []string // in the notes
	}{
		// ±2 % trials, 1 % apart: the interval lies well inside ±10 %.
		{"same within the band", levelsDoc(4, ptr(5), 0.02, map[int]float64{3: 808, 4: 909, 5: 1111}), Unchanged, nil},
		// +8 % with ±25 % trials: neither a regression nor shown small.
		{"noisy", levelsDoc(4, ptr(5), 0.25, map[int]float64{3: 864, 4: 972, 5: 1188}), Inconclusive,
			[]string{"to decide, about", "(confirmation_trials = ", "more measured_requests"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compare(base, tc.cur, Options{})
			w := r.Workloads[0]
			if w.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %s", w.Verdict, tc.verdict, w.Reason)
			}
			ob := w.Objectives[0]
			if tc.verdict == Unchanged && (ob.Low <= -DefaultBand || ob.High >= DefaultBand || !strings.HasPrefix(w.Reason, "within ± 10 %")) {
				t.Errorf("interval %+.3f to %+.3f, reason %q", ob.Low, ob.High, w.Reason)
			}
			notes := strings.Join(w.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) || !strings.Contains(r.Summary(), n) {
					t.Errorf("notes and summary do not say %q:\n%s\n%s", n, notes, r.Summary())
				}
			}
		})
	}
}

// A capacity that moved by more than one level is never unchanged: 4 → 1 where the current run
// failed at 2, which the baseline passed in every trial, is a regression even when the values
// at the common levels (+32.6 % at a noise of ±24 %) cannot show it alone; 4 → 2 without such
// a contradiction (the current search stopped at 2) is inconclusive.
func TestCompareCapacityMovedMoreThanOneLevel(t *testing.T) {
	t.Parallel()
	noisy := levelsDoc(4, ptr(5), 0.3, map[int]float64{1: 200, 2: 300, 3: 600, 4: 900, 5: 1300})
	quiet := levelsDoc(4, ptr(5), 0.02, map[int]float64{1: 200, 2: 300, 3: 600, 4: 900, 5: 1300})
	for _, tc := range []struct {
		name    string
		base    *results.Document
		cur     *results.Document
		verdict string
		reason  string
	}{
		{"4 → 1, failed where the baseline passed", noisy, levelsDoc(1, ptr(2), 0.3, map[int]float64{1: 265.2, 2: 397.8}), Regressed,
			"capacity 4 → 1, 3 levels down: the current run failed at concurrency 2, which the baseline passed"},
		{"4 → 2, nothing failed", quiet, levelsDoc(2, nil, 0.02, map[int]float64{1: 200, 2: 300}), Inconclusive,
			"capacity 4 → 2, 2 levels down, which the values at the common levels do not show"},
		{"4 → 3, one level", quiet, levelsDoc(3, ptr(4), 0.02, map[int]float64{1: 202, 2: 303, 3: 606, 4: 909}), Unchanged, "capacity 4 → 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Compare(tc.base, tc.cur, Options{}).Workloads[0]
			if w.Verdict != tc.verdict || !strings.Contains(w.Reason, tc.reason) {
				t.Errorf("verdict %s: %s\nwant %s: %s", w.Verdict, w.Reason, tc.verdict, tc.reason)
			}
		})
	}
}

// A run that failed a level but passed higher ones went up and down: its boundary is a burst
// of noise, not a contradiction (the wall-clock rates showed the same server "regressed" 6 → 3
// this way), so a drop of three levels is inconclusive, not regressed.
func TestCompareNonMonotoneBoundaryIsNotEvidence(t *testing.T) {
	t.Parallel()
	base := levelsDoc(6, ptr(7), 0.02, map[int]float64{1: 200, 2: 300, 4: 500, 5: 600, 6: 700, 7: 1100})
	cur := levelsDoc(3, ptr(4), 0.02, map[int]float64{1: 200, 2: 300, 5: 600, 6: 700, 7: 1100})
	burst := trials(4, 500, 510, 1300) // one trial hit by load
	burst[2].Verdict = "fail"
	cur.Workloads[0].AllTrials = append(cur.Workloads[0].AllTrials, burst...)
	w := Compare(base, cur, Options{}).Workloads[0]
	if w.Verdict != Inconclusive || !strings.Contains(strings.Join(w.Notes, " "), "failed at concurrency 4, which the baseline passed, but passed concurrency 7 itself: its curve goes up and down") {
		t.Errorf("verdict %s: %s (notes %q)", w.Verdict, w.Reason, w.Notes)
	}
}

// The figure a summary quotes points the way the verdict does (issue 32: "regressed: … +37.0 %
// … at concurrency 1, 2, 3, 4, 5: 1735 → 1643 ms at 5").
func TestCompareSummaryFigureFollowsTheVerdict(t *testing.T) {
	t.Parallel()
	base := levelsDoc(5, ptr(6), 0.02, map[int]float64{1: 400, 2: 600, 3: 900, 4: 1300, 5: 1735})
	cur := levelsDoc(5, ptr(6), 0.02, map[int]float64{1: 620, 2: 900, 3: 1300, 4: 1800, 5: 1643})
	w := Compare(base, cur, Options{}).Workloads[0]
	if w.Verdict != Regressed && w.Verdict != Inconclusive {
		t.Fatalf("verdict %s: %s", w.Verdict, w.Reason)
	}
	m := regexp.MustCompile(`: ([0-9.]+) → ([0-9.]+) ms at concurrency (\d+)`).FindStringSubmatch(w.Reason)
	if m == nil {
		t.Fatalf("reason %q quotes no level", w.Reason)
	}
	from, _ := strconv.ParseFloat(m[1], 64)
	to, _ := strconv.ParseFloat(m[2], 64)
	if w.Objectives[0].Change > 0 && to <= from {
		t.Errorf("change %+.1f %% but the figure quoted goes %s → %s: %s", w.Objectives[0].Change*100, m[1], m[2], w.Reason)
	}
	// Level 2 moved +50 %, closest to the pooled +44 %; level 5 went the other way.
	if m[3] == "5" {
		t.Errorf("quoted level 5, which went the other way: %s", w.Reason)
	}
}

// Without a level in common and without a contradiction nothing can be told: inconclusive,
// never unchanged ("the boundaries do not contradict each other").
func TestCompareBoundariesAloneInconclusive(t *testing.T) {
	t.Parallel()
	base := levelsDoc(8, nil, 0.02, map[int]float64{7: 900, 8: 950}) // searched up to 8, all passed
	cur := levelsDoc(11, ptr(12), 0.02, map[int]float64{11: 900, 12: 1100})
	w := Compare(base, cur, Options{}).Workloads[0]
	if w.Verdict != Inconclusive || !strings.Contains(w.Reason, "nothing can be told") || !strings.Contains(strings.Join(w.Notes, " "), "to decide") {
		t.Errorf("verdict %s: %s (notes %q)", w.Verdict, w.Reason, w.Notes)
	}
}

// A model is compared by what identifies it, not by the name a run happened to use: the same
// GGUF under another directory is flagged, not refused (issue 32); two hub ids are two
// models; a model, engine or hardware one run did not record is refused unless the user says
// the setups are the same (same_setup), then flagged (issue 40). An empty value reads
// "(not recorded)", never "baseline ,".
func TestCompareModelUnderAnotherName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		base, cur              results.Experiment
		refused, flagged, none string
	}{
		{"alias without an experiment, path with one",
			results.Experiment{Model: "tiny"}, results.Experiment{Model: "/models/tiny-llama.gguf", ImageTag: "llmserve/llamacpp:b1", Hardware: "cpu"},
			"", `model named differently: baseline "tiny", current "/models/tiny-llama.gguf"; an alias the server answers to`, ""},
		{"the same file elsewhere",
			results.Experiment{Model: "/models/Tiny-Llama.gguf", ImageTag: "i:1"}, results.Experiment{Model: "/srv/cache/tiny-llama.gguf", ImageTag: "i:2"},
			"", "the same model file (tiny-llama)", ""},
		{"two hub ids",
			results.Experiment{Model: "Qwen/Qwen3-8B"}, results.Experiment{Model: "meta-llama/Llama-3.1-8B"},
			`model differs: baseline "Qwen/Qwen3-8B", current "meta-llama/Llama-3.1-8B"`, "", ""},
		{"two revisions",
			results.Experiment{Model: "Qwen/Qwen3-8B", Checkpoint: "a1"}, results.Experiment{Model: "Qwen/Qwen3-8B", Checkpoint: "b2"},
			`model differs: baseline "Qwen/Qwen3-8B" (a1), current "Qwen/Qwen3-8B" (b2)`, "", ""},
		{"a model not recorded",
			results.Experiment{Model: ""}, results.Experiment{Model: "Qwen/Qwen3-8B", Hardware: "1 x H200"},
			"", `model named differently: baseline (not recorded), current "Qwen/Qwen3-8B"`, "baseline ,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := doc(4, trials(4, 900, 918, 882)), doc(4, trials(4, 900, 918, 882))
			b.Experiment, c.Experiment = tc.base, tc.cur
			unknown := tc.name == "alias without an experiment, path with one" || tc.name == "a model not recorded"
			if unknown {
				// Recorded on one side only: refused unless the user says the setups are the same.
				r := Compare(b, c, Options{})
				if refused := strings.Join(r.Refused, "\n"); !strings.Contains(refused, tc.flagged) || !strings.Contains(refused, "say so with same_setup") {
					t.Errorf("without same_setup: refused %q, want %q and the fix", r.Refused, tc.flagged)
				}
			}
			r := Compare(b, c, Options{SameSetup: unknown})
			refused, flagged := strings.Join(r.Refused, "\n"), strings.Join(r.Flagged, "\n")
			if (tc.refused == "") != (len(r.Refused) == 0) || !strings.Contains(refused, tc.refused) {
				t.Errorf("refused %q, want %q", r.Refused, tc.refused)
			}
			if !strings.Contains(flagged, tc.flagged) {
				t.Errorf("flagged %q, want %q", r.Flagged, tc.flagged)
			}
			if tc.none != "" && strings.Contains(r.Summary(), tc.none) {
				t.Errorf("summary says %q:\n%s", tc.none, r.Summary())
			}
			if tc.name == "a model not recorded" && !strings.Contains(flagged, `hardware recorded by one run only: baseline (not recorded), current "1 x H200" (same_setup: taken as the same)`) {
				t.Errorf("flagged %q, want the hardware with (not recorded)", r.Flagged)
			}
		})
	}
}

func fptr(v float64) *float64 { return &v }

// rateDoc is an open-loop run by request rate: per offered rate, two trials of the given p95
// TTFT (±1 %), a trial failing above 1000 ms.
func rateDoc(passing, failing *float64, values map[float64]float64) *results.Document {
	d := doc(0)
	w := &d.Workloads[0]
	w.MaximumPassingConcurrency, w.FirstFailingConcurrency = nil, nil
	w.MaximumPassingRequestRate, w.FirstFailingRequestRate = passing, failing
	d.AIPerf.ArrivalPattern = "open-loop poisson"
	for _, rate := range []float64{2, 2.5, 3.125, 3.90625, 4.8828125} {
		v, ok := values[rate]
		if !ok {
			continue
		}
		for i, x := range []float64{v * 1.01, v * 0.99} {
			verdict := map[bool]string{true: "pass", false: "fail"}[x < 1000]
			w.AllTrials = append(w.AllTrials, results.Trial{Trial: i + 1, Kind: "confirmation", RequestRate: rate, Verdict: verdict,
				SLOs: []results.SLOResult{{Metric: ttft.Metric, Percentile: 95, Value: x, Met: x < 1000}}})
		}
	}
	return d
}

// Rate results are compared on their own axis: levels matched on the offered rate, the
// maximum passing rate as the capacity, in requests per second.
func TestCompareRateResults(t *testing.T) {
	t.Parallel()
	base := rateDoc(fptr(3.90625), fptr(4.8828125), map[float64]float64{2: 300, 2.5: 400, 3.125: 550, 3.90625: 800, 4.8828125: 1500})
	slower := rateDoc(fptr(3.125), fptr(3.90625), map[float64]float64{2: 345, 2.5: 460, 3.125: 632.5, 3.90625: 1100})
	same := rateDoc(fptr(3.90625), fptr(4.8828125), map[float64]float64{2: 303, 2.5: 402, 3.125: 548, 3.90625: 806, 4.8828125: 1490})
	r := Compare(base, slower, Options{})
	w := r.Workloads[0]
	if w.Axis != AxisRequestRate || w.Verdict != Regressed || w.BaselineCapacity != nil || *w.BaselineMaximumPassing != 3.90625 || *w.CurrentMaximumPassing != 3.125 {
		t.Fatalf("axis %s verdict %s capacity %v: %s", w.Axis, w.Verdict, w.BaselineCapacity, w.Reason)
	}
	for _, want := range []string{"at rate 2, 2.5, 3.125, 3.906 requests/s", "maximum passing rate 3.906 requests/s → 3.125 requests/s (first failing 4.883 requests/s → 3.906 requests/s)"} {
		if !strings.Contains(w.Reason, want) {
			t.Errorf("reason %q does not say %q", w.Reason, want)
		}
	}
	if l := w.Objectives[0].Levels[1]; l.At != 2.5 || l.Concurrency != 0 || l.BaselineN != 2 {
		t.Errorf("level %+v", l)
	}
	if w := Compare(base, same, Options{}).Workloads[0]; w.Verdict != Unchanged {
		t.Errorf("the same rates: %s: %s", w.Verdict, w.Reason)
	}
	conc := doc(4, trials(4, 900, 918, 882))
	conc.AIPerf.ArrivalPattern = base.AIPerf.ArrivalPattern
	if w := Compare(conc, base, Options{}).Workloads[0]; w.Verdict != Incomparable || !strings.Contains(w.Reason, "searched by concurrency, the current run by request rate") {
		t.Errorf("concurrency against rate: %s: %s", w.Verdict, w.Reason)
	}
}

// A replay that holds only 0.48× and fails at 1× against one that held 1.22×, with no speed-up
// in common, is a regression read from the boundaries (issue 32: "unchanged: the boundaries do
// not contradict each other").
func TestCompareReplayResults(t *testing.T) {
	t.Parallel()
	b, err := readReplay()
	if err != nil {
		t.Fatal(err)
	}
	cur := *b
	cur.Workloads = []results.Workload{b.Workloads[0]}
	w := &cur.Workloads[0]
	mp, ff := 0.48, 1.0
	w.MaximumPassingSpeedup, w.FirstFailingSpeedup = &mp, &ff
	rate := func(s float64) *float64 { return fptr(s * 5) }
	w.MaximumPassingRequestRate, w.FirstFailingRequestRate = rate(mp), rate(ff)
	w.AllTrials = []results.Trial{
		{Trial: 1, Kind: "confirmation", Speedup: mp, RequestRate: *rate(mp), Verdict: "pass", SLOs: []results.SLOResult{{Metric: ttft.Metric, Percentile: 95, Value: 40, Met: true}}},
		{Trial: 1, Kind: "confirmation", Speedup: ff, RequestRate: *rate(ff), Verdict: "fail", SLOs: []results.SLOResult{{Metric: ttft.Metric, Percentile: 95, Value: 400, Met: false}}},
	}
	w.PassingTrials, w.FailingTrials = w.AllTrials[:1], w.AllTrials[1:]
	got := Compare(b, &cur, Options{}).Workloads[0]
	if got.Axis != AxisSpeedup || got.Verdict != Regressed || !strings.Contains(got.Reason, "the current run failed at 1×, which the baseline passed") ||
		!strings.Contains(got.Reason, "maximum passing speed-up 1.221× → 0.48×") {
		t.Errorf("%s (%s): %s", got.Verdict, got.Axis, got.Reason)
	}
	// The replay against itself: matched on its six speed-ups, the same trials on both sides:
	// one measurement read twice, unchanged, although one trial of 18 requests a speed-up
	// could not show a change within ±10 % between two runs (its records' bootstrap gives
	// ±20 %). Three times slower at every speed-up: regressed.
	records := RecordsSamples(filepath.Join("..", "results", "testdata", "replay", "records"))
	self := Compare(b, b, Options{Baseline: records, Current: records}).Workloads[0]
	if self.Verdict != Unchanged || len(self.Objectives[0].Levels) != 6 || self.Objectives[0].Change != 0 || self.Objectives[0].NoiseSource != "identical" ||
		!strings.Contains(self.Reason, "the same trials in both documents") {
		t.Errorf("the replay against itself: %s: %s", self.Verdict, self.Reason)
	}
	// One trial's value moved by a hair: two runs now, and the records' noise decides.
	nudged, err := readReplay()
	if err != nil {
		t.Fatal(err)
	}
	nudged.Workloads[0].AllTrials[0].SLOs[0].Value *= 1.0001
	if near := Compare(b, nudged, Options{Baseline: records, Current: records}).Workloads[0]; near.Verdict != Inconclusive || near.Objectives[0].NoiseSource != "records" {
		t.Errorf("the replay against a copy nudged by 0.01 %%: %s (%s): %s", near.Verdict, near.Objectives[0].NoiseSource, near.Reason)
	}
	slow, err := readReplay()
	if err != nil {
		t.Fatal(err)
	}
	for i := range slow.Workloads[0].AllTrials {
		for j := range slow.Workloads[0].AllTrials[i].SLOs {
			slow.Workloads[0].AllTrials[i].SLOs[j].Value *= 3
		}
	}
	if got := Compare(b, slow, Options{}).Workloads[0]; got.Verdict != Regressed || !strings.Contains(got.Reason, "at speed-up 0.5, 0.625, 0.781, 0.977, 1.221, 1.526×") {
		t.Errorf("three times slower: %s: %s", got.Verdict, got.Reason)
	}
}

func readReplay() (*results.Document, error) {
	raw, err := os.ReadFile(filepath.Join("..", "results", "testdata", "replay", "result.json"))
	if err != nil {
		return nil, err
	}
	return results.Parse(raw)
}

// What a run recorded about its own noise (issue 32's apply-time warnings: disagreeing
// confirmation trials, a busy load generator) is said beside the verdict, and an inconclusive
// verdict then names a quieter host.
func TestCompareUsesRecordedNoise(t *testing.T) {
	t.Parallel()
	base := levelsDoc(4, ptr(5), 0.25, map[int]float64{3: 800, 4: 900, 5: 1100})
	cur := levelsDoc(4, ptr(5), 0.25, map[int]float64{3: 864, 4: 972, 5: 1188})
	cur.Workloads[0].TrialDisagreements = []results.TrialDisagreement{{Concurrency: 4, Objective: "p95 time_to_first_token", Low: 700, High: 1200}}
	cur.Workloads[0].AllTrials[0].Host = &results.HostLoad{CPUs: 2, LoadAvg1mStart: 1, LoadAvg1mEnd: 9}
	w := Compare(base, cur, Options{}).Workloads[0]
	notes := strings.Join(w.Notes, "\n")
	for _, want := range []string{
		"the current run's confirmation trials disagree beyond their size at 1 level(s) (concurrency 4: p95 time_to_first_token 71 % apart)",
		"the current run's load generator was busy during 1 trial(s)",
		"to decide, about", "or a quieter host",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not say %q:\n%s", want, notes)
		}
	}
	if w.Verdict != Inconclusive || !strings.Contains(w.Objectives[0].Decide, "a quieter host") {
		t.Errorf("verdict %s, to decide %q", w.Verdict, w.Objectives[0].Decide)
	}
}
