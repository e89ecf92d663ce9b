package search

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// The search by request rate (open loop) reuses the boundary search over levels: the rates it
// may try form a geometric ladder, Min, Min·(1+t), Min·(1+t)², … up to Max (the top rung
// clipped to Max), and the search runs over the rungs' numbers exactly as it runs over
// concurrencies, probes, walk, guard band, confirmations and resume included. Neighbouring
// rungs differ by the tolerance t at most, so the maximum passing rate and the first failing
// one, both confirmed, bracket the capacity to that relative tolerance.

// Ladder is the rates a rate search may try, in requests per second.
type Ladder struct {
	Min, Max  float64
	Tolerance float64 // relative step between neighbouring rungs, e.g. 0.05
}

// MaxRungs bounds a ladder's length; the search touches only the rungs it tries, so this only
// keeps silly configurations (a tolerance of 1e-9) from building huge tables.
const MaxRungs = 100000

// Validate reports a ladder a rate search refuses.
func (l Ladder) Validate() error {
	switch {
	case !(l.Min > 0) || math.IsInf(l.Min, 0):
		return fmt.Errorf("rate search: the minimum rate must be a positive number of requests per second, got %g", l.Min)
	case !(l.Max >= l.Min) || math.IsInf(l.Max, 0):
		return fmt.Errorf("rate search: the maximum rate %g is below the minimum %g", l.Max, l.Min)
	case !(l.Tolerance > 0 && l.Tolerance < 1):
		return fmt.Errorf("rate search: the tolerance must be in (0, 1), got %g", l.Tolerance)
	case l.Rungs() > MaxRungs:
		return fmt.Errorf("rate search: %g to %g requests/s at a tolerance of %g is over %d rates; widen the tolerance", l.Min, l.Max, l.Tolerance, MaxRungs)
	}
	return nil
}

// Rungs is how many rates the ladder has.
func (l Ladder) Rungs() int {
	if l.Max <= l.Min {
		return 1
	}
	steps := math.Log(l.Max/l.Min) / math.Log1p(l.Tolerance)
	// A ratio that is a whole number of steps, up to rounding, needs no extra rung.
	n := math.Ceil(steps - 1e-9)
	if n > MaxRungs {
		return MaxRungs + 1
	}
	return 1 + int(n)
}

// Rate is rung i's rate (1-based), Max for the top rung.
func (l Ladder) Rate(i int) float64 {
	if i >= l.Rungs() {
		return l.Max
	}
	return l.Min * math.Pow(1+l.Tolerance, float64(i-1))
}

// Rung returns the rung whose rate is rate (to a relative 1e-9), for resuming from trials
// recorded by rate.
func (l Ladder) Rung(rate float64) (int, bool) {
	if !(rate > 0) {
		return 0, false
	}
	i := 1 + int(math.Round(math.Log(rate/l.Min)/math.Log1p(l.Tolerance)))
	for _, c := range []int{i, l.Rungs()} {
		if c >= 1 && c <= l.Rungs() && math.Abs(l.Rate(c)-rate) <= 1e-9*rate {
			return c, true
		}
	}
	return 0, false
}

// RateRequest identifies one rate trial: (Rate, Kind, Index) as Request's identity.
type RateRequest struct {
	Rate  float64
	Kind  Kind
	Index int
}

// RateOutcomeOf is one rate trial's outcome: OutcomeOf.Concurrency holds the ladder rung,
// Rate the rate it stands for.
type RateOutcomeOf[D any] struct {
	OutcomeOf[D]
	Rate float64
}

// The rate search's instances for an untyped detail, as Outcome is the search's.
type (
	// RateOutcome is RateOutcomeOf with an untyped detail.
	RateOutcome = RateOutcomeOf[any]
	// RateConfig is RateConfigOf with an untyped detail.
	RateConfig = RateConfigOf[any]
	// RateResult is RateResultOf with an untyped detail.
	RateResult = RateResultOf[any]
	// RateRunner is RateRunnerOf with an untyped detail.
	RateRunner = RateRunnerOf[any]
)

// RateConfigOf is one search over request rates.
type RateConfigOf[D any] struct {
	Ladder
	ConfirmationTrials int
	// History, Progress, Threshold and GuardBand are as in Config. A History entry whose
	// rate is not on the ladder is not reused (it is returned unused, as Config's are).
	History   []RateOutcomeOf[D]
	Progress  func(RateOutcomeOf[D])
	Threshold float64
	GuardBand float64
	// Speedup says the ladder's values are the speedups of a recorded trace's replay rather
	// than request rates; only the messages change.
	Speedup bool
}

