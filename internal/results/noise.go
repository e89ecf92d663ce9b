package results

import (
	"fmt"
	"math"
	"slices"
)

// TrialDisagreement is one level whose confirmation trials disagree on an objective by more
// than their own requests explain: the 95 % interval of the lowest trial's value and that of
// the highest trial's do not overlap. Each interval is the distribution-free one of a
// percentile estimated from n requests: the values at the trial's own quantiles p ± 1.96 ·
// √(p(1 − p)/n), read from its recorded percentiles (linear between them). Trials of one
// server at one level should agree within those intervals; when they do not, something
// beside the level changed between them (another job on the host, a throttled CPU, a cache).
// A workload's list is absent when its trials agree. Additive.
type TrialDisagreement struct {
	// The level: Concurrency, RequestRate (open loop) or Speedup (a replay); the others absent.
	Concurrency int     `json:"concurrency,omitempty"`
	RequestRate float64 `json:"request_rate,omitempty"`
	Speedup     float64 `json:"speedup,omitempty"`
	// Objective is the objective's key ("p95 time_to_first_token").
	Objective string `json:"objective"`
	// Low and High are the lowest and the highest confirmation trial's value of it (their
	// Trial numbers LowTrial and HighTrial); LowUpper is the top of the lowest trial's
	// interval and HighLower the bottom of the highest's (LowUpper < HighLower).
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	LowTrial  int     `json:"low_trial"`
	HighTrial int     `json:"high_trial"`
	LowUpper  float64 `json:"low_upper"`
	HighLower float64 `json:"high_lower"`
	// Requests is the fewest successful measured requests of the two trials.
	Requests int `json:"requests"`
}

// SpreadPercent is how far the highest trial's value lies above the lowest, in percent of it.
func (d TrialDisagreement) SpreadPercent() float64 {
	if d.Low == 0 {
		return math.Inf(1)
	}
	return 100 * (d.High - d.Low) / d.Low
}

// LevelText names the disagreement's level: "concurrency 4", "3.08 requests/s", "speed-up 1.22×".
func (d TrialDisagreement) LevelText() string {
	switch {
	case d.Speedup > 0:
		return "speed-up " + significant(d.Speedup, 3) + "×"
	case d.RequestRate > 0:
		return significant(d.RequestRate, 3) + " requests/s"
	}
	return fmt.Sprintf("concurrency %d", d.Concurrency)
}

// noiseZ is the normal quantile of the two-sided 95 % interval.
const noiseZ = 1.96

