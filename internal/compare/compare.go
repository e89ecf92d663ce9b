// Package compare tells whether a capacity result is worse than a baseline result of the same
// protocol: per workload present in both, the two capacities and their difference, each
// objective's value at the concurrency levels both runs measured, and a verdict (regressed,
// improved or unchanged) that holds only when the change is larger than the noise the trials
// themselves show. It reads results documents and knows nothing of Terraform.
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
//     a two-sided false-alarm level of Alpha (split over the objectives). A workload regressed
//     when an objective's t passes the critical value and D is at least MinChange; improved
//     when an objective moved the other way likewise and none regressed; otherwise unchanged.
//   - Without any level measured by both runs, the boundaries decide: regressed when the
//     current run failed at a level at or below the baseline's maximum passing concurrency
//     (the baseline passed every confirmation trial there), improved the other way round.
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
	Regressed    = "regressed"
	Improved     = "improved"
	Unchanged    = "unchanged"
	Incomparable = "incomparable" // the protocols differ for this workload; see Result.Refused
)

// Defaults of Options.
const (
	// DefaultAlpha is the two-sided false-alarm level per workload: the chance that two runs of
	// the same server are called anything but unchanged, as the t test sees it.
	DefaultAlpha = 0.05
	// DefaultMinChange is the smallest relative change of an objective's value called a
	// regression or an improvement, however sure the test is: 5 %.
	DefaultMinChange = 0.05
	// FallbackNoise is the relative spread of one trial assumed when no level has repeated
	// trials and no records are present (every level measured once). It is what the project's
	// repeated runs show for a quiet server, and is flagged in the workload's notes.
	FallbackNoise = 0.10
)

// Options tune the comparison; the zero value uses the defaults.
type Options struct {
	Alpha     float64 // DefaultAlpha when 0
	MinChange float64 // DefaultMinChange when 0
	// Baseline and Current, when set, return one trial's per-request values of a metric (its
	// successful measured requests), read from the trial's records file; ok is false when the
	// trial has none. They feed the bootstrap estimate of noise.
	Baseline, Current Samples
	// Resamples is the bootstrap's number of resamples per trial; 400 when 0.
	Resamples int
}

// Samples returns a trial's per-request values of metric, or false when it has no records.
type Samples func(workload string, t results.Trial, metric string) ([]float64, bool)

// Result is the comparison of two documents.
type Result struct {
	// Refused lists the protocol differences that make the numbers different quantities, as
	// sentences; when not empty no workload has a verdict (Incomparable).
	Refused []string
	// Flagged lists differences of setup that leave the numbers comparable but that a reader
	// should know (another model, engine image, threshold, number of confirmation trials).
	Flagged []string
	// Workloads are those present in both documents, in the current document's order.
	Workloads []Workload
	// OnlyInBaseline and OnlyInCurrent are labels present in one document only.
	OnlyInBaseline, OnlyInCurrent []string
}

// Workload is the comparison of one workload.
type Workload struct {
	Label string
	// Capacities: the maximum passing concurrency (nil: even the minimum failed).
	BaselineCapacity, CurrentCapacity *int
	// CapacityChange is current − baseline, nil when either is nil.
	CapacityChange *int
	Objectives     []Objective
	Verdict        string
	// Reason says in one sentence why the verdict is what it is, with the figures.
	Reason string
	// Notes say what a reader should know about how the verdict was reached (no noise
	// estimate, no level in common, a refused workload).
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
	// Noise is the standard error of Change (relative), NaN without a common level.
	Noise float64
	// NoiseSource says where Noise came from: "trials" (spread of repeated trials),
	// "records" (bootstrap over per-request records), "trials+records", "levels" (the
	// common levels disagree more than the trials spread), or "assumed".
	NoiseSource string
	T           float64 // Change / Noise in log terms; NaN without a common level
	Critical    float64 // the t value Change must pass
	Verdict     string
}