// RateResultOf is the rate boundary and every trial behind it.
type RateResultOf[D any] struct {
	MaximumPassing *float64 // nil: even the minimum rate failed (or the search did not finish)
	FirstFailing   *float64 // nil: nothing failed up to the maximum (or the search did not finish)
	PassingTrials  []RateOutcomeOf[D]
	FailingTrials  []RateOutcomeOf[D]
	All            []RateOutcomeOf[D]
	// NonMonotone lists rates that passed although a lower rate failed; Passed and Failed
	// are rungs (Ladder.Rate gives their rates).
	NonMonotone []NonMonotone
	Cost        float64
}

// RateRunnerOf runs one rate trial; it must honour ctx as TrialRunnerOf does.
type RateRunnerOf[D any] func(ctx context.Context, req RateRequest) (OutcomeOf[D], error)

// RunRate searches the ladder for the highest rate whose confirmation trials all pass. On error
// it returns what was measured so far, as Run does.
func RunRate[D any](ctx context.Context, cfg RateConfigOf[D], runner RateRunnerOf[D]) (RateResultOf[D], error) {
	if err := cfg.Ladder.Validate(); err != nil {
		return RateResultOf[D]{}, err
	}
	if runner == nil {
		return RateResultOf[D]{}, errors.New("rate search: no trial runner")
	}
	l := cfg.Ladder
	inner := ConfigOf[D]{Min: 1, Max: l.Rungs(), ConfirmationTrials: cfg.ConfirmationTrials,
		Threshold: cfg.Threshold, GuardBand: cfg.GuardBand}
	var unplaced []RateOutcomeOf[D]
	for _, o := range cfg.History {
		if rung, ok := l.Rung(o.Rate); ok {
			h := o.OutcomeOf
			h.Concurrency = rung
			inner.History = append(inner.History, h)
		} else {
			o.Resumed = true
			unplaced = append(unplaced, o)
		}
	}
	wrap := func(o OutcomeOf[D]) RateOutcomeOf[D] {
		return RateOutcomeOf[D]{OutcomeOf: o, Rate: l.Rate(o.Concurrency)}
	}
	if cfg.Progress != nil {
		inner.Progress = func(o OutcomeOf[D]) { cfg.Progress(wrap(o)) }
	}
	var failed error // the runner's error, reported by rate rather than by rung
	res, err := Run(ctx, inner, RunnerFuncOf[D](func(ctx context.Context, q Request) (OutcomeOf[D], error) {
		o, err := runner(ctx, RateRequest{Rate: l.Rate(q.Concurrency), Kind: q.Kind, Index: q.Index})
		if err != nil {
			at := fmt.Sprintf("%.4g requests/s", l.Rate(q.Concurrency))
			if cfg.Speedup {
				at = fmt.Sprintf("speedup %.4g", l.Rate(q.Concurrency))
			}
			failed = fmt.Errorf("%s %d at %s: %w", q.Kind, q.Index, at, err)
		}
		return o, err
	}))
	switch {
	case err == nil:
	case failed != nil:
		err = failed
	case ctx.Err() != nil:
		err = fmt.Errorf("stopped: %w", ctx.Err())
	}
	out := RateResultOf[D]{NonMonotone: res.NonMonotone, Cost: res.Cost}
	for _, o := range res.All {
		out.All = append(out.All, wrap(o))
	}
	for _, o := range unplaced {
		out.All = append(out.All, o)
		out.Cost += o.Cost
	}
	if err != nil {
		if cfg.Speedup {
			return out, fmt.Errorf("speedup search: %w", err)
		}
		return out, fmt.Errorf("rate search: %w", err)
	}
	if res.MaximumPassing != nil {
		out.MaximumPassing = ptrFloat(l.Rate(*res.MaximumPassing))
	}
	if res.FirstFailing != nil {
		out.FirstFailing = ptrFloat(l.Rate(*res.FirstFailing))
	}
	for _, o := range res.PassingTrials {
		out.PassingTrials = append(out.PassingTrials, wrap(o))
	}
	for _, o := range res.FailingTrials {
		out.FailingTrials = append(out.FailingTrials, wrap(o))
	}
	return out, nil
}

func ptrFloat(v float64) *float64 { return &v }
