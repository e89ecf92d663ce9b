package results

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// check reports what a well-formed document cannot mean: a concurrency below 1, a maximum
// passing concurrency not below the first failing one, an objective's percentile outside
// (0, 100] or a threshold that is not positive, and a negative measurement anywhere in the
// workloads or the totals. Such a document was edited by hand or written by a broken tool;
// gating a deployment on it, or rendering it, would mislead. (JSON has no NaN, and Parse
// already refuses numbers beyond float64.)
func (r *reader) check(d *Document, root *node) {
	if d.SLO != nil {
		r.checkSLO("slo", *d.SLO)
	}
	for i, s := range d.SLOs {
		r.checkSLO(joinIndex("slos", i), s)
	}
	for i, w := range d.Workloads {
		p := joinIndex("workloads", i)
		for _, b := range []struct {
			key, noun string
			c         *int
		}{{"maximum_passing_concurrency", "concurrency", w.MaximumPassingConcurrency}, {"first_failing_concurrency", "concurrency", w.FirstFailingConcurrency},
			{"maximum_passing_users", "users", w.MaximumPassingUsers}, {"first_failing_users", "users", w.FirstFailingUsers}} {
			if b.c != nil && *b.c < 1 {
				r.fail(joinKey(p, b.key), "%s %d is below 1", b.noun, *b.c)
			}
		}
		if mp, ff := w.MaximumPassingUsers, w.FirstFailingUsers; mp != nil && ff != nil && *mp >= *ff {
			r.fail(joinKey(p, "first_failing_users"), "%d is not above maximum_passing_users %d", *ff, *mp)
		}
		if mp, ff := w.MaximumPassingConcurrency, w.FirstFailingConcurrency; mp != nil && ff != nil && *mp >= *ff {
			r.fail(joinKey(p, "first_failing_concurrency"), "%d is not above maximum_passing_concurrency %d: the first failing level lies above the highest passing one", *ff, *mp)
		}
		if mp, ff := w.MaximumPassingRequestRate, w.FirstFailingRequestRate; mp != nil && ff != nil && *mp >= *ff {
			r.fail(joinKey(p, "first_failing_request_rate"), "%g is not above maximum_passing_request_rate %g", *ff, *mp)
		}
		if mp, ff := w.MaximumPassingSpeedup, w.FirstFailingSpeedup; mp != nil && ff != nil && *mp >= *ff {
			r.fail(joinKey(p, "first_failing_speedup"), "%g is not above maximum_passing_speedup %g", *ff, *mp)
		}
		for _, side := range []struct {
			key    string
			trials []Trial
		}{{"passing_trials", w.PassingTrials}, {"failing_trials", w.FailingTrials}, {"trials", w.AllTrials}} {
			for j := range side.trials {
				r.checkTrialConcurrency(joinIndex(joinKey(p, side.key), j), root, i, side.key, j)
			}
		}
	}
	if ws, ok := root.get("workloads"); ok {
		r.nonNegative("workloads", ws)
	}
	if ct, ok := root.get("correctness_total"); ok {
		r.nonNegative("correctness_total", ct)
	}
}

func (r *reader) checkSLO(p string, s SLO) {
	if m, ok := LookupMetric(s.Metric); !ok || !m.PerTrial {
		if !(s.Percentile > 0 && s.Percentile <= 100) {
			r.fail(joinKey(p, "percentile"), "%v is outside (0, 100]", s.Percentile)
		}
	}
	if !(s.ThresholdMs > 0 && s.ThresholdMs < maxMeasurement) {
		r.fail(joinKey(p, "threshold_ms"), "%v is not a positive threshold below %g", s.ThresholdMs, maxMeasurement)
	}
}

// checkTrialConcurrency refuses a trial whose concurrency key is present and below 1 (the
// typed value cannot tell an absent key from 0, the tree can).
func (r *reader) checkTrialConcurrency(p string, root *node, w int, key string, j int) {
	ws, _ := root.get("workloads")
	wn := ws.items[w]
	list, _ := wn.get(key)
	if list == nil || list.kind != kindArray || j >= len(list.items) {
		return
	}
	c, ok := list.items[j].get("concurrency")
	if !ok || c.kind != kindNumber {
		return
	}
	if f, err := strconv.ParseFloat(c.text, 64); err == nil && f < 1 {
		r.fail(joinKey(p, "concurrency"), "concurrency %s is below 1", c.text)
	}
}

