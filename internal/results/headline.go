package results

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Headline is what a workload's own trials say about it: the numbers a gate reads
// (maximum_passing_concurrency and the rest) and each trial's verdict. DeriveHeadline is the
// one place they are worked out; the benchmark writes them from it, and every reader of a
// document (Parse, hence the data source, the report functions and llmserve-recompute)
// refuses a document that states anything else.
type Headline struct {
	MaximumPassingConcurrency *int
	FirstFailingConcurrency   *int
	// MaximumPassingRequestRate and FirstFailingRequestRate are the boundary of a search by
	// request rate (headline_rate.go); nil for a concurrency search.
	MaximumPassingRequestRate *float64
	FirstFailingRequestRate   *float64
	// MaximumPassingSpeedup and FirstFailingSpeedup are the boundary of a replay searched
	// by speedup (headline_rate.go); nil otherwise.
	MaximumPassingSpeedup *float64
	FirstFailingSpeedup   *float64
	// MaximumPassingUsers and FirstFailingUsers are the boundary of a search by users
	// (headline_users.go); nil otherwise.
	MaximumPassingUsers *int
	FirstFailingUsers   *int
	// Bound is whether the capacity lies outside what the search tried
	// (capacity_bounded_by_search is Bound != BoundNone).
	Bound Bound
	// BoundBy names what failed the first failing level's confirmation trials: each missed
	// objective's Key in the objectives' order, then "errors" when requests failed.
	BoundBy []string
	// Verdicts are the verdict of each entry of the workload's trials (AllTrials), in order.
	Verdicts []string
	// ClientBound says a trial's load generator was the bottleneck (verdict client_bound)
	// at or below the levels that would otherwise be the boundary: no level from there up
	// is a capacity of the server (client_bound).
	ClientBound bool
}

// BoundByErrors is the bound_by entry that says requests failed.
const BoundByErrors = "errors"

// Trial verdicts as documents spell them; VerdictUnknown is never written: it says an
// objective cannot be judged from what the trial recorded.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictError   = "error"
	VerdictUnknown = "n/a"
	// VerdictClientBound: the load generator was the bottleneck (Trial.Client), so the
	// trial says nothing of the server, pass or fail.
	VerdictClientBound = "client_bound"
)

// Met says whether trial t met objective s, from what the trial records: ok is false when
// it records nothing to judge by.
//
// A full trial is judged by its value of the objective against the threshold (the value it
// states for the objective, else the matching statistic), not by the met flag it states; a
// stated miss with a value of 0 is a trial where no request had a value (ITL of one-token
// outputs), which nothing shows to meet the objective. A trial stopped early has values over
// the requests that finished, while its decision covered those still running (a request
// waiting past the threshold): its stated flag is the decision, as it is for a trial with
// failed requests (each failure counts as a miss); a probe cut short that
// states no value missed an objective without measuring it, so it cannot say which.
func (s SLO) Met(t Trial) (met, ok bool) {
	for _, r := range t.SLOs {
		if r.Metric == s.Metric && r.Percentile == s.Percentile {
			// With failed requests the decision counted each failure as a miss of the
			// percentile (a user who got an error did not get the SLO), so a value over the
			// successful requests alone may be within the threshold while the objective was
			// missed: the stated flag is the decision.
			if t.StoppedEarly || !r.Met && r.Value == 0 || t.Correctness.Errors > 0 {
				return r.Met, true
			}
			return s.Meets(r.Value), true
		}
	}
	if t.StoppedEarly {
		return false, false
	}
	v, err := s.Value(t)
	if err != nil || s.Info().Name == "" {
		return false, false
	}
	return s.Meets(v), true
}

// Verdict is one trial's verdict against every objective: "client_bound" when its load
// generator was the bottleneck (ClientTrial.Bound), whatever it measured; "error" when measured requests
// failed or most outputs were degenerate (DegenerateOutputs.Most), whatever the percentiles of the successful ones say (the benchmark never passes
// such a trial, and calls it the server's failure rather than an objective's miss); else
// "fail" when an objective was missed (see SLO.Met) or a probe was cut short without a
// value; else "pass", or "n/a" when an objective cannot be judged from what the trial
// recorded.
func Verdict(slos []SLO, t Trial) string {
	if t.ClientBound() {
		return VerdictClientBound
	}
	if t.Correctness.Errors > 0 || t.Correctness.DegenerateOutputs.Most() {
		return VerdictError
	}
	if len(slos) == 0 {
		return VerdictUnknown
	}
	unknown := false
	for _, s := range slos {
		met, ok := s.Met(t)
		switch {
		case !ok:
			unknown = true
		case !met:
			return VerdictFail
		}
	}
	switch {
	case t.OpenLoop != nil && len(t.OpenLoop.Missed) > 0:
		// An open-loop trial passes only if the server also kept up with its rate.
		return VerdictFail
	case unknown && t.StoppedEarly:
		// A probe stops early on a certain fail; one that states no value waited out
		// requests already past a threshold.
		return VerdictFail
	case unknown:
		return VerdictUnknown
	}
	return VerdictPass
}

