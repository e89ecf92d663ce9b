// Package compare tells whether a capacity result is worse than a baseline result of the same
// protocol: per workload present in both, the two capacities and their difference, each
// objective's value at the levels both runs measured (concurrencies, offered request rates or
// replay speed-ups: each workload on its own axis), and a verdict. It reads results documents
// and knows nothing of Terraform.
//
// The verdict decides three ways, as Chromium's Pinpoint does (different / same / need more
// runs): regressed or improved when the change is beyond the noise and at least MinChange;
// unchanged only when it is shown to be small, its confidence interval inside ±Band (an
// equivalence test); inconclusive otherwise, with what would decide it.
//
// The method (documented for users in the "Gate on change" guide):
//
//   - Each full trial (not a probe stopped early, no failed requests) gives, per objective, one
//     value x = ln(value), negated for metrics where higher is better, so that x grows when the
//     server gets worse and a difference of x is a relative change.
//   - At every level both runs measured, d = mean x (current) − mean x (baseline). The levels'
//     differences are pooled with weights 1/(1/n_baseline + 1/n_current) into one change D.
//   - Noise is the spread of repeated trials at one level (the confirmation trials), pooled over
//     every level of both runs with two or more trials: s² = Σ (x − level mean)² / Σ (n − 1).
//     Where per-request records are present (Options.Samples), a bootstrap of the objective's
//     percentile over each trial's requests estimates the same variance from one trial; the
//     larger of the two estimates is used.
//   - t = D / (s / √Σ weights), judged against Student's t with the pooled degrees of freedom at
//     a two-sided false-alarm level of Alpha (split over the objectives); D ± critical·se is the
//     change's confidence interval. An objective regressed when t passes the critical value and
//     D is at least MinChange; improved likewise the other way; unchanged when the interval lies
//     inside ±Band; else inconclusive. A workload regressed when an objective did; else
//     inconclusive when one was; else improved when one was; else unchanged.
//   - The capacities: a maximum passing level that moved by more than one of the levels the
//     runs tried is never unchanged. Down by two or more where the current run failed a level
//     the baseline passed in every confirmation trial: regressed, whatever the common levels
//     show (and improved the other way round, unless an objective regressed); without such a
//     contradiction, inconclusive.
//   - Without any level measured by both runs, the boundaries decide as above: a contradiction
//     is a regression (or an improvement); none is inconclusive, never unchanged.
//   - Two documents holding the same trials (a document and its copy) are one measurement
//     read twice, not two runs: every objective is unchanged, with no uncertainty.
//   - A document measured against a baseline (aiperf.comparison_budget) was read look after
//     look; Alpha is then spent over the looks as sequential.go says, and the verdict is
//     read at the document's last look.
package compare

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Verdicts.
const (
	Regressed = "regressed"
	Improved  = "improved"
	Unchanged = "unchanged"
	// Inconclusive: the change is neither beyond the noise nor shown to be within ±Band; the
	// workload's notes say what would decide it.
	Inconclusive = "inconclusive"
	Incomparable = "incomparable" // the protocols differ for this workload; see Result.Refused
)

// Defaults of Options.
const (
	// DefaultAlpha is the two-sided false-alarm level per workload: the chance that two runs of
	// the same server are called regressed or improved, as the t test sees it.
	DefaultAlpha = 0.05
	// DefaultMinChange is the smallest relative change of an objective's value called a
	// regression or an improvement, however sure the test is: 5 %.
	DefaultMinChange = 0.05
	// DefaultBand is the equivalence band: unchanged means the change's confidence interval
	// lies within ±10 %.
	DefaultBand = 0.10
	// FallbackNoise is the relative spread of one trial assumed when no level has repeated
	// trials and no records are present (every level measured once). It is what the project's
	// repeated runs show for a quiet server, and is flagged in the workload's notes.
	FallbackNoise = 0.10
)

// Options tune the comparison; the zero value uses the defaults.
type Options struct {
	Alpha     float64 // DefaultAlpha when 0
	MinChange float64 // DefaultMinChange when 0
	Band      float64 // DefaultBand when 0
	// Baseline and Current, when set, return one trial's per-request values of a metric (its
	// successful measured requests), read from the trial's records file; ok is false when the
	// trial has none. They feed the bootstrap estimate of noise.
	Baseline, Current Samples
	// Resamples is the bootstrap's number of resamples per trial; 400 when 0.
	Resamples int
	// SameSetup is the user saying both runs measured the same model, engine and hardware:
	// a setup one run did not record, or records differently, is then flagged, not refused.
	SameSetup bool
}

