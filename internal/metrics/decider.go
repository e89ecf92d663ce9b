package metrics

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Decision is what can be said of a trial's SLO verdict so far.
type Decision int

// The decisions, in the order a trial can reach them: undecided until enough is known.
const (
	Undecided Decision = iota
	DecidedPass
	DecidedFail
)

func (d Decision) String() string {
	switch d {
	case DecidedPass:
		return "pass"
	case DecidedFail:
		return "fail"
	}
	return "undecided"
}

// Decider decides a trial's verdict against one percentile objective as early as it is
// certain, so a probe trial can stop sending load the moment its outcome cannot change.
// TrialDecider combines one per objective.
//
// It knows the trial has n measured requests and is told each request's metric value as
// soon as it is known (Observe; TTFT at first content) and each request's completion
// (Complete; which also supplies the value for request latency and ITL). The percentile is
// non-decreasing in every value, and metric values are durations in [0, +Inf), so the
// percentile can end up no lower than with every unknown value at 0 and no higher than with
// every unknown value at +Inf. Those two bounds are computed with the same arithmetic as
// Percentile, and the decision is taken when both fall on the same side of the threshold
// (for a metric where higher is better, such as per-user throughput, the sides swap):
// exactly as early as possible, and never contradicted by the full computation. (For p95
// over 64, rank h = 59.85: the fail is certain once 64−⌊h⌋ = 5 values are at or past the
// threshold, or earlier when the 4th-largest alone lifts the interpolation past it.)
//
// A failed request decides a fail at once (see Evaluate). For the same reason a pass is
// only certain when every request has completed successfully: any outstanding one could
// still fail. So early stopping saves time on failing probes, which is where it matters.
//
// One premise: every outstanding request yields a value. A successful request without one
// (ITL with fewer than two output tokens, impossible with ignore_eos and max_tokens ≥ 2)
// leaves the population and may shift a decision taken before it, except a fail, which
// stays.
type Decider struct {
	slo       results.SLO
	n         int
	values    map[int]float64 // by RequestResult.Index
	sorted    []float64       // the same values, ascending
	completed int             // measured requests finished successfully
	skipped   int             // of those, ones without a value
	failed    int
	decision  Decision
}

// NewDecider starts deciding a trial of n measured requests against slo, a per-request
// metric's objective (an empty comparison is the metric's default).
func NewDecider(slo results.SLO, n int) (*Decider, error) {
	slo = slo.WithDefaults()
	if err := slo.Validate("slo"); err != nil {
		return nil, err
	}
	if slo.Info().PerTrial {
		return nil, fmt.Errorf("decider: %s is per trial; use NewTrialDecider", slo.Metric)
	}
	if n < 1 {
		return nil, fmt.Errorf("decider: a trial needs at least one measured request, got %d", n)
	}
	return &Decider{slo: slo, n: n, values: map[int]float64{}}, nil
}

// Decision is the current decision.
func (d *Decider) Decision() Decision { return d.decision }

// Observe records the metric value of the measured request with the given index as soon as
// it is known. Observing the same index again replaces its value.
func (d *Decider) Observe(index int, valueMs float64) Decision {
	d.set(index, valueMs)
	return d.evaluate()
}

// Complete records a finished request. Warmups are ignored. A failed request decides a
// fail. A cancelled request contributes only what it measured before it was stopped (its
// TTFT if first content arrived) and never counts as completed.
func (d *Decider) Complete(r load.RequestResult) Decision {
	switch {
	case r.Warmup:
	case r.Cancelled:
		if d.slo.Metric == results.MetricTTFT && !r.FirstContent.IsZero() && !r.Sent.IsZero() {
			d.set(r.Index, TTFTMs(r))
		}
	case !Succeeded(r):
		d.failed++
	default:
		d.completed++
		if v, ok := RequestValue(d.slo.Metric, r); ok {
			d.set(r.Index, v)
		} else {
			d.unset(r.Index)
			d.skipped++
		}
	}
	return d.evaluate()
}

// Bounds are the lowest and highest values the SLO percentile can still take (hi may be
// +Inf), for progress reports.
func (d *Decider) Bounds() (lo, hi float64) { return d.bounds(nil) }

