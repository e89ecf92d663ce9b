package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The spending by hand: 4 % at the first look, then 5 %/(5·1·2) = 0.5 %, 5 %/(5·2·3) =
// 0.1667 %, …; the shares of any number of looks never pass 5 %, and a thousand come within
// 0.005 % of it (the tail past look n + 1 is α/(5n)).
func TestLookAlpha(t *testing.T) {
	for look, want := range map[int]float64{1: 0.04, 2: 0.005, 3: 0.05 / 30, 13: 0.05 / (5 * 12 * 13)} {
		if got := LookAlpha(0.05, look); math.Abs(got-want) > 1e-15 {
			t.Errorf("look %d: %g, want %g", look, got, want)
		}
	}
	sum := 0.0
	for look := 1; look <= 1001; look++ {
		sum += LookAlpha(0.05, look)
	}
	if sum > 0.05 || sum < 0.05-0.05/5000-1e-12 {
		t.Errorf("1001 looks spend %g, want just under 0.05", sum)
	}
}

// seqTrial is a full trial at level c with p95 TTFT v, ForComparison look.
func seqTrial(c, index int, v float64) results.Trial {
	return results.Trial{Trial: index, Concurrency: c, Kind: "confirmation", Verdict: "pass",
		SLOs: []results.SLOResult{{Metric: ttft.Metric, Percentile: 95, Value: v, Met: v < ttft.ThresholdMs}}}
}

// Measure runs the levels the comparison needs first, then one trial per look while the
// verdict is open: a current run that confirmed 3 and ran one full trial at 4 gets the
// baseline's boundary (4 and 5) up to 3 trials each (look 1), and a run too noisy to decide spends its whole budget,
// one trial a look at the level whose weight grows most; the verdict it returns is what
// Compare reads from the document it built, and the document says how it got there.
func TestMeasureNeededLevelsThenOneTrialPerLook(t *testing.T) {
	base := doc(4, trials(4, 900, 905, 895), trials(5, 1100, 1105, 1095))
	cur := doc(4, trials(3, 700, 705, 695), trials(4, 950))
	rng := rand.New(rand.NewPCG(1, 2))
	var asked []float64
	noisy := func(at float64, index int) (results.Trial, error) {
		asked = append(asked, at)
		return seqTrial(int(at), index, 1000*(at/4.5)*math.Exp(0.4*rng.NormFloat64())), nil
	}
	w, cmpw, err := Measure(base, cur, cur.Workloads[0], Plan{ConfirmationTrials: 3, Budget: 5}, noisy)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 5+5 || !slices.Equal(asked[:5], []float64{4, 4, 5, 5, 5}) {
		t.Fatalf("levels measured %v: want 4, 4, 5, 5, 5 and then five one at a time", asked)
	}
	needed, seq := Added(w)
	if needed != 5 || seq != 5 || Look(w) != 6 || cmpw.Verdict != Inconclusive {
		t.Errorf("needed %d, sequential %d, look %d, verdict %s; want 5, 5, 6, inconclusive: %s", needed, seq, Look(w), cmpw.Verdict, cmpw.Reason)
	}
	for i, tr := range w.AllTrials[4:] {
		want := 1
		if i >= 5 {
			want = i - 3 // looks 2 to 6
		}
		if tr.ForComparison != want {
			t.Errorf("trial %d added at look %d, want %d", i, tr.ForComparison, want)
		}
	}
	// Each sequential trial went where the weight grows most: with 3 baseline trials a
	// level, the level with fewer current trials; from a tie, the higher level.
	if got := asked[5:]; !slices.Equal(got, []float64{5, 4, 5, 4, 5}) {
		t.Errorf("sequential levels %v, want 5, 4, 5, 4, 5", got)
	}
	final := *cur
	final.AIPerf.ComparisonBudget = 5
	final.Workloads = []results.Workload{w}
	again := Compare(base, &final, Options{}).Workloads[0]
	if again.Verdict != cmpw.Verdict || again.Reason != cmpw.Reason || again.Objectives[0].Critical != cmpw.Objectives[0].Critical {
		t.Errorf("Compare on the document: %s %s, Measure said %s %s", again.Verdict, again.Reason, cmpw.Verdict, cmpw.Reason)
	}
	// At look 6 the level spent is 5 %/(5·5·6) = 0.0333 %, on one objective, with the
	// pooled degrees of freedom by hand: the baseline's 2 levels of 3 trials (4), the
	// current run's 3 trials at 3 (2) and its 11 at 4 and 5 (9): 15.
	if want := tQuantile(1-LookAlpha(0.05, 6)/2, 15); math.Abs(again.Objectives[0].Critical-want) > 1e-9 {
		t.Errorf("critical t %.4f, want %.4f", again.Objectives[0].Critical, want)
	}
	if !strings.Contains(strings.Join(again.Notes, "\n"), "5 trial(s) at levels the comparison needed and 5 added one at a time while the verdict was open (trial.comparison_budget 5); read at look 6") {
		t.Errorf("notes %q", again.Notes)
	}

	// A run that settles at its first look adds nothing after it.
	asked = nil
	clear := func(at float64, index int) (results.Trial, error) {
		asked = append(asked, at)
		return seqTrial(int(at), index, map[float64]float64{4: 1035, 5: 1265}[at]*(1+0.001*float64(index))), nil
	}
	w, cmpw, err = Measure(base, cur, cur.Workloads[0], Plan{ConfirmationTrials: 3, Budget: 5}, clear)
	if err != nil || len(asked) != 5 || cmpw.Verdict != Regressed || Look(w) != 1 {
		t.Errorf("a clear regression: %d trials, %s, look %d, %v", len(asked), cmpw.Verdict, Look(w), err)
	}
}