// Samples returns a trial's per-request values of metric, or false when it has no records.
type Samples func(workload string, t results.Trial, metric string) ([]float64, bool)

// Result is the comparison of two documents.
type Result struct {
	// Refused lists the protocol differences that make the numbers different quantities, as
	// sentences; when not empty no workload has a verdict (Incomparable).
	Refused []string
	// Flagged lists differences of setup that leave the numbers comparable but that a reader
	// should know (another model name, engine image, threshold, number of confirmation trials).
	Flagged []string
	// Workloads are those present in both documents, in the current document's order.
	Workloads []Workload
	// OnlyInBaseline and OnlyInCurrent are labels present in one document only.
	OnlyInBaseline, OnlyInCurrent []string
}

// Workload is the comparison of one workload.
type Workload struct {
	Label string
	// Axis is what the workload's capacity was searched over (the current run's).
	Axis Axis
	// Capacities: the maximum passing concurrency (nil: even the minimum failed, or the
	// workload was searched on another axis).
	BaselineCapacity, CurrentCapacity *int
	// CapacityChange is current − baseline, nil when either is nil.
	CapacityChange *int
	// BaselineMaximumPassing and CurrentMaximumPassing are the maximum passing level on the
	// workload's axis (a concurrency, requests per second or a speed-up); nil when none passed.
	BaselineMaximumPassing, CurrentMaximumPassing *float64
	// CapacitySteps is how many of the levels the runs tried the maximum passing level moved
	// (negative: down).
	CapacitySteps int
	Objectives    []Objective
	Verdict       string
	// Reason says in one sentence why the verdict is what it is, with the figures.
	Reason string
	// Notes say what a reader should know about how the verdict was reached (no noise
	// estimate, no level in common, what would decide an inconclusive verdict).
	Notes []string
}

// Objective is one objective's comparison within a workload.
type Objective struct {
	Key    string // "p95 time_to_first_token"
	Unit   string
	Levels []Level // levels both runs measured, ascending
	// Change is the pooled relative change of the objective's value at those levels: +0.15
	// means 15 % worse (higher latency, lower throughput). NaN without a common level.
	Change float64
	// Low and High bound Change's confidence interval (the same relative terms); NaN without
	// a common level.
	Low, High float64
	// Noise is the standard error of Change (relative), NaN without a common level.
	Noise float64
	// NoiseSource says where Noise came from: "trials" (spread of repeated trials),
	// "records" (bootstrap over per-request records), "trials+records", "levels" (the
	// common levels disagree more than the trials spread), or "assumed".
	NoiseSource string
	T           float64 // Change / Noise in log terms; NaN without a common level
	Critical    float64 // the t value Change must pass
	Verdict     string
	// Decide says, for an inconclusive objective, what would decide it.
	Decide string
}

// Level is one level both runs measured in full, with the objective's mean value.
type Level struct {
	// Concurrency is the level on the concurrency axis, 0 on the others.
	Concurrency int
	// At is the level on the workload's axis: a concurrency, an offered request rate
	// (requests per second) or a speed-up.
	At                        float64
	Baseline, Current         float64 // geometric mean over the level's trials, in Unit
	BaselineN, CurrentN       int     // trials
	BaselinePass, CurrentPass bool    // every trial at the level met the objective
}

// Compare compares current with baseline.
func Compare(baseline, current *results.Document, o Options) Result {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = DefaultAlpha
	}
	if o.MinChange <= 0 {
		o.MinChange = DefaultMinChange
	}
	if o.Band <= 0 {
		o.Band = DefaultBand
	}
	if o.Resamples <= 0 {
		o.Resamples = 400
	}
	var r Result
	r.Refused, r.Flagged = protocolDifferences(baseline, current, o.SameSetup)
	base := map[string]results.Workload{}
	for _, w := range baseline.Workloads {
		base[w.Label] = w
	}
	seen := map[string]bool{}
	for _, cw := range current.Workloads {
		seen[cw.Label] = true
		bw, ok := base[cw.Label]
		if !ok {
			r.OnlyInCurrent = append(r.OnlyInCurrent, cw.Label)
			continue
		}
		wo := o
		if Sequential(current) {
			// Measured against a baseline, look after look: the verdict is read at the
			// look the run stopped at, with the level spent there (sequential.go).
			wo.Alpha = LookAlpha(o.Alpha, Look(cw))
		}
		w := compareWorkload(baseline, current, bw, cw, len(r.Refused) > 0, wo)
		if Sequential(current) && w.Verdict != Incomparable {
			w.Notes = append(w.Notes, sequentialNote(current, cw, o))
		}
		r.Workloads = append(r.Workloads, w)
	}
	for _, bw := range baseline.Workloads {
		if !seen[bw.Label] {
			r.OnlyInBaseline = append(r.OnlyInBaseline, bw.Label)
		}
	}
	return r
}

