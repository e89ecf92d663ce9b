package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
)

// Decision is what can be said of a trial's SLO verdict so far.
type Decision int

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

// Decider decides a trial's verdict as early as it is certain, so a probe trial can stop
// sending load the moment its outcome cannot change.
//
// It knows the trial has n measured requests and is told each request's metric value as
// soon as it is known (Observe; TTFT at first content) and each request's completion
// (Complete; which also supplies the value for request latency and ITL). The percentile is
// non-decreasing in every value, and metric values are durations in [0, +Inf), so the
// percentile can end up no lower than with every unknown value at 0 and no higher than with
// every unknown value at +Inf. Those two bounds are computed with the same arithmetic as
// Percentile, and the decision is taken when both fall on the same side of the threshold:
// exactly as early as possible, and never contradicted by the full computation. (For p95
// over 64, rank h = 59.85: the fail is certain once 64−⌊h⌋ = 5 values are at or past the
// threshold, or earlier when the 4th-largest alone lifts the interpolation past it.)
//
// A failed request decides a fail at once (see SLO.Verdict). For the same reason a pass is
// only certain when every request has completed successfully: any outstanding one could
// still fail. So early stopping saves time on failing probes, which is where it matters.
//
// One premise: every outstanding request yields a value. A successful request without one
// (ITL with fewer than two output tokens, impossible with ignore_eos and max_tokens ≥ 2)
// leaves the population and may shift a decision taken before it, except a fail, which
// stays.
type Decider struct {
	slo       SLO
	n         int
	values    map[int]float64 // by Record.Index
	sorted    []float64       // the same values, ascending
	completed int             // measured requests finished successfully
	skipped   int             // of those, ones without a value
	failed    int
	decision  Decision
}

// NewDecider starts deciding a trial of n measured requests against slo.
func NewDecider(slo SLO, n int) (*Decider, error) {
	if err := slo.Validate(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("decider: a trial needs at least one measured request, got %d", n)
	}
	return &Decider{slo: slo, n: n, values: map[int]float64{}}, nil
}

// Decision is the current decision.
func (d *Decider) Decision() Decision { return d.decision }

func (d *Decider) known() int { return len(d.sorted) }

// Observe records the metric value of the measured request with the given index as soon as
// it is known. Observing the same index again replaces its value.
func (d *Decider) Observe(index int, valueMs float64) Decision {
	d.set(index, valueMs)
	return d.evaluate()
}

// Complete records a finished request. Warmups are ignored. A failed request decides a
// fail. A cancelled request contributes only what it measured before it was stopped (its
// TTFT if first content arrived) and never counts as completed.
func (d *Decider) Complete(r load.Record) Decision {
	switch {
	case r.Warmup:
	case r.Cancelled:
		if d.slo.Metric == MetricTTFT && !r.FirstContent.IsZero() && !r.Sent.IsZero() {
			d.set(r.Index, TTFTMs(r))
		}
	case !Succeeded(r):
		d.failed++
	default:
		d.completed++
		if v, ok := d.slo.RequestValueMs(r); ok {
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
	lo, _ := d.bounds(atLeastMs)
	if d.failsAt(lo) {
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

func (d *Decider) failsAt(lo float64) bool { return !d.slo.Meets(lo) }

func (d *Decider) evaluate() Decision {
	if d.decision == DecidedFail {
		return d.decision
	}
	d.decision = Undecided
	if d.failed > 0 {
		d.decision = DecidedFail
		return d.decision
	}
	finished := d.completed >= d.n
	if d.population() == 0 {
		// Every request finished without a value: nothing shows the SLO was met.
		if finished {
			d.decision = DecidedFail
		}
		return d.decision
	}
	lo, hi := d.bounds(nil)
	switch {
	case d.failsAt(lo):
		d.decision = DecidedFail
	case finished && d.slo.Meets(hi):
		d.decision = DecidedPass
	}
	return d.decision
}