// maxMeasurement bounds every number of a result: 1e15 ms is 31 000 years, 1e15 tokens more
// than any benchmark sends. Beyond it a value is corrupt, and would spill hundreds of digits
// into renderings.
const maxMeasurement = 1e15

// nonNegative refuses negative and absurdly large numbers under n: every count, duration,
// rate and token number of a result is at least zero and below maxMeasurement.
func (r *reader) nonNegative(p string, n *node) {
	switch n.kind {
	case kindNumber:
		f, err := strconv.ParseFloat(n.text, 64)
		switch {
		case err != nil:
		case f < 0:
			r.fail(p, "%s is negative; no measurement can be", n.text)
		case f >= maxMeasurement:
			r.fail(p, "%s is too large to be a measurement", n.text)
		}
	case kindObject:
		for i, k := range n.keys {
			if k == "backlog_growth" || k == "clock_offset_ms" {
				// An open-loop trial's backlog may shrink: a fitted slope, of either sign. A
				// runner pod's clock may be behind pod 0's as well as ahead.
				continue
			}
			if v := n.vals[i]; k == "later_turn_cached_percent" && v.kind == kindNumber && v.text == legacyUnknownCachedPercent {
				continue // "unknown" in documents written before the key was optional
			}
			r.nonNegative(joinKey(p, k), n.vals[i])
		}
	case kindArray:
		for i, it := range n.items {
			r.nonNegative(joinIndex(p, i), it)
		}
	}
}

// checkFace refuses what no run can have written, each at its JSON path: more failed
// requests than measured ones, statistics out of order (a p50 above the p99, a minimum above
// the maximum or the mean), a confirmation trial at another concurrency than its side's, a
// prompt shared between warmups and measured requests in a passing trial (its cache was warm:
// the pass means nothing), an objective on a metric the table does not know, and control or
// escape characters in a label or name a rendering or terminal shows.
func (r *reader) checkFace(d *Document) {
	for i, s := range d.SLOs {
		r.checkObjectiveNames(joinIndex("slos", i), s)
	}
	if d.SLO != nil {
		r.checkObjectiveNames("slo", *d.SLO)
	}
	e := d.Experiment
	for _, f := range []struct{ key, v string }{
		{"experiment.image_tag", e.ImageTag}, {"experiment.image_digest", e.ImageDigest}, {"experiment.model", e.Model},
		{"experiment.checkpoint", e.Checkpoint}, {"experiment.hardware", e.Hardware}, {"experiment.driver", e.Driver},
		{"experiment.kernel", e.Kernel}, {"experiment.accelerator", e.Accelerator}, {"aiperf.version", d.AIPerf.Version}, {"aiperf.arrival_pattern", d.AIPerf.ArrivalPattern},
		{"aiperf.cache_policy", d.AIPerf.CachePolicy}, {"correctness_total.uniqueness_scope", d.CorrectnessTotal.UniquenessScope},
	} {
		r.printable(f.key, f.v)
	}
	if e.SpeculativeMode != nil {
		r.printable("experiment.speculative_mode.algorithm", e.SpeculativeMode.Algorithm)
	}
	objectives := d.Objectives()
	for i, w := range d.Workloads {
		p := joinIndex("workloads", i)
		r.printable(joinKey(p, "label"), w.Label)
		for j, b := range w.BoundBy {
			r.printable(joinIndex(joinKey(p, "bound_by"), j), b)
		}
		r.minMax(joinKey(p, "server_prompt_tokens"), w.ServerPromptTokens)
		for _, side := range []struct {
			key    string
			level  *int
			trials []Trial
		}{{"passing_trials", w.MaximumPassingConcurrency, w.PassingTrials}, {"failing_trials", w.FirstFailingConcurrency, w.FailingTrials}, {"trials", nil, w.AllTrials}} {
			for j, t := range side.trials {
				tp := joinIndex(joinKey(p, side.key), j)
				if side.level != nil && t.Concurrency != 0 && t.Concurrency != *side.level {
					field := "maximum_passing_concurrency"
					if side.key == "failing_trials" {
						field = "first_failing_concurrency"
					}
					r.fail(joinKey(tp, "concurrency"), "%d is not the side's level: %s ran at %s %d, where every trial of the side ran", t.Concurrency, side.key, field, *side.level)
				}
				if t.ForComparison > 0 {
					switch {
					case side.key != "trials":
						r.fail(joinKey(tp, "for_comparison"), "a trial added for a comparison is listed only among the workload's trials, never on a side of the boundary")
					case t.Kind != "confirmation" || t.StoppedEarly:
						r.fail(joinKey(tp, "for_comparison"), "a trial added for a comparison is a full trial: kind confirmation, not stopped early")
					}
				}
				r.checkTrialFace(tp, objectives, t)
			}
		}
		r.checkDisagreements(p, objectives, w)
	}
}