// Regressed lists the workloads whose verdict is regressed.
func (r Result) Regressed() []Workload {
	var out []Workload
	for _, w := range r.Workloads {
		if w.Verdict == Regressed {
			out = append(out, w)
		}
	}
	return out
}

func compareWorkload(bd, cd *results.Document, bw, cw results.Workload, refused bool, o Options) Workload {
	axis := axisOf(cw)
	w := Workload{Label: cw.Label, Axis: axis}
	if axis == AxisConcurrency {
		w.BaselineCapacity, w.CurrentCapacity = bw.MaximumPassingConcurrency, cw.MaximumPassingConcurrency
	}
	if w.BaselineCapacity != nil && w.CurrentCapacity != nil {
		d := *w.CurrentCapacity - *w.BaselineCapacity
		w.CapacityChange = &d
	}
	w.BaselineMaximumPassing, _ = axis.boundary(bw)
	w.CurrentMaximumPassing, _ = axis.boundary(cw)
	if refused {
		w.Verdict = Incomparable
		w.Reason = "not compared: the protocols differ (see the refused differences)"
		return w
	}
	if ba := axisOf(bw); ba != axis {
		w.Verdict = Incomparable
		w.Reason = fmt.Sprintf("not compared: the baseline was searched by %s, the current run by %s", strings.ReplaceAll(string(ba), "_", " "), strings.ReplaceAll(string(axis), "_", " "))
		return w
	}
	if diffs := shapeDifferences(bw, cw); len(diffs) > 0 {
		w.Verdict = Incomparable
		w.Reason = "not compared: the workload's shape differs: " + strings.Join(diffs, "; ")
		return w
	}
	w.CapacitySteps = capacitySteps(axis, bw, cw)
	objectives := cd.Objectives()
	byVerdict := map[string][]string{}
	common := false
	for _, slo := range objectives {
		ob := compareObjective(axis, baselineSLO(bd, slo), slo, bw, cw, len(objectives), max(cd.AIPerf.IndependentTrialsPerBoundarySide, 1), o)
		if len(ob.Levels) > 0 {
			common = true
			byVerdict[ob.Verdict] = append(byVerdict[ob.Verdict], describe(axis, ob, o))
		}
		if ob.NoiseSource == "assumed" {
			w.Notes = append(w.Notes, fmt.Sprintf("%s: no level has repeated trials and no records are present; the noise assumed is %.0f %% per trial", ob.Key, FallbackNoise*100))
		}
		if ob.Decide != "" {
			w.Notes = append(w.Notes, ob.Key+": to decide, "+ob.Decide)
		}
		w.Objectives = append(w.Objectives, ob)
	}
	quiet := recordedNoise(bw, cw)
	w.Notes = append(w.Notes, quiet...)
	if len(quiet) > 0 {
		for i, ob := range w.Objectives {
			if ob.Verdict == Inconclusive && !strings.Contains(ob.Decide, "a quieter host") {
				w.Objectives[i].Decide += "; or a quieter host: the runs recorded noise beyond the trials' size (see the notes)"
				for j, n := range w.Notes {
					if n == ob.Key+": to decide, "+ob.Decide {
						w.Notes[j] = ob.Key + ": to decide, " + w.Objectives[i].Decide
					}
				}
			}
		}
	}
	contradiction, note := boundaryContradiction(axis, bw, cw)
	if note != "" {
		w.Notes = append(w.Notes, note)
	}
	capacity := capacityPhrase(w, bw, cw)
	if !common {
		w.Notes = append(w.Notes, "no level was measured in full by both runs; the verdict is read from the boundaries alone")
		switch {
		case contradiction != "" && w.CapacitySteps < 0:
			w.Verdict, w.Reason = Regressed, contradiction+"; "+capacity
		case contradiction != "":
			w.Verdict, w.Reason = Improved, contradiction+"; "+capacity
		default:
			w.Verdict = Inconclusive
			w.Reason = "no level in common and the boundaries do not contradict each other, so nothing can be told; " + capacity
			w.Notes = append(w.Notes, "to decide, measure both runs over a common range of levels (the same search bounds)")
		}
		return w
	}
	// The objectives decide first: regressed, then inconclusive, improved, unchanged.
	verdict := Unchanged
	for _, v := range []string{Regressed, Inconclusive, Improved} {
		if len(byVerdict[v]) > 0 {
			verdict = v
			break
		}
	}
	w.Verdict = verdict
	w.Reason = strings.Join(byVerdict[verdict], "; ")
	if verdict == Unchanged {
		w.Reason = fmt.Sprintf("within ± %.0f %%: %s", o.Band*100, w.Reason)
	}
	w.Reason += "; " + capacity
	// A capacity that moved by more than one level is never unchanged.
	switch {
	case w.CapacitySteps <= -2 && verdict != Regressed:
		if contradiction != "" {
			w.Verdict = Regressed
			w.Reason = fmt.Sprintf("%s, %d levels down: %s; the values at the common levels alone: %s", capacity, -w.CapacitySteps, contradiction, w.Reason)
		} else {
			w.Verdict = Inconclusive
			w.Reason = fmt.Sprintf("%s, %d levels down, which the values at the common levels do not show: %s", capacity, -w.CapacitySteps, w.Reason)
		}
	case w.CapacitySteps >= 2 && verdict != Regressed && verdict != Improved:
		if contradiction != "" {
			w.Verdict = Improved
			w.Reason = fmt.Sprintf("%s, %d levels up: %s; the values at the common levels alone: %s", capacity, w.CapacitySteps, contradiction, w.Reason)
		} else {
			w.Verdict = Inconclusive
			w.Reason = fmt.Sprintf("%s, %d levels up, which the values at the common levels do not show: %s", capacity, w.CapacitySteps, w.Reason)
		}
	}
	if w.Verdict != verdict && verdict == Unchanged {
		// The objectives' own verdict stays theirs; the workload's says why it differs.
		w.Notes = append(w.Notes, "the maximum passing level moved by more than one level, so the workload is not unchanged")
	}
	return w
}

