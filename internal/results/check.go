package results

import "strconv"

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
			key string
			c   *int
		}{{"maximum_passing_concurrency", w.MaximumPassingConcurrency}, {"first_failing_concurrency", w.FirstFailingConcurrency}} {
			if b.c != nil && *b.c < 1 {
				r.fail(joinKey(p, b.key), "concurrency %d is below 1", *b.c)
			}
		}
		if mp, ff := w.MaximumPassingConcurrency, w.FirstFailingConcurrency; mp != nil && ff != nil && *mp >= *ff {
			r.fail(joinKey(p, "first_failing_concurrency"), "%d is not above maximum_passing_concurrency %d: the first failing level lies above the highest passing one", *ff, *mp)
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
			r.nonNegative(joinKey(p, k), n.vals[i])
		}
	case kindArray:
		for i, it := range n.items {
			r.nonNegative(joinIndex(p, i), it)
		}
	}
}