// WithPending evaluates the decision as if outstanding requests were known to have values
// of at least atLeastMs (one per request; a request waiting 12 s for its first token has a
// TTFT over 12 s), without recording them. A probe can poll it to stop at the moment the
// fail became certain instead of when the slow responses finally arrive.
func (d *Decider) WithPending(atLeastMs ...float64) Decision {
	if d.decision != Undecided {
		return d.decision
	}
	if d.slo.Info().HigherIsBetter {
		return Undecided // waiting bounds a higher-is-better metric from no side that helps
	}
	lo, _ := d.bounds(atLeastMs)
	if !d.slo.Meets(lo) {
		return DecidedFail
	}
	return Undecided
}

func (d *Decider) set(index int, v float64) {
	d.unset(index)
	d.values[index] = v
	i, _ := slices.BinarySearch(d.sorted, v)
	d.sorted = slices.Insert(d.sorted, i, v)
}

func (d *Decider) unset(index int) {
	old, ok := d.values[index]
	if !ok {
		return
	}
	delete(d.values, index)
	i, _ := slices.BinarySearch(d.sorted, old)
	d.sorted = slices.Delete(d.sorted, i, i+1)
}

// population is how many values the final percentile will be taken over. More values than
// announced (a caller miscounting n) widen it rather than produce nonsense.
func (d *Decider) population() int { return max(d.n-d.skipped, len(d.sorted)) }

// bounds fills the unknown values with their extremes: pending lower bounds then 0 from
// below, +Inf from above.
func (d *Decider) bounds(pending []float64) (lo, hi float64) {
	n := d.population()
	unknown := n - len(d.sorted)
	if n == 0 {
		return 0, 0
	}
	low := make([]float64, 0, n)
	low = append(low, d.sorted...)
	for i := range unknown {
		v := 0.0
		if i < len(pending) && pending[i] > 0 {
			v = pending[i]
		}
		low = append(low, v)
	}
	slices.Sort(low)
	high := make([]float64, 0, n)
	high = append(high, d.sorted...)
	for range unknown {
		high = append(high, math.Inf(1))
	}
	return percentileSorted(low, d.slo.Percentile), percentileSorted(high, d.slo.Percentile)
}

// best and worst order the bounds by the objective's direction.
func (d *Decider) bestWorst(lo, hi float64) (best, worst float64) {
	if d.slo.Info().HigherIsBetter {
		return hi, lo
	}
	return lo, hi
}

func (d *Decider) evaluate() Decision {
	if d.decision == DecidedFail {
		return d.decision
	}
	d.decision = Undecided
	if d.failed > 0 {
		d.decision = DecidedFail
		return d.decision
	}
	d.decision = d.byValues()
	return d.decision
}

// byValues decides on the metric's values alone, leaving failed requests aside, so a
// TrialDecider can say which objective a trial missed.
func (d *Decider) byValues() Decision {
	finished := d.completed >= d.n
	if d.population() == 0 {
		// Every request finished without a value: nothing shows the SLO was met.
		if finished {
			return DecidedFail
		}
		return Undecided
	}
	best, worst := d.bestWorst(d.bounds(nil))
	switch {
	case !d.slo.Meets(best):
		return DecidedFail
	case finished && d.slo.Meets(worst):
		return DecidedPass
	}
	return Undecided
}

// goodputDecider decides a goodput objective: the share of measured requests that are
// good lies between good/n (every unknown bad) and (n − bad)/n (every unknown good).
type goodputDecider struct {
	slo       results.SLO
	others    []results.SLO
	n         int
	completed int
	good, bad int
}

func (g *goodputDecider) complete(r load.RequestResult) {
	switch {
	case r.Warmup, r.Cancelled:
	case good(g.others, r):
		g.completed++
		g.good++
	default:
		g.completed++
		g.bad++
	}
}

// byValues decides with pendingBad requests still in flight known to be bad already (a
// request waiting past a TTFT threshold).
func (g *goodputDecider) byValues(pendingBad int) Decision {
	lo := 100 * float64(g.good) / float64(g.n)
	hi := 100 * float64(g.n-g.bad-pendingBad) / float64(g.n)
	switch {
	case !g.slo.Meets(hi):
		return DecidedFail
	case g.completed >= g.n && g.slo.Meets(lo):
		return DecidedPass
	}
	return Undecided
}

// objectiveDecider is one objective's part of a TrialDecider.
type objectiveDecider struct {
	pct     *Decider
	goodput *goodputDecider
}

func (o objectiveDecider) decision() Decision {
	if o.goodput != nil {
		return o.goodput.byValues(0)
	}
	return o.pct.byValues()
}