// recordedNoise is what the runs recorded about their own noise as they ran: levels whose
// confirmation trials disagree beyond their size (trial_disagreements) and trials during which
// the load generator's machine was busy (another job, a hypervisor's steal). The comparison's
// noise estimate already holds the spread; these say where it came from.
func recordedNoise(bw, cw results.Workload) []string {
	var out []string
	for _, side := range []struct {
		name string
		w    results.Workload
	}{{"baseline", bw}, {"current run", cw}} {
		if n := len(side.w.TrialDisagreements); n > 0 {
			d := side.w.TrialDisagreements[0]
			out = append(out, fmt.Sprintf("the %s's confirmation trials disagree beyond their size at %d level(s) (%s: %s %.0f %% apart)",
				side.name, n, d.LevelTextOn(side.w.Axis()), d.Objective, d.SpreadPercent()))
		}
		busy := 0
		for _, t := range side.w.AllTrials {
			if h := t.Host; h != nil && (h.StealPercent >= 5 || (h.CPUs > 0 && h.LoadAvg1mEnd-h.LoadAvg1mStart > float64(h.CPUs))) {
				busy++
			}
		}
		if busy > 0 {
			out = append(out, fmt.Sprintf("the %s's load generator was busy during %d trial(s) (CPU steal or a rising load average)", side.name, busy))
		}
	}
	return out
}

// boundaryContradiction says where one run failed a level the other passed in every
// confirmation trial, assuming the capacity curve is monotone: the current run failing at or
// below the baseline's maximum passing level (or the baseline at or below the current's). Empty
// when the boundaries do not contradict each other, or when the run that failed passed a
// higher level itself: its own curve then goes up and down, and its boundary is noise (a
// burst of load on the host), not evidence; note says so.
func boundaryContradiction(a Axis, bw, cw results.Workload) (contradiction, note string) {
	bp, bf := a.boundary(bw)
	cp, cf := a.boundary(cw)
	switch {
	case bp != nil && cf != nil && levelKey(*cf) <= levelKey(*bp):
		if above := passedAbove(a, cw, *cf); above != nil {
			return "", fmt.Sprintf("the current run failed at %s, which the baseline passed, but passed %s itself: its curve goes up and down, so its boundary is not evidence", a.noun(*cf), a.noun(*above))
		}
		return fmt.Sprintf("the current run failed at %s, which the baseline passed", a.noun(*cf)), ""
	case cp != nil && bf != nil && levelKey(*bf) <= levelKey(*cp):
		if above := passedAbove(a, bw, *bf); above != nil {
			return "", fmt.Sprintf("the baseline failed at %s, which the current run passed, but passed %s itself: its curve goes up and down, so its boundary is not evidence", a.noun(*bf), a.noun(*above))
		}
		return fmt.Sprintf("the current run passed %s, which the baseline failed", a.noun(*bf)), ""
	}
	return "", ""
}