// The sequential comparison keeps its error rates however many looks it takes and however
// much it measures before the first: over 4 000 simulated pairs of the same server (per-trial
// noise 5 %, each run with 3 trials at each side of its boundary and one full probe at 2 and
// at 3, which the two-stage step fills when the first interval is too wide; a budget of 12) it
// calls regressed or improved at most 5 % of the time, and a server 10 % slower (exactly the
// band) unchanged at most 5 % of the time. Seeded: the same figures every run.
func TestSequentialErrorRates(t *testing.T) {
	if testing.Short() {
		t.Skip("4 000 simulated comparisons")
	}
	const pairs, noise = 4000, 0.05
	rng := rand.New(rand.NewPCG(38, 5))
	level := func(c int, f float64) float64 { return f * 1000 * float64(c) / 4.5 * math.Exp(noise*rng.NormFloat64()) }
	run := func(c int, f float64) *results.Document {
		probe := func(c int) []results.Trial {
			t := trials(c, level(c, f))
			t[0].Kind = "probe"
			return t
		}
		return doc(4, probe(2), probe(3), trials(4, level(4, f), level(4, f), level(4, f)), trials(5, level(5, f), level(5, f), level(5, f)))
	}
	rates := func(f float64, o Options) map[string]int {
		out := map[string]int{}
		for range pairs {
			base, cur := run(4, 1), run(4, f)
			_, w, err := Measure(base, cur, cur.Workloads[0], Plan{ConfirmationTrials: 3, Budget: 12, Options: o},
				func(at float64, index int) (results.Trial, error) {
					return seqTrial(int(at), index, level(int(at), f)), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			out[w.Verdict]++
		}
		return out
	}
	same := rates(1, Options{})
	if wrong := same[Regressed] + same[Improved]; wrong > pairs*5/100 {
		t.Errorf("the same server called changed in %d of %d pairs (%v), more than 5 %%", wrong, pairs, same)
	}
	band := rates(1.10, Options{})
	if band[Unchanged] > pairs*5/100 {
		t.Errorf("a server 10 %% slower called unchanged in %d of %d pairs (%v), more than 5 %%", band[Unchanged], pairs, band)
	}
	t.Logf("same server: %v; 10 %% slower: %v", same, band)
}

// An open verdict the baseline's own trials keep open says so: a baseline of 2 trials a level
// spreading ±10 % bounds the interval at about ± 12 % however many trials the current run
// adds (here 12 a level, no change at all), more than the ± 10 % band.
func TestDecideNamesTheBaselineFloor(t *testing.T) {
	spread := func(c, n int) []results.Trial {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = 1000 * math.Exp(0.1*float64(1-2*(i%2)))
		}
		return trials(c, vs...)
	}
	base := doc(4, spread(4, 2), spread(5, 2))
	cur := doc(4, spread(4, 12), spread(5, 12))
	w := Compare(base, cur, Options{}).Workloads[0]
	ob := w.Objectives[0]
	if ob.Verdict != Inconclusive || !strings.Contains(ob.Decide, "a baseline with more trials: however many the current run adds, the baseline's own 2 trials a level keep the interval") {
		t.Errorf("%s: %s", ob.Verdict, ob.Decide)
	}
}
