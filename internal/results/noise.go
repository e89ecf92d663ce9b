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

// LevelTextOn names the level as the workload's axis reads it: a users workload's level is
// its users ("3 users"), stored where a closed-loop level is.
func (d TrialDisagreement) LevelTextOn(ax Axis) string {
	if ax.Name() == "users" && d.Speedup == 0 && d.RequestRate == 0 {
		return fmt.Sprintf("%d %s", d.Concurrency, map[bool]string{true: "user", false: "users"}[d.Concurrency == 1])
	}
	return d.LevelText()
}

// noiseZ is the normal quantile of the two-sided 95 % interval.
const noiseZ = 1.96

// Disagreements lists, per level of w with two or more confirmation trials and per
// percentile objective, where those trials disagree beyond their size (see
// TrialDisagreement), in the order of the levels and the objectives. Trials with failed
// requests or stopped early are left out: their values are not estimates from n requests.
// A lowest value of 0 or below is left out too: the spread is in percent of it.
func Disagreements(objectives []SLO, w Workload) []TrialDisagreement {
	ax := w.Axis()
	var out []TrialDisagreement
	for _, l := range noiseLevels(w) {
		if len(l.trials) < 2 {
			continue
		}
		for _, s := range objectives {
			if !noiseObjective(s) {
				continue
			}
			var ests []noiseEstimate
			for _, t := range l.trials {
				if e, ok := estimateNoise(s, t); ok {
					ests = append(ests, e)
				}
			}
			if len(ests) < 2 {
				continue
			}
			low := slices.MinFunc(ests, func(a, b noiseEstimate) int { return cmpFloat(a.v, b.v) })
			high := slices.MaxFunc(ests, func(a, b noiseEstimate) int { return cmpFloat(a.v, b.v) })
			if !(low.hi < high.lo) || !(low.v > 0) {
				continue
			}
			d := TrialDisagreement{Objective: s.Key(), Low: low.v, High: high.v, LowTrial: low.t.Trial, HighTrial: high.t.Trial,
				LowUpper: low.hi, HighLower: high.lo, Requests: min(low.n, high.n)}
			d.setLevel(ax, l.at)
			out = append(out, d)
		}
	}
	return out
}

// noiseLevel is one level of a workload with the confirmation trials Disagreements reads there.
type noiseLevel struct {
	at     float64
	trials []Trial
}

// noiseLevels is every level of w with its confirmation trials that finished all their
// requests, in the order of the levels: the trials Disagreements compares and the check of a
// document's trial_disagreements looks up.
func noiseLevels(w Workload) []*noiseLevel {
	ax := w.Axis()
	var levels []*noiseLevel
	add := func(st SideTrial) {
		t := st.Trial
		if t.Kind == "probe" || t.StoppedEarly || t.Correctness.Errors > 0 {
			return
		}
		at, ok := ax.Level(st)
		if !ok {
			return
		}
		i := slices.IndexFunc(levels, func(l *noiseLevel) bool { return l.at == at })
		if i < 0 {
			levels = append(levels, &noiseLevel{at: at})
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
	slices.SortStableFunc(levels, func(a, b *noiseLevel) int { return cmpFloat(a.at, b.at) })
	return levels
}

// noiseObjective reports whether s is an objective Disagreements judges: a percentile below
// 100 of a metric with a distribution.
func noiseObjective(s SLO) bool {
	m := s.Info()
	return !m.PerTrial && m.stats != nil && s.Percentile > 0 && s.Percentile < 100
}

// noiseEstimate is one trial's value of an objective, the 95 % interval around it and the
// successful requests it comes from.
type noiseEstimate struct {
	t         Trial
	v, lo, hi float64
	n         int
}

func estimateNoise(s SLO, t Trial) (noiseEstimate, bool) {
	st := s.Info().stats(t)
	n := t.Correctness.ProfilingRecords - t.Correctness.Errors
	if st == nil || n < 2 {
		return noiseEstimate{}, false
	}
	v, ok := st.Percentile(s.Percentile)
	if !ok {
		return noiseEstimate{}, false
	}
	p := s.Percentile / 100
	half := noiseZ * math.Sqrt(p*(1-p)/float64(n))
	lo, okLo := st.quantile(p - half)
	hi, okHi := st.quantile(p + half)
	if !okLo || !okHi {
		return noiseEstimate{}, false
	}
	return noiseEstimate{t: t, v: v, lo: lo, hi: hi, n: n}, true
}

func (d *TrialDisagreement) setLevel(ax Axis, at float64) {
	switch ax.(type) {
	case speedupAxis:
		d.Speedup = at
	case rateAxis:
		d.RequestRate = at
	default:
		d.Concurrency = int(at)
	}
}

// disagreementLevel is one of a TrialDisagreement's level keys and its value.
type disagreementLevel struct {
	key string
	at  float64
}

// levels is d's level keys and values, the one its axis uses first (disagreementLevelKey).
func (d TrialDisagreement) levels(ax Axis) []disagreementLevel {
	all := []disagreementLevel{{"concurrency", float64(d.Concurrency)}, {"request_rate", d.RequestRate}, {"speedup", d.Speedup}}
	want := disagreementLevelKey(ax)
	slices.SortStableFunc(all, func(a, b disagreementLevel) int {
		switch {
		case a.key == want:
			return -1
		case b.key == want:
			return 1
		}
		return 0
	})
	return all
}

// disagreementLevelKey is the key of the TrialDisagreement field that holds a level of ax:
// users count as concurrency there, as the search's levels do.
func disagreementLevelKey(ax Axis) string {
	switch ax.(type) {
	case speedupAxis:
		return "speedup"
	case rateAxis:
		return "request_rate"
	}
	return "concurrency"
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