// passedAbove is the highest level above failed where w passed a full trial, or nil.
func passedAbove(a Axis, w results.Workload, failed float64) *float64 {
	var best *float64
	for _, t := range w.AllTrials {
		// Trials added for a comparison are not the search's: its boundary stands without them.
		if at := a.at(t); !t.StoppedEarly && t.ForComparison == 0 && t.Verdict == "pass" && levelKey(at) > levelKey(failed) && (best == nil || at > *best) {
			best = &at
		}
	}
	return best
}

// describe is one objective's change in words: "p95 time_to_first_token +15.2 % (noise ± 2.1 %,
// t = 6.8, needs 2.3; interval +10.4 to +20.1 %) at concurrency 8, 9: 812 → 935 ms at 9". The
// level quoted is the one whose own change is closest to the pooled one on the same side, so
// its figures point the way the verdict does.
func describe(a Axis, ob Objective, o Options) string {
	levels := make([]float64, len(ob.Levels))
	for i, l := range ob.Levels {
		levels[i] = l.At
	}
	if ob.NoiseSource == "identical" {
		return fmt.Sprintf("%s: the same trials in both documents (every value identical at %s), so no change", ob.Key, a.phrase(levels))
	}
	rep := representative(ob)
	extra := ""
	if ob.Verdict == Inconclusive {
		extra = fmt.Sprintf(", neither beyond the noise and %.0f %% nor within ± %.0f %%", o.MinChange*100, o.Band*100)
	}
	return fmt.Sprintf("%s %+.1f %% (noise ± %.1f %%, t = %.1f, needs %.1f; interval %+.1f to %+.1f %%%s) at %s: %s → %s %s at %s",
		ob.Key, ob.Change*100, ob.Noise*100, ob.T, ob.Critical, ob.Low*100, ob.High*100, extra, a.phrase(levels),
		num(rep.Baseline), num(rep.Current), ob.Unit, a.noun(rep.At))
}

// representative is the common level whose change has the pooled change's sign and is
// closest to it.
func representative(ob Objective) Level {
	best, bestDist := ob.Levels[len(ob.Levels)-1], math.Inf(1)
	pooled := math.Log1p(ob.Change)
	for _, l := range ob.Levels {
		d := math.Log(l.Current / l.Baseline)
		if math.IsNaN(d) || (pooled > 0 && d <= 0) || (pooled < 0 && d >= 0) {
			continue
		}
		// Ties go to the higher level, nearer the boundary.
		if dist := math.Abs(d - pooled); dist <= bestDist {
			best, bestDist = l, dist
		}
	}
	return best
}

func capacityPhrase(w Workload, bw, cw results.Workload) string {
	_, bf := w.Axis.boundary(bw)
	_, cf := w.Axis.boundary(cw)
	s := w.Axis.title() + " " + levelStr(w.Axis, w.BaselineMaximumPassing) + " → " + levelStr(w.Axis, w.CurrentMaximumPassing)
	if w.Axis != AxisConcurrency {
		s += " (first failing " + levelStr(w.Axis, bf) + " → " + levelStr(w.Axis, cf) + ")"
	}
	return s
}