// headlineTrial is one trial the derivation reads, with where it sits in the document.
type headlineTrial struct {
	path        string // JSON path under the workload, e.g. trials[3]
	concurrency int
	rate        float64 // an open-loop trial's request rate
	speedup     float64 // a replay trial's speedup
	users       int     // a users trial's users
	probe       bool
	trial       Trial
	verdict     string
}

// DeriveHeadline works out a workload's headline from its trials and the objectives, the
// rule the search reports by: a level fails when any of its confirmation trials does not
// pass (a level with none yet is judged by its probe); the first failing concurrency is the
// lowest failing level, and the maximum passing concurrency the highest passing level below
// it (or the highest passing level when none failed). Trials are the workload's list of
// every trial (AllTrials), less those added for a comparison (Trial.ForComparison); a
// document older than that list (the reference's shape) is judged by its two sides, each trial at its side's boundary. The error names a trial no
// verdict can be derived for (an objective it records nothing of).
func DeriveHeadline(objectives []SLO, w Workload) (Headline, error) {
	var h Headline
	trials := headlineTrials(w)
	for i := range trials {
		ht := &trials[i]
		if ht.verdict = Verdict(objectives, ht.trial); ht.verdict == VerdictUnknown {
			return h, fmt.Errorf("%s: no verdict can be derived: the trial records no value of %s", ht.path, unjudged(objectives, ht.trial))
		}
		if len(w.AllTrials) > 0 {
			h.Verdicts = append(h.Verdicts, ht.verdict)
		}
	}
	// Trials added for a comparison with a baseline have verdicts but never move the
	// boundary: the capacity is the search's, whatever baseline a run was given.
	trials = slices.DeleteFunc(trials, func(ht headlineTrial) bool { return ht.trial.ForComparison > 0 })
	if w.byUsers() {
		h.deriveUsers(objectives, trials)
		return h, nil
	}
	if w.byRate() {
		h.deriveRate(objectives, trials)
		return h, nil
	}
	h.MaximumPassingConcurrency, h.FirstFailingConcurrency, h.ClientBound = boundary(trials, func(ht headlineTrial) (int, bool) { return ht.concurrency, ht.concurrency >= 1 })
	h.Bound = Workload{MaximumPassingConcurrency: h.MaximumPassingConcurrency, FirstFailingConcurrency: h.FirstFailingConcurrency}.SearchBound()
	if ff := h.FirstFailingConcurrency; ff != nil {
		h.BoundBy = boundBy(objectives, trials, func(ht headlineTrial) bool { return ht.concurrency == *ff })
	}
	return h, nil
}