// checkDisagreements refuses a trial_disagreements entry that the workload's own trials do
// not bear out: an objective the document does not have, a level on another axis or where
// no two confirmation trials ran, trials that did not run there, values that are not those
// trials' own, intervals that overlap or are out of order. A reader believes the entry only
// as far as the trials it names; compare() prints its spread in percent of low.
func (r *reader) checkDisagreements(p string, objectives []SLO, w Workload) {
	if len(w.TrialDisagreements) == 0 {
		return
	}
	ax := w.Axis()
	levels := noiseLevels(w)
	var keys []string
	for _, s := range objectives {
		if noiseObjective(s) {
			keys = append(keys, strconv.Quote(s.Key()))
		}
	}
	for i, d := range w.TrialDisagreements {
		dp := joinIndex(joinKey(p, "trial_disagreements"), i)
		var obj *SLO
		for k, s := range objectives {
			if noiseObjective(s) && s.Key() == d.Objective {
				obj = &objectives[k]
			}
		}
		if obj == nil {
			r.fail(joinKey(dp, "objective"), "%s is not a percentile objective of this document; its objectives with an interval are: %s",
				strconv.QuoteToASCII(d.Objective), orNone(strings.Join(keys, ", ")))
		}
		if !(d.Low > 0) {
			r.fail(joinKey(dp, "low"), "%s is not above 0: the spread is in percent of the lowest trial's value, and a measured percentile is positive", formatFloat(d.Low))
		}
		if !(d.High > d.Low) {
			r.fail(joinKey(dp, "high"), "%s is not above low %s: high is the highest confirmation trial's value", formatFloat(d.High), formatFloat(d.Low))
		}
		switch {
		case outOfOrder(d.Low, d.LowUpper):
			r.fail(joinKey(dp, "low_upper"), "%s is below low %s: the lowest trial's interval holds its own value", formatFloat(d.LowUpper), formatFloat(d.Low))
		case outOfOrder(d.HighLower, d.High):
			r.fail(joinKey(dp, "high_lower"), "%s is above high %s: the highest trial's interval holds its own value", formatFloat(d.HighLower), formatFloat(d.High))
		case !(d.LowUpper < d.HighLower):
			r.fail(joinKey(dp, "high_lower"), "%s is not above low_upper %s: trials disagree only where their intervals do not overlap", formatFloat(d.HighLower), formatFloat(d.LowUpper))
		}
		if d.LowTrial == d.HighTrial {
			r.fail(joinKey(dp, "high_trial"), "%d is low_trial too: a disagreement is between two confirmation trials", d.HighTrial)
		}
		lv := d.levels(ax)
		for _, o := range lv[1:] {
			if o.at != 0 {
				r.fail(joinKey(dp, o.key), "%s is set, but workload %s was searched by %s: a disagreement's level is a %s", formatFloat(o.at), strconv.QuoteToASCII(w.Label), ax.Name(), lv[0].key)
			}
		}
		lp := joinKey(dp, lv[0].key)
		li := slices.IndexFunc(levels, func(l *noiseLevel) bool { return l.at == lv[0].at })
		if li < 0 || len(levels[li].trials) < 2 {
			r.fail(lp, "%s: no two confirmation trials of workload %s ran at this level (levels with two or more: %s)",
				formatFloat(lv[0].at), strconv.QuoteToASCII(w.Label), orNone(noiseLevelList(levels)))
			continue
		}
		l := levels[li]
		var ns []int
		for _, side := range []struct {
			key   string
			trial int
			value float64
		}{{"low", d.LowTrial, d.Low}, {"high", d.HighTrial, d.High}} {
			ti := slices.IndexFunc(l.trials, func(t Trial) bool { return t.Trial == side.trial })
			if ti < 0 {
				r.fail(joinKey(dp, side.key+"_trial"), "%d is not a confirmation trial that finished all its requests at %s", side.trial, ax.Text(l.at))
				continue
			}
			if obj == nil {
				continue
			}
			e, ok := estimateNoise(*obj, l.trials[ti])
			switch {
			case !ok:
				r.fail(joinKey(dp, side.key+"_trial"), "trial %d at %s records no %s with an interval", side.trial, ax.Text(l.at), d.Objective)
			case outOfOrder(side.value, e.v) || outOfOrder(e.v, side.value):
				r.fail(joinKey(dp, side.key), "%s is not trial %d's %s at %s, which is %s", formatFloat(side.value), side.trial, d.Objective, ax.Text(l.at), formatFloat(e.v))
			default:
				ns = append(ns, e.n)
			}
		}
		if len(ns) == 2 && d.Requests != min(ns[0], ns[1]) {
			r.fail(joinKey(dp, "requests"), "%d is not the fewer successful measured requests of trials %d and %d (%d)", d.Requests, d.LowTrial, d.HighTrial, min(ns[0], ns[1]))
		}
	}
}