// levelStr is a boundary on its axis, or "none".
func levelStr(a Axis, v *float64) string {
	if v == nil {
		return "none"
	}
	if a == AxisConcurrency {
		return fmt.Sprint(*v)
	}
	return a.noun(*v)
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// obs is one trial's transformed value of an objective.
type obs struct {
	x    float64 // ln value, negated where higher is better
	bvar float64 // bootstrap variance of x; NaN without records
	pass bool
}

// observations are the full trials' values of an objective, by level on the axis.
func observations(a Axis, slo results.SLO, w results.Workload, samples Samples, resamples int) map[float64][]obs {
	trials := w.AllTrials
	if len(trials) == 0 {
		for _, st := range w.Trials() {
			t := st.Trial
			if a == AxisConcurrency {
				t.Concurrency = st.Concurrency
			}
			trials = append(trials, t)
		}
	}
	higher := slo.Info().HigherIsBetter
	out := map[float64][]obs{}
	for _, t := range trials {
		at := a.at(t)
		if t.StoppedEarly || at <= 0 || t.Verdict == "error" || t.Correctness.Errors > 0 {
			continue
		}
		v, err := slo.Value(t)
		if err != nil {
			continue
		}
		x, ok := transform(v, higher)
		if !ok {
			continue
		}
		b := math.NaN()
		if samples != nil && !slo.Info().PerTrial {
			if vs, ok := samples(w.Label, t, slo.Metric); ok && len(vs) >= 2 {
				b = bootstrapVar(vs, slo.Percentile, higher, resamples, trialSeed(t, x))
			}
		}
		k := levelKey(at)
		out[k] = append(out[k], obs{x: x, bvar: b, pass: slo.Meets(v)})
	}
	// The trials of a level in a canonical order, so that sums over them do not depend on
	// the order the document lists them in.
	for _, os := range out {
		slices.SortFunc(os, func(a, b obs) int {
			if c := cmp.Compare(a.x, b.x); c != 0 {
				return c
			}
			return cmp.Compare(a.bvar, b.bvar)
		})
	}
	return out
}

// trialSeed seeds a trial's bootstrap from what the trial is (its level, index, kind and
// value), not where the document lists it.
func trialSeed(t results.Trial, x float64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%g/%g/%d/%s/%x", t.Concurrency, t.RequestRate, t.Speedup, t.Trial, t.Kind, math.Float64bits(x))
	return h.Sum64()
}

// transform is ln v, negated where higher is better; goodput (percent, may be 0) is floored
// at 0.1 %.
func transform(v float64, higher bool) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (v == 0 && !higher) {
		return 0, false
	}
	if higher {
		return -math.Log(max(v, 0.1)), true
	}
	return math.Log(v), true
}

// baselineSLO is the baseline's objective on the same metric and percentile as slo: its own
// threshold says whether the baseline's trials met it.
func baselineSLO(bd *results.Document, slo results.SLO) results.SLO {
	for _, b := range bd.Objectives() {
		if b.Key() == slo.Key() {
			return b
		}
	}
	return slo
}

