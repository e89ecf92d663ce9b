package results

import (
	"fmt"
	"math"
	"slices"
)

// TrialDisagreement is one level whose confirmation trials disagree on an objective both
// beyond what their own requests explain and by enough to matter (DisagreementRule): trials
// of one server at one level should agree within their sampling noise; when they do not,
// something beside the level changed between them (another job on the host, a throttled
// CPU, a cache). A workload's list is absent when its trials agree. Additive.
type TrialDisagreement struct {
	// The level: Concurrency, RequestRate (open loop) or Speedup (a replay); the others absent.
	Concurrency int     `json:"concurrency,omitempty"`
	RequestRate float64 `json:"request_rate,omitempty"`
	Speedup     float64 `json:"speedup,omitempty"`
	// Objective is the objective's key ("p95 time_to_first_token").
	Objective string `json:"objective"`
	// Low and High are the lowest and the highest confirmation trial's value of it (their
	// Trial numbers LowTrial and HighTrial); LowUpper is the top of the lowest trial's
	// interval and HighLower the bottom of the highest's (LowUpper < HighLower): intervals
	// sized so that they part exactly when the rule's test finds the two trials differ.
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

// DisagreementRule says when the confirmation trials of one level disagree enough to say so.
// Both must hold, for the lowest and the highest trial's value of a percentile objective:
//
//   - Beyond noise: ln(high / low) exceeds the two-sided 1 − Alpha critical value (the
//     normal's, Bonferroni-split over the level's pairs of trials) times the standard error
//     of that difference. A trial's standard error is that of a sample percentile p from n
//     requests, σ · √(p(1 − p)/n) / φ(z_p) in log terms, with σ the trial's own spread of
//     the metric in log terms (from its mean and standard deviation, as a lognormal's:
//     σ² = ln(1 + CV²); from p10 and p90 where a document has no mean). Unlike an interval
//     read between a trial's recorded percentiles, it does not shrink to the sample's
//     maximum when few requests reach the tail: from 8 requests a p95 is barely known.
//   - Large enough to matter: high is at least Band above low (the comparison's band, ±10 %
//     by default), so a difference too small to change a gate's verdict never warns.
//
// Its false alarms on identical trials are measured by BenchmarkDisagreementFalseAlarms.
type DisagreementRule struct {
	// Alpha is the two-sided false-alarm level per level and objective: 0.02.
	Alpha float64
	// Band is the smallest relative difference that warns: 0.10.
	Band float64
}

// DefaultDisagreementRule is the rule documents are written with; its Band is the
// comparison's default equivalence band (compare.DefaultBand).
var DefaultDisagreementRule = DisagreementRule{Alpha: 0.02, Band: 0.10}

// Disagreements lists, by DefaultDisagreementRule, the levels of w whose confirmation trials
// disagree (see DisagreementRule.Find).
func Disagreements(objectives []SLO, w Workload) []TrialDisagreement {
	return DefaultDisagreementRule.Find(objectives, w)
}

// Find lists, per level of w with two or more confirmation trials and per percentile
// objective, where those trials disagree by the rule, in the order of the levels and the
// objectives. Trials with failed requests or stopped early are left out: their values are
// not estimates from n requests; so are trials added for a comparison (the search's trials
// are what a disagreement questions). A lowest value of 0 or below is left out too: the
// spread is in percent of it.
func (rule DisagreementRule) Find(objectives []SLO, w Workload) []TrialDisagreement {
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
			if !(low.v > 0) {
				continue
			}
			pairs := float64(len(ests) * (len(ests) - 1) / 2)
			crit := normalQuantile(1 - rule.Alpha/(2*pairs))
			diff, se := math.Log(high.v/low.v), math.Hypot(low.se, high.se)
			if !(diff > crit*se) || high.v < low.v*(1+rule.Band) {
				continue
			}
			// Each trial's interval, sized so that they part exactly when the test above
			// finds a difference: c·(se_low + se_high) = crit·√(se_low² + se_high²).
			c := crit
			if sum := low.se + high.se; sum > 0 {
				c = crit * se / sum
			}
			d := TrialDisagreement{Objective: s.Key(), Low: low.v, High: high.v, LowTrial: low.t.Trial, HighTrial: high.t.Trial,
				LowUpper: low.v * math.Exp(c*low.se), HighLower: high.v * math.Exp(-c*high.se), Requests: min(low.n, high.n)}
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
		if t.Kind == "probe" || t.StoppedEarly || t.Correctness.Errors > 0 || t.ForComparison > 0 {
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

// noiseEstimate is one trial's value of an objective, the standard error of its logarithm
// (percentileSE) and the successful requests it comes from.
type noiseEstimate struct {
	t     Trial
	v, se float64
	n     int
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
	sigma, ok := st.logSpread(n)
	if !ok {
		return noiseEstimate{}, false
	}
	return noiseEstimate{t: t, v: v, se: percentileSE(s.Percentile/100, n, sigma), n: n}, true
}

// percentileSE is the standard error, in log terms, of the p-quantile of n values whose
// logarithms spread by sigma: the sample quantile's asymptotic variance p(1 − p) / (n f²)
// with f the normal density at z_p (the values' lognormal shape).
func percentileSE(p float64, n int, sigma float64) float64 {
	z := normalQuantile(p)
	phi := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	return sigma * math.Sqrt(p*(1-p)/float64(n)) / phi
}

// logSpread is the standard deviation of the metric's logarithm over a trial's n values,
// read as a lognormal's from the recorded mean and (population) standard deviation:
// σ² = ln(1 + CV²), with CV corrected to n − 1; where a document records no mean and
// deviation, from p10 and p90 (z = ±1.2816). ok is false when neither is recorded.
func (s Stats) logSpread(n int) (float64, bool) {
	if s.Has("avg") && s.Has("std") && s.Avg > 0 && s.Std >= 0 && n >= 2 {
		cv := s.Std / s.Avg * math.Sqrt(float64(n)/float64(n-1))
		return math.Sqrt(math.Log1p(cv * cv)), true
	}
	if s.Has("p10") && s.Has("p90") && s.P10 > 0 && s.P90 >= s.P10 {
		return math.Log(s.P90/s.P10) / (2 * 1.2815515655446004), true
	}
	return 0, false
}

// normalQuantile is the standard normal's p-quantile, by bisection on its distribution
// function.
func normalQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
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