// TrialDecider decides a trial against every objective as early as it is certain: a fail
// as soon as one objective's fail is (or a request failed), a pass once every objective's
// pass is.
type TrialDecider struct {
	slos       []results.SLO
	objectives []objectiveDecider
	n          int
	completed  int
	failed     int
	decision   Decision
}

// NewTrialDecider starts deciding a trial of n measured requests against slos.
func NewTrialDecider(slos []results.SLO, n int) (*TrialDecider, error) {
	slos = withDefaults(slos)
	if err := results.ValidateSLOs(slos); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("decider: a trial needs at least one measured request, got %d", n)
	}
	d := &TrialDecider{slos: slos, n: n}
	for _, s := range slos {
		if s.Info().PerTrial {
			d.objectives = append(d.objectives, objectiveDecider{goodput: &goodputDecider{slo: s, others: slos, n: n}})
			continue
		}
		pd, err := NewDecider(s, n)
		if err != nil {
			return nil, err
		}
		d.objectives = append(d.objectives, objectiveDecider{pct: pd})
	}
	return d, nil
}

// Decision is the current decision.
func (d *TrialDecider) Decision() Decision { return d.decision }

// FirstContent records a measured request's first content (its TTFT is known).
func (d *TrialDecider) FirstContent(r load.RequestResult) Decision {
	for _, o := range d.objectives {
		if o.pct != nil && o.pct.slo.Metric == results.MetricTTFT {
			o.pct.set(r.Index, TTFTMs(r))
		}
	}
	return d.evaluate(0)
}

// Complete records a finished request (see Decider.Complete).
func (d *TrialDecider) Complete(r load.RequestResult) Decision {
	switch {
	case r.Warmup, r.Cancelled:
	case !Succeeded(r):
		d.failed++
	default:
		d.completed++
	}
	for _, o := range d.objectives {
		if o.goodput != nil {
			o.goodput.complete(r)
		} else {
			o.pct.Complete(r)
		}
	}
	return d.evaluate(0)
}

// WithPending evaluates the decision as if the requests in flight at now had waited as long
// as they have (a request waiting 12 s for its first token has a TTFT over 12 s, and so does
// its request latency), without recording anything. A probe polls it to stop at the moment
// the fail became certain instead of when the slow responses finally arrive.
func (d *TrialDecider) WithPending(now time.Time, inFlight []load.InFlight) Decision {
	if d.decision != Undecided {
		return d.decision
	}
	pendingBad := 0
	for _, f := range inFlight {
		waited := float64(now.Sub(f.Sent)) / float64(time.Millisecond)
		for _, s := range d.slos {
			if b, ok := waitBound(s.Metric, f, waited); ok && !s.Meets(b) {
				pendingBad++
				break
			}
		}
	}
	for _, o := range d.objectives {
		if o.goodput != nil {
			if o.goodput.byValues(pendingBad) == DecidedFail {
				return DecidedFail
			}
			continue
		}
		var pending []float64
		for _, f := range inFlight {
			if b, ok := waitBound(o.pct.slo.Metric, f, float64(now.Sub(f.Sent))/float64(time.Millisecond)); ok {
				pending = append(pending, b)
			}
		}
		if len(pending) > 0 && o.pct.WithPending(pending...) == DecidedFail {
			return DecidedFail
		}
	}
	return Undecided
}

// waitBound is the lower bound a request in flight puts on a metric by having waited: TTFT
// for one without a first token, request latency for any. The other metrics have none.
func waitBound(metric string, f load.InFlight, waitedMs float64) (float64, bool) {
	switch {
	case metric == results.MetricTTFT && !f.FirstContent, metric == results.MetricRequestLatency:
		return waitedMs, true
	}
	return 0, false
}

func (d *TrialDecider) evaluate(pendingBad int) Decision {
	if d.decision == DecidedFail {
		return d.decision
	}
	if d.failed > 0 {
		d.decision = DecidedFail
		return d.decision
	}
	all := DecidedPass
	for _, o := range d.objectives {
		var v Decision
		if o.goodput != nil {
			v = o.goodput.byValues(pendingBad)
		} else {
			v = o.pct.byValues()
		}
		switch v {
		case DecidedFail:
			d.decision = DecidedFail
			return d.decision
		case Undecided:
			all = Undecided
		}
	}
	d.decision = all
	return d.decision
}