func noiseLevelList(levels []*noiseLevel) string {
	var out []string
	for _, l := range levels {
		if len(l.trials) >= 2 {
			out = append(out, formatFloat(l.at))
		}
	}
	return strings.Join(out, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// checkHost refuses a load generator's machine no /proc can describe: fewer than one CPU, a
// share of the CPUs' time above 100 %, more time stolen than was busy (steal is not idle).
// Negative figures are nonNegative's.
func (r *reader) checkHost(p string, h HostLoad) {
	if h.CPUs < 1 {
		r.fail(joinKey(p, "cpus"), "%d: the machine that ran the load had at least one CPU", h.CPUs)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"busy_percent", h.BusyPercent}, {"steal_percent", h.StealPercent}} {
		if outOfOrder(f.v, 100) {
			r.fail(joinKey(p, f.key), "%s is above 100: it is a share of all CPUs' time", formatFloat(f.v))
		}
	}
	if outOfOrder(h.StealPercent, h.BusyPercent) {
		r.fail(joinKey(p, "steal_percent"), "%s is above busy_percent %s: time a hypervisor took is time the CPUs were not idle", formatFloat(h.StealPercent), formatFloat(h.BusyPercent))
	}
}

func (r *reader) checkObjectiveNames(p string, s SLO) {
	if _, ok := LookupMetric(s.Metric); !ok {
		r.fail(joinKey(p, "metric"), "%s is not a metric: one of %s", strconv.QuoteToASCII(s.Metric), strings.Join(MetricNames(), ", "))
	}
	r.printable(joinKey(p, "comparison"), s.Comparison)
}

func (r *reader) checkTrialFace(p string, objectives []SLO, t Trial) {
	c := t.Correctness
	if c.Errors > c.ProfilingRecords {
		r.fail(joinKey(p, "correctness.errors"), "%d failed requests in a trial of %d measured requests (profiling_records)", c.Errors, c.ProfilingRecords)
	}
	if d := c.DegenerateOutputs; d != nil {
		dp := joinKey(p, "correctness.degenerate_outputs")
		switch {
		case d.Checked > c.ProfilingRecords:
			r.fail(joinKey(dp, "checked"), "%d judged outputs in a trial of %d measured requests (profiling_records)", d.Checked, c.ProfilingRecords)
		case d.Requests > d.Checked:
			r.fail(joinKey(dp, "requests"), "%d degenerate outputs of %d judged (checked)", d.Requests, d.Checked)
		case max(d.Empty, d.RepeatedCodePoint, d.IdenticalAcrossPrompts, d.RepeatedToken) > d.Requests || min(d.Empty, d.RepeatedCodePoint, d.IdenticalAcrossPrompts, d.RepeatedToken) < 0:
			r.fail(dp, "a rule's count (%d empty, %d repeated_code_point, %d identical_across_prompts, %d repeated_token) is negative or above the degenerate requests (%d)",
				d.Empty, d.RepeatedCodePoint, d.IdenticalAcrossPrompts, d.RepeatedToken, d.Requests)
		}
	}
	if c.HTTP200 > c.ProfilingRecords+c.WarmupRecords {
		r.fail(joinKey(p, "correctness.http_200"), "%d HTTP 200 responses to %d requests (warmup_records + profiling_records)", c.HTTP200, c.ProfilingRecords+c.WarmupRecords)
	}
	if c.WarmupProfilePromptOverlap > 0 && Verdict(objectives, t) == VerdictPass {
		r.fail(joinKey(p, "correctness.warmup_profile_prompt_overlap"), "%d prompts were sent both as warmups and measured in a passing trial: the measured ones met a warm cache, so the pass does not hold; it must be 0", c.WarmupProfilePromptOverlap)
	}
	for _, st := range []struct {
		key string
		s   *Stats
	}{{"ttft_ms", &t.TTFTMs}, {"request_latency_ms", &t.RequestLatencyMs}, {"itl_ms", &t.ITLMs}, {"per_user_output_throughput_tps", &t.PerUserOutputThroughputTPS},
		{"ttst_ms", t.TTSTMs}, {"inter_chunk_latency_ms", t.InterChunkLatencyMs}, {"connection_setup_ms", t.ConnectionSetupMs}} {
		if st.s != nil {
			r.statsInOrder(joinKey(p, st.key), *st.s)
		}
	}
	r.checkPods(joinKey(p, "pods"), t)
	r.minMax(joinKey(p, "server_prompt_tokens"), t.ServerPromptTokens)
	r.minMax(joinKey(p, "server_completion_tokens"), t.ServerCompletionTokens)
	for k, s := range t.SLOs {
		sp := joinIndex(joinKey(p, "slos"), k)
		if _, ok := LookupMetric(s.Metric); !ok {
			r.fail(joinKey(sp, "metric"), "%s is not a metric: one of %s", strconv.QuoteToASCII(s.Metric), strings.Join(MetricNames(), ", "))
		}
	}
	r.printable(joinKey(p, "records_file"), t.RecordsFile)
	if cl := t.Client; cl != nil {
		// The mark must be what the figures say against the limits the trial states: a
		// hand-edited bound would move the boundary.
		if over := cl.Over(); cl.Bound != (len(over) > 0) || stringList(over) != stringList(cl.BoundBy) {
			r.fail(joinKey(p, "client.bound"), "bound %t with bound_by %s, but the figures past their limits are %s", cl.Bound, stringList(cl.BoundBy), stringList(over))
		}
		if cpu := cl.CPU; cpu != nil {
			switch cpu.Source {
			case CPUFromCgroupV2, CPUFromCgroupV1, CPUFromProcess:
			default:
				r.fail(joinKey(p, "client.cpu.source"), "%s is not one of %s, %s, %s", strconv.QuoteToASCII(cpu.Source), CPUFromCgroupV2, CPUFromCgroupV1, CPUFromProcess)
			}
		}
	}
	for k, e := range t.ErrorSummary {
		r.printable(joinKey(joinIndex(joinKey(p, "error_summary"), k), "kind"), e.Kind)
	}
	if a := t.Accelerators; a != nil {
		for k, d := range a.Devices {
			dp := joinIndex(joinKey(p, "accelerators.devices"), k)
			r.printable(joinKey(dp, "exporter"), d.Exporter)
			r.printable(joinKey(dp, "device"), d.Device)
		}
		for k, w := range a.Warnings {
			r.printable(joinIndex(joinKey(p, "accelerators.warnings"), k), w)
		}
	}
	if t.Host != nil {
		r.checkHost(joinKey(p, "host"), *t.Host)
	}
	if t.Server != nil {
		r.printable(joinKey(p, "server.source"), t.Server.Source)
		for _, l := range []struct {
			key string
			v   *ServerLatency
		}{{"ttft_ms", t.Server.TTFTMs}, {"request_latency_ms", t.Server.RequestLatencyMs}, {"queue_time_ms", t.Server.QueueTimeMs}} {
			if l.v != nil && outOfOrder(l.v.P50, l.v.P95) {
				r.fail(joinKey(p, "server."+l.key+".p50"), "%s is above p95 %s", formatFloat(l.v.P50), formatFloat(l.v.P95))
			}
		}
	}
}

// outOfOrder says lo > hi beyond what float rounding of an interpolation or a mean can
// explain.
func outOfOrder(lo, hi float64) bool {
	return lo-hi > 1e-9*max(math.Abs(lo), math.Abs(hi), 1)
}

// statsInOrder refuses statistics no set of values has: percentiles that fall as the rank
// rises, a minimum above a percentile or the mean, a maximum below them.
func (r *reader) statsInOrder(p string, s Stats) {
	prevKey, prev, has := "", 0.0, false
	for i, q := range statPercentiles {
		v, ok := s.Percentile(q)
		if !ok {
			continue
		}
		key := StatKeys[4+i]
		if has && outOfOrder(prev, v) {
			r.fail(joinKey(p, prevKey), "%s is above %s %s: percentiles rise with the rank", formatFloat(prev), key, formatFloat(v))
		}
		prevKey, prev, has = key, v, true
	}
	if !s.Has("min") || !s.Has("max") {
		return
	}
	if outOfOrder(s.Min, s.Max) {
		r.fail(joinKey(p, "min"), "%s is above max %s", formatFloat(s.Min), formatFloat(s.Max))
		return
	}
	for i, key := range StatKeys {
		if key == "min" || key == "max" || key == "std" || !s.Has(key) {
			continue
		}
		v := *s.field(i)
		switch {
		case outOfOrder(s.Min, v):
			r.fail(joinKey(p, key), "%s is below min %s", formatFloat(v), formatFloat(s.Min))
		case outOfOrder(v, s.Max):
			r.fail(joinKey(p, key), "%s is above max %s", formatFloat(v), formatFloat(s.Max))
		}
	}
}

func (r *reader) minMax(p string, m MinMax) {
	if outOfOrder(m.Min, m.Max) {
		r.fail(joinKey(p, "min"), "%s is above max %s", formatFloat(m.Min), formatFloat(m.Max))
	}
}

// printable refuses control characters (escape sequences included) and the bidirectional
// overrides that make a terminal or a page show other text than the document holds, in a
// label or name that renderings, diagnostics and terminals show.
func (r *reader) printable(p, s string) {
	if i := strings.IndexFunc(s, unprintable); i >= 0 {
		r.fail(p, "%s holds the control character %U at byte %d; labels and names are printable text", strconv.QuoteToASCII(s), []rune(s[i:])[0], i)
	}
}

func unprintable(c rune) bool {
	return unicode.IsControl(c) || c >= 0x202A && c <= 0x202E || c >= 0x2066 && c <= 0x2069 || c == 0x200E || c == 0x200F
}

// checkPods checks a trial's spread over pods: every pod's share in pod order, the shares
// summing to the trial's concurrency or users and holding every measured request it recorded.
func (r *reader) checkPods(p string, t Trial) {
	pt := t.Pods
	if pt == nil {
		return
	}
	if pt.Pods < 2 {
		r.fail(joinKey(p, "pods"), "a trial spread over pods has at least 2, got %d", pt.Pods)
	}
	if len(pt.Shares) != pt.Pods {
		r.fail(joinKey(p, "shares"), "%d shares for %d pods: every pod has one, in pod order", len(pt.Shares), pt.Pods)
	}
	if pt.StartSkewMs < 0 || pt.ClockUncertaintyMs < 0 {
		r.fail(joinKey(p, "start_skew_ms"), "start skew %s ms and clock uncertainty %s ms cannot be negative", formatFloat(pt.StartSkewMs), formatFloat(pt.ClockUncertaintyMs))
	}
	conc, users, measured := 0, 0, 0
	for k, sh := range pt.Shares {
		sp := joinIndex(joinKey(p, "shares"), k)
		if sh.Pod != k {
			r.fail(joinKey(sp, "pod"), "pod %d in place %d: the shares are in pod order", sh.Pod, k)
		}
		if min(sh.Concurrency, sh.Users, sh.WarmupRequests, sh.MeasuredRequests) < 0 {
			r.fail(sp, "a share's concurrency, users and requests cannot be negative")
		}
		conc, users, measured = conc+sh.Concurrency, users+sh.Users, measured+sh.MeasuredRequests
	}
	switch {
	case t.Concurrency > 0 && t.OpenLoop == nil && conc != t.Concurrency:
		r.fail(joinKey(p, "shares"), "the pods' concurrency sums to %d, the trial's is %d", conc, t.Concurrency)
	case t.Users > 0 && users != t.Users:
		r.fail(joinKey(p, "shares"), "the pods' users sum to %d, the trial's are %d", users, t.Users)
	case measured < t.Correctness.ProfilingRecords:
		r.fail(joinKey(p, "shares"), "the pods were given %d measured requests, but the trial recorded %d (profiling_records)", measured, t.Correctness.ProfilingRecords)
	}
}