// Level is one concurrency both runs measured in full, with the objective's mean value.
type Level struct {
	Concurrency               int
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
	if o.Resamples <= 0 {
		o.Resamples = 400
	}
	var r Result
	r.Refused, r.Flagged = protocolDifferences(baseline, current)
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
		r.Workloads = append(r.Workloads, compareWorkload(baseline, current, bw, cw, len(r.Refused) > 0, o))
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
	w := Workload{Label: cw.Label, BaselineCapacity: bw.MaximumPassingConcurrency, CurrentCapacity: cw.MaximumPassingConcurrency}
	if w.BaselineCapacity != nil && w.CurrentCapacity != nil {
		d := *w.CurrentCapacity - *w.BaselineCapacity
		w.CapacityChange = &d
	}
	if refused {
		w.Verdict = Incomparable
		w.Reason = "not compared: the protocols differ (see the refused differences)"
		return w
	}
	if diffs := shapeDifferences(bw, cw); len(diffs) > 0 {
		w.Verdict = Incomparable
		w.Reason = "not compared: the workload's shape differs: " + strings.Join(diffs, "; ")
		return w
	}
	objectives := cd.Objectives()
	worse, better := []string{}, []string{}
	common := false
	for _, slo := range objectives {
		ob := compareObjective(baselineSLO(bd, slo), slo, bw, cw, len(objectives), o)
		if len(ob.Levels) > 0 {
			common = true
		}
		if ob.NoiseSource == "assumed" {
			w.Notes = append(w.Notes, fmt.Sprintf("%s: no level has repeated trials and no records are present; the noise assumed is %.0f %% per trial", ob.Key, FallbackNoise*100))
		}
		switch ob.Verdict {
		case Regressed:
			worse = append(worse, describe(ob))
		case Improved:
			better = append(better, describe(ob))
		}
		w.Objectives = append(w.Objectives, ob)
	}
	switch {
	case !common:
		w.Notes = append(w.Notes, "no concurrency level was measured in full by both runs; the verdict is read from the boundaries alone")
		w.Verdict, w.Reason = boundaryVerdict(bw, cw)
	case len(worse) > 0:
		w.Verdict = Regressed
		w.Reason = strings.Join(worse, "; ") + "; " + capacityPhrase(w)
	case len(better) > 0:
		w.Verdict = Improved
		w.Reason = strings.Join(better, "; ") + "; " + capacityPhrase(w)
	default:
		w.Verdict = Unchanged
		parts := []string{}
		for _, ob := range w.Objectives {
			if len(ob.Levels) > 0 {
				parts = append(parts, describe(ob))
			}
		}
		w.Reason = strings.Join(parts, "; ") + "; " + capacityPhrase(w)
	}
	return w
}

// describe is one objective's change in words: "p95 time_to_first_token +15.2 % (± 2.1 %,
// t = 6.8) at concurrency 8, 9: 812 → 935 ms at 9".
func describe(ob Objective) string {
	levels := make([]string, len(ob.Levels))
	for i, l := range ob.Levels {
		levels[i] = fmt.Sprint(l.Concurrency)
	}
	last := ob.Levels[len(ob.Levels)-1]
	return fmt.Sprintf("%s %+.1f %% (noise ± %.1f %%, t = %.1f, needs %.1f) at concurrency %s: %s → %s %s at %d",
		ob.Key, ob.Change*100, ob.Noise*100, ob.T, ob.Critical, strings.Join(levels, ", "),
		num(last.Baseline), num(last.Current), ob.Unit, last.Concurrency)
}

func capacityPhrase(w Workload) string {
	return "capacity " + capStr(w.BaselineCapacity) + " → " + capStr(w.CurrentCapacity)
}

func capStr(c *int) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprint(*c)
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

// boundaryVerdict judges from the boundaries alone: a level the baseline passed in every
// confirmation trial that the current run failed is a regression (and the reverse an
// improvement), assuming the capacity curve is monotone.
func boundaryVerdict(bw, cw results.Workload) (string, string) {
	bp, bf, cp, cf := bw.MaximumPassingConcurrency, bw.FirstFailingConcurrency, cw.MaximumPassingConcurrency, cw.FirstFailingConcurrency
	phrase := fmt.Sprintf("capacity %s → %s (first failing %s → %s)", capStr(bp), capStr(cp), capStr(bf), capStr(cf))
	switch {
	case bp != nil && cf != nil && *cf <= *bp:
		return Regressed, fmt.Sprintf("the current run failed at concurrency %d, which the baseline passed; %s", *cf, phrase)
	case cp != nil && bf != nil && *bf <= *cp:
		return Improved, fmt.Sprintf("the current run passed concurrency %d, which the baseline failed; %s", *bf, phrase)
	}
	return Unchanged, "the boundaries do not contradict each other; " + phrase
}

// obs is one trial's transformed value of an objective.
type obs struct {
	level int
	x     float64 // ln value, negated where higher is better
	bvar  float64 // bootstrap variance of x; NaN without records
	pass  bool
}