// boundary applies the search's rule to the levels the key places trials at (a concurrency
// or a request rate; ok false: no level): a level fails when any of its confirmation trials
// does not pass, or by its probe when it has none; the first failing level is the lowest
// failing one, the maximum passing the highest passing level below it. A client-bound trial
// judges nothing, and its level caps what the others can say: only levels below the lowest
// client-bound one count, and unless one of them failed, the boundary was not found (both
// nil, clientBound true): the passes below it are no capacity, since the client could not
// show where the server stops.
func boundary[K int | float64](trials []headlineTrial, key func(headlineTrial) (K, bool)) (maxPassing, firstFailing *K, clientBound bool) {
	type level struct {
		conf, confPass int
		probe, probeOK bool
	}
	levels := map[K]*level{}
	var bound *K // the lowest level with a client-bound trial
	for _, ht := range trials {
		if k, ok := key(ht); ok && ht.verdict == VerdictClientBound && (bound == nil || k < *bound) {
			bound = &k
		}
	}
	for _, ht := range trials {
		k, ok := key(ht)
		if !ok {
			continue // no level to place it at; Parse refuses such a trial
		}
		if bound != nil && k >= *bound {
			continue
		}
		l := levels[k]
		if l == nil {
			l = &level{}
			levels[k] = l
		}
		pass := ht.verdict == VerdictPass
		if ht.probe {
			l.probe, l.probeOK = pass, true
			continue
		}
		l.conf++
		if pass {
			l.confPass++
		}
	}
	order := make([]K, 0, len(levels))
	for k := range levels {
		order = append(order, k)
	}
	slices.Sort(order)
	belief := func(k K) (pass, ok bool) {
		switch l := levels[k]; {
		case l.conf > 0:
			return l.confPass == l.conf, true
		case l.probeOK:
			return l.probe, true
		}
		return false, false
	}
	for _, k := range order {
		if pass, ok := belief(k); ok && !pass {
			firstFailing = &k
			break
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		k := order[i]
		if firstFailing != nil && k >= *firstFailing {
			continue
		}
		if pass, ok := belief(k); ok && pass {
			maxPassing = &k
			break
		}
	}
	if bound != nil && firstFailing == nil {
		return nil, nil, true
	}
	return maxPassing, firstFailing, false
}

// boundBy lists what the first failing level's confirmation trials missed (atLevel picks
// them): each objective's key in the objectives' order, BoundByErrors when requests failed,
// then the open-loop guards that failed (completion_rate, backlog).
func boundBy(objectives []SLO, trials []headlineTrial, atLevel func(headlineTrial) bool) []string {
	missed := make([]bool, len(objectives))
	errs := false
	var guards []string
	for _, ht := range trials {
		if ht.probe || !atLevel(ht) {
			continue
		}
		errs = errs || ht.trial.Correctness.Errors > 0
		for i, s := range objectives {
			if met, ok := s.Met(ht.trial); ok && !met {
				missed[i] = true
			}
		}
		if ol := ht.trial.OpenLoop; ol != nil {
			for _, g := range ol.Missed {
				if !slices.Contains(guards, g) {
					guards = append(guards, g)
				}
			}
		}
	}
	var out []string
	for i, s := range objectives {
		if missed[i] {
			out = append(out, s.Key())
		}
	}
	if errs {
		out = append(out, BoundByErrors)
	}
	for _, g := range []string{"completion_rate", "backlog"} {
		if slices.Contains(guards, g) {
			out = append(out, g)
		}
	}
	return out
}

// Apply writes the headline into w: its boundary, bound_by and its trials' verdicts.
func (h Headline) Apply(w *Workload) {
	w.MaximumPassingConcurrency, w.FirstFailingConcurrency, w.BoundBy = h.MaximumPassingConcurrency, h.FirstFailingConcurrency, h.BoundBy
	w.MaximumPassingRequestRate, w.FirstFailingRequestRate = h.MaximumPassingRequestRate, h.FirstFailingRequestRate
	w.MaximumPassingSpeedup, w.FirstFailingSpeedup = h.MaximumPassingSpeedup, h.FirstFailingSpeedup
	w.MaximumPassingUsers, w.FirstFailingUsers = h.MaximumPassingUsers, h.FirstFailingUsers
	w.ClientBound = h.ClientBound
	for i := range w.AllTrials {
		if i < len(h.Verdicts) {
			w.AllTrials[i].Verdict = h.Verdicts[i]
		}
	}
}

func headlineTrials(w Workload) []headlineTrial {
	var out []headlineTrial
	if len(w.AllTrials) > 0 {
		for i, t := range w.AllTrials {
			out = append(out, headlineTrial{path: joinIndex("trials", i), concurrency: t.Concurrency, rate: t.RequestRate, speedup: t.Speedup, users: t.Users, probe: t.Kind == "probe", trial: t})
		}
		return out
	}
	side := func(key string, boundary *int, ts []Trial) {
		for i, t := range ts {
			c := t.Concurrency
			if c == 0 && boundary != nil {
				c = *boundary
			}
			out = append(out, headlineTrial{path: joinIndex(key, i), concurrency: c, rate: t.RequestRate, speedup: t.Speedup, users: t.Users, trial: t})
		}
	}
	side("passing_trials", w.MaximumPassingConcurrency, w.PassingTrials)
	side("failing_trials", w.FirstFailingConcurrency, w.FailingTrials)
	return out
}

func unjudged(objectives []SLO, t Trial) string {
	var out []string
	for _, s := range objectives {
		if _, ok := s.Met(t); !ok {
			out = append(out, s.Key())
		}
	}
	return strings.Join(out, ", ")
}

// Contradiction is a value a document states that its own trials contradict.
type Contradiction struct {
	Workload string
	// Path is the JSON path of the stated value, e.g. workloads[0].maximum_passing_concurrency.
	Path string
	// Field is the value's name as a reader knows it: the document's key, or
	// capacity_bounded_by_search, which documents do not state but readers compute.
	Field           string
	Stated, Derived string
}

func (c Contradiction) Error() string {
	return fmt.Sprintf("%s: workload %q: %s states %s, but its trials give %s", c.Path, c.Workload, c.Field, c.Stated, c.Derived)
}

// CheckHeadline lists what workload i of a document states that its trials contradict: its
// boundary, the bound it implies (capacity_bounded_by_search), bound_by, each trial's
// verdict and each objective's met flag. None when the trials cannot be judged
// (DeriveHeadline's error): there is nothing to check them against.
func CheckHeadline(objectives []SLO, i int, w Workload) []Contradiction {
	h, err := DeriveHeadline(objectives, w)
	if err != nil {
		return nil
	}
	p := joinIndex("workloads", i)
	var out []Contradiction
	add := func(path, field, stated, derived string) {
		if stated != derived {
			out = append(out, Contradiction{Workload: w.Label, Path: path, Field: field, Stated: stated, Derived: derived})
		}
	}
	add(joinKey(p, "maximum_passing_concurrency"), "maximum_passing_concurrency", intOrNull(w.MaximumPassingConcurrency), intOrNull(h.MaximumPassingConcurrency))
	add(joinKey(p, "first_failing_concurrency"), "first_failing_concurrency", intOrNull(w.FirstFailingConcurrency), intOrNull(h.FirstFailingConcurrency))
	if w.byRate() {
		add(joinKey(p, "maximum_passing_request_rate"), "maximum_passing_request_rate", floatOrNull(w.MaximumPassingRequestRate), floatOrNull(h.MaximumPassingRequestRate))
		add(joinKey(p, "first_failing_request_rate"), "first_failing_request_rate", floatOrNull(w.FirstFailingRequestRate), floatOrNull(h.FirstFailingRequestRate))
	}
	if w.byUsers() {
		add(joinKey(p, "maximum_passing_users"), "maximum_passing_users", intOrNull(w.MaximumPassingUsers), intOrNull(h.MaximumPassingUsers))
		add(joinKey(p, "first_failing_users"), "first_failing_users", intOrNull(w.FirstFailingUsers), intOrNull(h.FirstFailingUsers))
	}
	if w.bySpeedup() {
		add(joinKey(p, "maximum_passing_speedup"), "maximum_passing_speedup", floatOrNull(w.MaximumPassingSpeedup), floatOrNull(h.MaximumPassingSpeedup))
		add(joinKey(p, "first_failing_speedup"), "first_failing_speedup", floatOrNull(w.FirstFailingSpeedup), floatOrNull(h.FirstFailingSpeedup))
	}
	add(p, "capacity_bounded_by_search", strconv.FormatBool(w.SearchBound() != BoundNone), strconv.FormatBool(h.Bound != BoundNone))
	add(joinKey(p, "client_bound"), "client_bound", strconv.FormatBool(w.ClientBound), strconv.FormatBool(h.ClientBound))
	// Documents older than bound_by and the list of every trial state neither; an empty
	// bound_by is not written.
	if len(w.BoundBy) > 0 || len(w.AllTrials) > 0 {
		add(joinKey(p, "bound_by"), "bound_by", stringList(w.BoundBy), stringList(h.BoundBy))
	}
	for j, t := range w.AllTrials {
		tp := joinIndex(joinKey(p, "trials"), j)
		if t.Verdict != "" && j < len(h.Verdicts) {
			add(joinKey(tp, "verdict"), "verdict", strconv.Quote(t.Verdict), strconv.Quote(h.Verdicts[j]))
		}
	}
	for _, side := range []struct {
		key    string
		trials []Trial
	}{{"passing_trials", w.PassingTrials}, {"failing_trials", w.FailingTrials}, {"trials", w.AllTrials}} {
		for j, t := range side.trials {
			if t.StoppedEarly {
				continue
			}
			for k, r := range t.SLOs {
				for _, s := range objectives {
					if s.Metric != r.Metric || s.Percentile != r.Percentile {
						continue
					}
					if met, _ := s.Met(t); met != r.Met {
						add(joinKey(joinIndex(joinKey(joinIndex(joinKey(p, side.key), j), "slos"), k), "met"), "met of "+s.Key(),
							strconv.FormatBool(r.Met), fmt.Sprintf("%t (its value %s %s against %s)", met, formatFloat(r.Value), s.Unit(), s.String()))
					}
				}
			}
		}
	}
	return out
}

func intOrNull(c *int) string {
	if c == nil {
		return "null"
	}
	return strconv.Itoa(*c)
}

func stringList(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
