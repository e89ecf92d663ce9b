package compare

// A comparison made sequentially. A benchmark given a baseline measures the levels the
// comparison needs, reads the verdict (the first look), and while it is inconclusive adds
// one trial and reads it again (one look per trial added), until the verdict is settled or
// its budget is spent. A test read at a fixed false-alarm level after every trial would
// raise false alarms with every look; so each look spends its own share of Alpha:
//
//	look 1:        4α/5
//	look j + 1:    α / (5 j (j + 1))      (j = 1, 2, …: the j-th trial added)
//
// The shares sum to α over any number of looks (Σ_{j≥1} 1/(j(j+1)) = 1), so by the union
// bound the chance that a run ever calls a server regressed or improved when it is not,
// or unchanged when it changed by the band or more, is at most α, however many looks it
// takes and whatever made it stop: each look's test holds its own share. The spending does
// not depend on the budget, so compare reads a finished document exactly as the benchmark
// read it at its last look: the look is in the document (results.Trial.ForComparison).
// BenchmarkSequentialVirtual measures the rates by simulation.

import (
	"fmt"
	"math"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// DefaultComparisonBudget is the most trials a benchmark adds one at a time while a
// workload's verdict is open (trial.comparison_budget), beside the levels it needs.
const DefaultComparisonBudget = 12

// LookAlpha is the two-sided false-alarm level spent at a look of a sequential comparison
// whose total is alpha (see the package's sequential method above).
func LookAlpha(alpha float64, look int) float64 {
	if look <= 1 {
		return 4 * alpha / 5
	}
	j := float64(look - 1)
	return alpha / (5 * j * (j + 1))
}

// Look is the look of a sequential comparison at which w's trials were read: the largest
// ForComparison among them, 1 when the run added none after its first look.
func Look(w results.Workload) int {
	look := 1
	for _, t := range w.AllTrials {
		look = max(look, t.ForComparison)
	}
	return look
}

// Added counts w's trials added for a comparison: those measured before the first look at
// levels the comparison needed (needed), and those added one at a time after it (sequential).
func Added(w results.Workload) (needed, sequential int) {
	for _, t := range w.AllTrials {
		switch {
		case t.ForComparison == 1:
			needed++
		case t.ForComparison > 1:
			sequential++
		}
	}
	return needed, sequential
}

// Sequential says whether doc was measured against a baseline, its looks spending the
// false-alarm level as LookAlpha does.
func Sequential(doc *results.Document) bool { return doc.AIPerf.ComparisonBudget > 0 }

// sequentialNotePrefix opens the note of a comparison measured against its baseline.
const sequentialNotePrefix = "measured against this baseline: "

// sequentialNote says how a sequential comparison got to its verdict: the trials it added,
// the look and the level spent there.
func sequentialNote(cd *results.Document, cw results.Workload, o Options) string {
	needed, seq := Added(cw)
	look := Look(cw)
	return fmt.Sprintf(sequentialNotePrefix+"%d trial(s) at levels the comparison needed and %d added one at a time while the verdict was open "+
		"(trial.comparison_budget %d); read at look %d, where the false-alarm level spent is %.3g %% of the %.3g %% over all looks",
		needed, seq, cd.AIPerf.ComparisonBudget, look, 100*LookAlpha(o.Alpha, look), 100*o.Alpha)
}

// tooWide reports whether an objective's interval is at least the band wide (in log terms):
// then only a change close to the middle of the band could be shown unchanged, and most
// verdicts would stay open.
func tooWide(w Workload, o Options) bool {
	band := o.Band
	if band <= 0 {
		band = DefaultBand
	}
	for _, ob := range w.Objectives {
		if len(ob.Levels) > 0 && ob.NoiseSource != "identical" && math.Log1p(ob.High)-math.Log1p(ob.Low) >= math.Log1p(band) {
			return true
		}
	}
	return false
}

// nextLevel is where one more trial of the current run cw would narrow the interval of
// a comparison with bw most: among the levels the baseline measured in full (those both
// runs measured, and those only the baseline did, which one trial makes common), the one
// whose weight 1/(1/n_baseline + 1/n_current) grows most with one more current trial, ties
// to the higher level; ok is false when the baseline has no full trial.
func nextLevel(bw, cw results.Workload) (at float64, ok bool) {
	a := axisOf(cw)
	nb, nc := fullTrials(a, bw), fullTrials(a, cw)
	best := -1.0
	for _, l := range sortedKeys(nb) {
		b, c := float64(nb[l]), float64(nc[l])
		gain := b * b / ((b + c) * (b + c + 1))
		if gain > best || gain == best && l > at {
			best, at, ok = gain, l, true
		}
	}
	return at, ok
}

// fullTrials counts w's full trials without failed requests by level (a probe that ran in
// full is one): the trials a comparison reads.
func fullTrials(a Axis, w results.Workload) map[float64]int {
	out := map[float64]int{}
	trials := w.AllTrials
	if len(trials) == 0 {
		for _, st := range w.Trials() {
			t := st.Trial
			if a == AxisConcurrency && t.Concurrency == 0 {
				t.Concurrency = st.Concurrency
			}
			trials = append(trials, t)
		}
	}
	for _, t := range trials {
		if at := a.at(t); !t.StoppedEarly && at > 0 && t.Correctness.Errors == 0 && t.Verdict != "error" {
			out[levelKey(at)]++
		}
	}
	return out
}

func sortedKeys(m map[float64]int) []float64 {
	out := make([]float64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// NeededLevels are the levels a current run must measure in full for a comparison with the
// baseline's workload bw: the baseline's boundary on its axis, the maximum passing level and
// the first failing one above it, where the baseline measured them in full.
func NeededLevels(bw results.Workload) []float64 {
	a := axisOf(bw)
	full := fullTrials(a, bw)
	var out []float64
	bp, bf := a.boundary(bw)
	for _, l := range []*float64{bp, bf} {
		if l != nil && full[levelKey(*l)] > 0 {
			out = append(out, *l)
		}
	}
	return out
}

// TrialFunc measures one full trial of the current run at a level on the workload's axis
// (index: the trial's number among those added for the comparison at that level, from 1)
// and returns its record, placed at the level.
type TrialFunc func(at float64, index int) (results.Trial, error)

// Plan is how a sequential comparison runs: the confirmation trials a needed level must
// hold (the run's trial.confirmation_trials) and the most trials added one at a time.
type Plan struct {
	ConfirmationTrials int
	Budget             int
	Options            Options
}

// Measure runs the sequential comparison of the current run's workload cw (of document cd,
// which gives the protocol and objectives) against the baseline bd: first the levels the
// comparison needs (NeededLevels) up to p.ConfirmationTrials full trials each (and, where
// the first look's interval would be at least the band wide, every level the baseline
// measured in full: tooWide), then, while
// the verdict is inconclusive and the budget lasts, one trial per look where it narrows the
// interval most (nextLevel: a level both runs measured, or one only the baseline did). Each
// trial added carries its look in ForComparison. It returns cw with those trials appended
// (their verdicts are the caller's to derive) and the comparison at the last look, which is
// what Compare(bd, cd with that workload) returns. A workload missing from the baseline, or
// one the comparison refuses (another protocol, axis or shape), gets no trial.
func Measure(bd, cd *results.Document, cw results.Workload, p Plan, trial TrialFunc) (results.Workload, Workload, error) {
	base, cur := *bd, *cd
	cur.AIPerf.ComparisonBudget = p.Budget
	var bw *results.Workload
	for i := range bd.Workloads {
		if bd.Workloads[i].Label == cw.Label {
			bw = &bd.Workloads[i]
		}
	}
	read := func() Workload {
		cur.Workloads = []results.Workload{cw}
		r := Compare(&base, &cur, p.Options)
		if len(r.Workloads) == 0 {
			return Workload{Label: cw.Label, Verdict: Incomparable}
		}
		return r.Workloads[0]
	}
	if bw == nil {
		return cw, Workload{}, nil
	}
	base.Workloads = []results.Workload{*bw}
	if w := read(); w.Verdict == Incomparable {
		return cw, w, nil
	}
	a := axisOf(cw)
	added := map[float64]int{}
	// fill brings the current run to p.ConfirmationTrials full trials at each level, every
	// trial added before the first look.
	fill := func(levels []float64) error {
		have := fullTrials(a, cw)
		for _, at := range levels {
			for n := have[levelKey(at)]; n < p.ConfirmationTrials; n++ {
				added[levelKey(at)]++
				t, err := trial(at, added[levelKey(at)])
				if err != nil {
					return err
				}
				t.ForComparison = 1
				cw.AllTrials = append(slices.Clone(cw.AllTrials), t)
			}
		}
		return nil
	}
	if err := fill(NeededLevels(*bw)); err != nil {
		return cw, Workload{}, err
	}
	// Before the first verdict, the width of its interval alone (the noise, not the change)
	// says whether it is likely to decide: where the interval is at least the band wide
	// whatever its centre (a noisy server, few degrees of freedom), every level the baseline
	// measured in full is brought to p.ConfirmationTrials too, still before the first look.
	// Choosing how much to measure from the spread and not from the change is Stein's
	// two-stage design: the test read afterwards keeps its level.
	if tooWide(read(), p.Options) {
		if err := fill(sortedKeys(fullTrials(a, *bw))); err != nil {
			return cw, Workload{}, err
		}
	}
	for look := 1; ; look++ {
		w := read()
		if w.Verdict != Inconclusive || look > p.Budget {
			return cw, w, nil
		}
		at, ok := nextLevel(*bw, cw)
		if !ok {
			return cw, w, nil
		}
		added[levelKey(at)]++
		t, err := trial(at, added[levelKey(at)])
		if err != nil {
			return cw, Workload{}, err
		}
		t.ForComparison = look + 1
		cw.AllTrials = append(slices.Clone(cw.AllTrials), t)
	}
}