// observations are the full trials' values of an objective, by level.
func observations(slo results.SLO, w results.Workload, samples Samples, resamples int) map[int][]obs {
	trials := w.AllTrials
	if len(trials) == 0 {
		for _, st := range w.Trials() {
			t := st.Trial
			t.Concurrency = st.Concurrency
			trials = append(trials, t)
		}
	}
	higher := slo.Info().HigherIsBetter
	out := map[int][]obs{}
	for _, t := range trials {
		if t.StoppedEarly || t.Concurrency < 1 || t.Verdict == "error" || t.Correctness.Errors > 0 {
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
		out[t.Concurrency] = append(out[t.Concurrency], obs{level: t.Concurrency, x: x, bvar: b, pass: slo.Meets(v)})
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
	fmt.Fprintf(h, "%d/%d/%s/%x", t.Concurrency, t.Trial, t.Kind, math.Float64bits(x))
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

func compareObjective(bslo, slo results.SLO, bw, cw results.Workload, nObjectives int, o Options) Objective {
	ob := Objective{Key: slo.Key(), Unit: slo.Unit(), Change: math.NaN(), Noise: math.NaN(), T: math.NaN(), Verdict: Unchanged}
	bo := observations(bslo, bw, o.Baseline, o.Resamples)
	co := observations(slo, cw, o.Current, o.Resamples)

	// Pooled within-level spread of both runs, and the mean bootstrap variance.
	ss, df := 0.0, 0
	bsum, bn := 0.0, 0
	// Levels in ascending order, never a map's order: a float sum's last digit depends on the
	// order of its terms, and a provider function must return the same bits every call.
	for _, m := range []map[int][]obs{bo, co} {
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

	var levels []int
	for _, c := range sortedLevels(co) {
		if _, ok := bo[c]; ok {
			levels = append(levels, c)
		}
	}
	if len(levels) == 0 {
		return ob
	}
	sumW, sumWD := 0.0, 0.0
	ds, ws := make([]float64, len(levels)), make([]float64, len(levels))
	for i, c := range levels {
		b, cu := bo[c], co[c]
		wt := 1 / (1/float64(len(b)) + 1/float64(len(cu)))
		d := meanX(cu) - meanX(b)
		ds[i], ws[i] = d, wt
		sumW += wt
		sumWD += wt * d
		ob.Levels = append(ob.Levels, Level{Concurrency: c,
			Baseline: untransform(meanX(b), slo.Info().HigherIsBetter), Current: untransform(meanX(cu), slo.Info().HigherIsBetter),
			BaselineN: len(b), CurrentN: len(cu), BaselinePass: allPass(b), CurrentPass: allPass(cu)})
	}
	d := sumWD / sumW
	// The levels' own disagreement: if the server changed, every level moved alike; if the
	// runs differ by noise the repeated trials did not see (a level measured once, a burst of
	// load on the machine), the levels scatter. With three levels or more the scatter is a
	// second estimate of the variance; where it is significantly larger than the first (an F
	// test at 5 %), it replaces it, with its own degrees of freedom.
	if len(levels) >= 3 {
		ss := 0.0
		for i := range ds {
			ss += ws[i] * (ds[i] - d) * (ds[i] - d)
		}
		k := float64(len(levels) - 1)
		if between := ss / k; between > variance*fQuantile(0.95, k, min(dof, 1e6)) {
			variance, dof = between, k
			ob.NoiseSource = "levels"
		}
	}
	se := math.Sqrt(variance / sumW)
	// The floor keeps identical documents (zero spread) from dividing by zero.
	se = max(se, 1e-9)
	ob.Change, ob.Noise, ob.T = math.Expm1(d), math.Expm1(se), d/se
	ob.Critical = tQuantile(1-o.Alpha/(2*float64(nObjectives)), dof)
	minLog := math.Log1p(o.MinChange)
	switch {
	case ob.T >= ob.Critical && d >= minLog:
		ob.Verdict = Regressed
	case ob.T <= -ob.Critical && d <= -minLog:
		ob.Verdict = Improved
	}
	return ob
}

// sortedLevels are m's levels, ascending.
func sortedLevels(m map[int][]obs) []int {
	out := make([]int, 0, len(m))
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
	}
	for _, l := range r.OnlyInBaseline {
		fmt.Fprintf(&b, "%s: only in the baseline\n", l)
	}
	for _, l := range r.OnlyInCurrent {
		fmt.Fprintf(&b, "%s: only in the current result\n", l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