func compareObjective(a Axis, bslo, slo results.SLO, bw, cw results.Workload, nObjectives, confirmations int, o Options) Objective {
	ob := Objective{Key: slo.Key(), Unit: slo.Unit(), Change: math.NaN(), Low: math.NaN(), High: math.NaN(), Noise: math.NaN(), T: math.NaN(), Verdict: Inconclusive}
	bo := observations(a, bslo, bw, o.Baseline, o.Resamples)
	co := observations(a, slo, cw, o.Current, o.Resamples)

	// Pooled within-level spread of both runs, and the mean bootstrap variance. Levels in
	// ascending order, never a map's order: a float sum's last digit depends on the order of
	// its terms, and a provider function must return the same bits every call.
	ss, df := 0.0, 0
	bsum, bn := 0.0, 0
	for _, m := range []map[float64][]obs{bo, co} {
		for _, c := range sortedLevels(m) {
			os := m[c]
			mean := meanX(os)
			for _, x := range os {
				ss += (x.x - mean) * (x.x - mean)
				if !math.IsNaN(x.bvar) {
					bsum += x.bvar
					bn++
				}
			}
			df += len(os) - 1
		}
	}
	variance, dof := 0.0, math.Inf(1)
	switch {
	case df > 0 && bn > 0:
		variance, dof, ob.NoiseSource = max(ss/float64(df), bsum/float64(bn)), float64(df), "trials+records"
	case df > 0:
		variance, dof, ob.NoiseSource = ss/float64(df), float64(df), "trials"
	case bn > 0:
		variance, ob.NoiseSource = bsum/float64(bn), "records"
	default:
		l := math.Log1p(FallbackNoise)
		variance, ob.NoiseSource = l*l, "assumed"
	}

	var levels []float64
	for _, c := range sortedLevels(co) {
		if _, ok := bo[c]; ok {
			levels = append(levels, c)
		}
	}
	if len(levels) == 0 {
		return ob
	}
	identical := sameObservations(bo, co)
	higher := slo.Info().HigherIsBetter
	sumW, sumWD, sumNB := 0.0, 0.0, 0.0
	ds, ws := make([]float64, len(levels)), make([]float64, len(levels))
	for i, c := range levels {
		b, cu := bo[c], co[c]
		sumNB += float64(len(b))
		wt := 1 / (1/float64(len(b)) + 1/float64(len(cu)))
		d := meanX(cu) - meanX(b)
		ds[i], ws[i] = d, wt
		sumW += wt
		sumWD += wt * d
		l := Level{At: c, Baseline: untransform(meanX(b), higher), Current: untransform(meanX(cu), higher),
			BaselineN: len(b), CurrentN: len(cu), BaselinePass: allPass(b), CurrentPass: allPass(cu)}
		if a == AxisConcurrency {
			l.Concurrency = int(c)
		}
		ob.Levels = append(ob.Levels, l)
	}
	d := sumWD / sumW
	if identical {
		// The same measurements on both sides (a document compared with itself or a
		// copy): not two samples of one server, one sample read twice, so the change is
		// exactly nothing, with no uncertainty.
		ob.Change, ob.Noise, ob.T, ob.Low, ob.High, ob.NoiseSource = 0, 0, 0, 0, 0, "identical"
		ob.Critical = tQuantile(1-o.Alpha/(2*float64(nObjectives)), dof)
		ob.Verdict = Unchanged
		return ob
	}
	minLog, band := math.Log1p(o.MinChange), math.Log1p(o.Band)
	judge := func(variance, dof float64) (se, critical float64, verdict string) {
		// The floor keeps documents with no spread from dividing by zero.
		se = max(math.Sqrt(variance/sumW), 1e-9)
		critical = tQuantile(1-o.Alpha/(2*float64(nObjectives)), dof)
		switch t := d / se; {
		case t >= critical && d >= minLog:
			return se, critical, Regressed
		case t <= -critical && d <= -minLog:
			return se, critical, Improved
		case d-critical*se > -band && d+critical*se < band:
			return se, critical, Unchanged
		}
		return se, critical, Inconclusive
	}
	se, critical, verdict := judge(variance, dof)
	// The levels' own disagreement: if the runs differ by noise the repeated trials did not
	// see (a level measured once, a burst of load on the machine), the levels scatter. With
	// three levels or more the scatter is a second estimate of the variance; where it is
	// significantly larger than the first (an F test at 5 %), it replaces it, with its own
	// degrees of freedom. A change that grows with load (a server with fewer slots: the same
	// at low load, far worse near its boundary) scatters the levels too, but all one way,
	// where noise scatters them both ways: against a regression or an improvement the
	// scatter stands only where a level moved against the pooled change beyond its own
	// noise. Against unchanged it always stands: one level that moved by more than the band
	// is a change, whatever the others did.
	if len(levels) >= 3 {
		ss := 0.0
		for i := range ds {
			ss += ws[i] * (ds[i] - d) * (ds[i] - d)
		}
		k := float64(len(levels) - 1)
		if between := ss / k; between > variance*fQuantile(0.95, k, min(dof, 1e6)) {
			opposed := false
			for i := range ds {
				own := math.Sqrt(variance / ws[i])
				opposed = opposed || ds[i]*d < 0 && math.Abs(ds[i]) >= critical*own
			}
			if opposed || (verdict != Regressed && verdict != Improved) {
				variance, dof = between, k
				ob.NoiseSource = "levels"
				se, critical, verdict = judge(variance, dof)
			}
		}
	}
	ob.Change, ob.Noise, ob.T, ob.Critical, ob.Verdict = math.Expm1(d), math.Expm1(se), d/se, critical, verdict
	ob.Low, ob.High = math.Expm1(d-critical*se), math.Expm1(d+critical*se)
	if verdict == Inconclusive {
		// With any number of current trials the weights approach the baseline's trials:
		// the standard error can shrink no further than this.
		floor := math.Sqrt(variance / sumNB)
		ob.Decide = decide(ob, d, se, floor, band, confirmations, sumNB/float64(len(levels)), o)
	}
	return ob
}