// Disagreements lists, per level of w with two or more confirmation trials and per
// percentile objective, where those trials disagree beyond their size (see
// TrialDisagreement), in the order of the levels and the objectives. Trials with failed
// requests or stopped early are left out: their values are not estimates from n requests.
func Disagreements(objectives []SLO, w Workload) []TrialDisagreement {
	ax := w.Axis()
	type level struct {
		at     float64
		trials []Trial
	}
	var levels []*level
	add := func(st SideTrial) {
		t := st.Trial
		if t.Kind == "probe" || t.StoppedEarly || t.Correctness.Errors > 0 {
			return
		}
		at, ok := ax.Level(st)
		if !ok {
			return
		}
		i := slices.IndexFunc(levels, func(l *level) bool { return l.at == at })
		if i < 0 {
			levels = append(levels, &level{at: at})
			i = len(levels) - 1
		}
		levels[i].trials = append(levels[i].trials, t)
	}
	if len(w.AllTrials) > 0 {
		for _, t := range w.AllTrials {
			add(SideTrial{Concurrency: t.Concurrency, Trial: t})
		}
	} else {
		for _, st := range w.Trials() {
			add(st)
		}
	}
	slices.SortStableFunc(levels, func(a, b *level) int { return cmpFloat(a.at, b.at) })
	var out []TrialDisagreement
	for _, l := range levels {
		if len(l.trials) < 2 {
			continue
		}
		for _, s := range objectives {
			m := s.Info()
			if m.PerTrial || m.stats == nil || !(s.Percentile > 0 && s.Percentile < 100) {
				continue
			}
			type est struct {
				t         Trial
				v, lo, hi float64
				n         int
			}
			var ests []est
			for _, t := range l.trials {
				st := m.stats(t)
				n := t.Correctness.ProfilingRecords - t.Correctness.Errors
				if st == nil || n < 2 {
					continue
				}
				v, ok := st.Percentile(s.Percentile)
				if !ok {
					continue
				}
				p := s.Percentile / 100
				half := noiseZ * math.Sqrt(p*(1-p)/float64(n))
				lo, okLo := st.quantile(p - half)
				hi, okHi := st.quantile(p + half)
				if !okLo || !okHi {
					continue
				}
				ests = append(ests, est{t: t, v: v, lo: lo, hi: hi, n: n})
			}
			if len(ests) < 2 {
				continue
			}
			low := slices.MinFunc(ests, func(a, b est) int { return cmpFloat(a.v, b.v) })
			high := slices.MaxFunc(ests, func(a, b est) int { return cmpFloat(a.v, b.v) })
			if !(low.hi < high.lo) {
				continue
			}
			d := TrialDisagreement{Objective: s.Key(), Low: low.v, High: high.v, LowTrial: low.t.Trial, HighTrial: high.t.Trial,
				LowUpper: low.hi, HighLower: high.lo, Requests: min(low.n, high.n)}
			switch ax.(type) {
			case speedupAxis:
				d.Speedup = l.at
			case rateAxis:
				d.RequestRate = l.at
			default:
				d.Concurrency = int(l.at)
			}
			out = append(out, d)
		}
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// quantile reads the distribution's q-quantile (0 ≤ q ≤ 1, clipped) from the recorded
// statistics: linear between the recorded percentiles, min and max at the ends. ok is false
// when fewer than two of them are recorded around q.
func (s Stats) quantile(q float64) (float64, bool) {
	q = min(max(q, 0), 1)
	type knot struct{ q, v float64 }
	var knots []knot
	if s.Has("min") {
		knots = append(knots, knot{0, s.Min})
	}
	for i, p := range statPercentiles {
		if s.Has(StatKeys[4+i]) {
			knots = append(knots, knot{p / 100, *s.field(4 + i)})
		}
	}
	if s.Has("max") {
		knots = append(knots, knot{1, s.Max})
	}
	for i := 1; i < len(knots); i++ {
		a, b := knots[i-1], knots[i]
		if q >= a.q && q <= b.q {
			if b.q == a.q {
				return a.v, true
			}
			return a.v + (b.v-a.v)*(q-a.q)/(b.q-a.q), true
		}
	}
	return 0, false
}

// NonMonotone lists where w's capacity curve goes up and down: each level at which a trial
// passed although a trial at a lower level failed (failed requests aside, as the search
// counts it), with the highest such lower level, in the words of the workload's axis:
// "concurrency 4 passed although concurrency 3 failed", "3.08 requests/s passed although
// 2.68 requests/s failed".
func NonMonotone(objectives []SLO, w Workload) []string {
	ax := w.Axis()
	var passed, failed []float64
	trials := everyTrial(w)
	for _, st := range trials {
		at, ok := ax.Level(st)
		if !ok {
			continue
		}
		v := st.Trial.Verdict
		if v == "" {
			v = Verdict(objectives, st.Trial)
		}
		switch v {
		case VerdictPass:
			passed = append(passed, at)
		case VerdictFail:
			failed = append(failed, at)
		}
	}
	slices.Sort(passed)
	passed = slices.Compact(passed)
	slices.Sort(failed)
	failed = slices.Compact(failed)
	phrase := func(v float64) string {
		switch ax.(type) {
		case rateAxis:
			return ax.Text(v)
		}
		return ax.Name() + " " + ax.Text(v)
	}
	var out []string
	for _, p := range passed {
		i, _ := slices.BinarySearch(failed, p) // failed[:i] lie below p
		if i > 0 {
			out = append(out, phrase(p)+" passed although "+phrase(failed[i-1])+" failed")
		}
	}
	return out
}