// decide says what would turn an inconclusive objective into a finding: the standard error
// must shrink until the interval leaves zero by MinChange or fits inside the band, and it
// shrinks with the square root of the trials at the common levels (and, for a percentile,
// of the requests per trial); a scatter of the levels beyond the trials' spread is the host.
//
// floor is the standard error with unlimited current trials: a benchmark measuring against
// this baseline cannot get below it, so where even it leaves the interval wider than the
// band, the baseline's own trials (perLevel a common level, on average) are what is missing.
func decide(ob Objective, d, se, floor, band float64, confirmations int, perLevel float64, o Options) string {
	target := (band - math.Abs(d)) / ob.Critical
	if math.Abs(d) >= math.Log1p(o.MinChange) || target <= 0 {
		target = math.Abs(d) / ob.Critical
	}
	var parts []string
	if target > 0 {
		factor := math.Ceil((se / target) * (se / target))
		switch {
		case factor <= 16:
			parts = append(parts, fmt.Sprintf("about %.0f× the trials at the common levels in both runs (confirmation_trials = %.0f instead of %d)", factor, math.Ceil(float64(confirmations)*factor), confirmations))
		default:
			parts = append(parts, "far more trials than a run makes (the change sits on the edge of the band)")
		}
	}
	parts = append(parts, "more measured_requests per trial (a percentile over more requests spreads less)")
	// Where the levels scatter, the host is what is missing, not the baseline's trials.
	if room := band - math.Abs(d); room > 0 && ob.Critical*floor >= room && ob.NoiseSource != "levels" && ob.NoiseSource != "assumed" {
		// floor² = s² / (levels · perLevel): a baseline of n trials a level gets the
		// interval within the room once critical · s / √(levels · n) < room.
		need := math.Ceil(perLevel * (ob.Critical * floor / room) * (ob.Critical * floor / room))
		parts = append(parts, fmt.Sprintf("a baseline with more trials: however many the current run adds, the baseline's own %.2g trials a level keep the interval at ± %.1f %% or wider, "+
			"more than the ± %.0f %% the band leaves; a baseline with about %.0f confirmation trials a level could be shown unchanged",
			perLevel, 100*math.Expm1(ob.Critical*floor), 100*math.Expm1(band), max(need, perLevel+1)))
	}
	if ob.NoiseSource == "levels" {
		parts = append(parts, "a quieter host: the levels scatter beyond what the trials at each level show (load on the machine during a run)")
	}
	return strings.Join(parts, "; or ")
}

// sameObservations reports whether two runs hold the same trials' values at the same levels
// (every value, bit for bit): the same measurements, not two runs of a server.
func sameObservations(a, b map[float64][]obs) bool {
	if len(a) != len(b) {
		return false
	}
	for c, as := range a {
		bs, ok := b[c]
		if !ok || len(as) != len(bs) {
			return false
		}
		for i := range as {
			if as[i].x != bs[i].x {
				return false
			}
		}
	}
	return true
}

// sortedLevels are m's levels, ascending.
func sortedLevels(m map[float64][]obs) []float64 {
	out := make([]float64, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func meanX(os []obs) float64 {
	s := 0.0
	for _, o := range os {
		s += o.x
	}
	return s / float64(len(os))
}

func allPass(os []obs) bool {
	return !slices.ContainsFunc(os, func(o obs) bool { return !o.pass })
}

func untransform(x float64, higher bool) float64 {
	if higher {
		return math.Exp(-x)
	}
	return math.Exp(x)
}

// Summary is the comparison in lines a person reads, one per workload ("8K / 1K: regressed:
// p95 time_to_first_token +15.2 % ..."), after the refused and flagged differences; it is
// what a failed gate prints.
func (r Result) Summary() string {
	var b strings.Builder
	for _, s := range r.Refused {
		fmt.Fprintf(&b, "not compared: %s\n", s)
	}
	for _, s := range r.Flagged {
		fmt.Fprintf(&b, "differs: %s\n", s)
	}
	for _, w := range r.Workloads {
		fmt.Fprintf(&b, "%s: %s: %s\n", w.Label, w.Verdict, w.Reason)
		if w.Verdict == Inconclusive {
			for _, n := range w.Notes {
				// What would decide it, and for a run measured against this baseline what it
				// spent trying.
				if strings.Contains(n, "to decide") || strings.HasPrefix(n, sequentialNotePrefix) {
					fmt.Fprintf(&b, "  %s\n", n)
				}
			}
		}
	}
	for _, l := range r.OnlyInBaseline {
		fmt.Fprintf(&b, "%s: only in the baseline\n", l)
	}
	for _, l := range r.OnlyInCurrent {
		fmt.Fprintf(&b, "%s: only in the current result\n", l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
