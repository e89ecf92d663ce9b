package capacity

// The open-loop capacity axis: every workload driven at a request rate, and the search over
// rates for the highest one at which the objectives hold and the server keeps up.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// OpenLoop drives every workload open-loop and searches the request rate instead of the
// concurrency: requests are sent on a schedule drawn from Arrival whatever is in flight.
type OpenLoop struct {
	Arrival load.Arrival
	// MinRate and MaxRate bound the search, in requests per second; Tolerance is the
	// relative step between the rates it may try, so the boundary is found to it.
	MinRate, MaxRate float64
	Tolerance        float64
	// MaxInFlight, when positive, caps the requests on the wire; a request held by it is
	// recorded (the trial's open_loop.cap_bound), and the server that needs it has not kept
	// up with the schedule, which the completion guard then shows.
	MaxInFlight int
	// MaxInFlightSet says max_in_flight was written, so a MaxInFlight below 1 is the value
	// the user wrote (refused, and named as written), not "no cap".
	MaxInFlightSet bool `json:"-"`
	// Speedup makes the search replay every workload's trace (Workload.TraceFile) instead:
	// MinRate and MaxRate then bound the speedup, the factor the recorded offsets are
	// divided by, and the answer is the highest speedup that passes (trace.go).
	Speedup bool `json:",omitempty"`
}

// DefaultRateTolerance is the relative step between neighbouring rates the search tries
// when search.rate.tolerance (or search.speedup.tolerance) is not set: the provider fills it
// in for an unset attribute, so a tolerance written as 0 is refused, never replaced.
const DefaultRateTolerance = 0.05

// MinRequestRate is the lowest search.rate.min: one request every 1000 s, a trial of 16
// requests over four and a half hours. Slower rates are a unit slip (requests per hour or
// per day), and at 1e-300 requests/s the schedule's times overflow.
const MinRequestRate = 1e-3

// MinSpeedup is the lowest search.speedup.min: the trace replayed 1000 times slower.
const MinSpeedup = 1e-3

// Ladder is the rates the search may try.
func (o OpenLoop) Ladder() search.Ladder {
	return search.Ladder{Min: o.MinRate, Max: o.MaxRate, Tolerance: o.Tolerance}
}

// validateOpenLoop adds the open-loop settings' problems, with the provider's attribute paths.
func (v *validation) openLoop(c Config) {
	v.traceWithoutReplay(c)
	o := c.OpenLoop
	if o == nil {
		return
	}
	if o.Speedup {
		v.speedupSearch(c)
		return
	}
	arrival := attrpath.Root("arrival")
	if err := o.Arrival.Validate(); err != nil {
		p := arrival.At("pattern")
		if o.Arrival.Pattern == load.ArrivalGamma {
			p = arrival.At("burstiness")
		}
		v.fail(p, "Invalid arrival", "%v", err)
	}
	if o.Arrival.Burstiness != 0 && o.Arrival.Pattern != load.ArrivalGamma {
		v.add(problem.Problem{Path: arrival.At("burstiness"), Summary: "Burstiness without gamma", Reads: []attrpath.Path{arrival.At("pattern")},
			Detail: fmt.Sprintf("arrival.burstiness (%g) is the shape of gamma gaps and would be ignored with pattern = %q: set pattern = %q to use it, or remove burstiness.",
				o.Arrival.Burstiness, o.Arrival.Pattern, load.ArrivalGamma)})
	}
	if o.MaxInFlight < 0 || o.MaxInFlightSet && o.MaxInFlight < 1 {
		v.fail(arrival.At("max_in_flight"), "Value too small", "must be at least 1 when set, got %d", o.MaxInFlight)
	}
	rate := attrpath.Root("search").At("rate")
	switch {
	case !(o.MinRate >= MinRequestRate) || math.IsInf(o.MinRate, 0):
		v.fail(rate.At("min"), "Value too small", "must be at least %g requests/s (one request every %g s), got %g; "+
			"the rate is in requests per second: for 2 requests a minute write %g", MinRequestRate, 1/MinRequestRate, o.MinRate, 2.0/60)
	case !(o.Tolerance > 0 && o.Tolerance < 1):
		v.fail(rate.At("tolerance"), "Invalid rate search", "must be in (0, 1), the relative step between neighbouring rates tried, got %g; "+
			"remove it for the default %g", o.Tolerance, DefaultRateTolerance)
	default:
		if err := o.Ladder().Validate(); err != nil {
			v.fail(rate, "Invalid rate search", "%v", err)
		}
	}
	if len(c.ConcurrencyLevels) > 0 {
		v.fail(attrpath.Root("search").At("concurrency_levels"), "Two searches", "cannot be set with search.rate: a benchmark searches either concurrency or request rate")
	}
}

// openLoopBase is the base of the axes that send every request at its time on a schedule,
// whatever is in flight (rate, replay), and search a ladder of values (rates, speedups).
type openLoopBase struct{ ol OpenLoop }

// onLadder is a schedule axis as the shared base sees it: what it searches and how its
// trials are journaled.
type onLadder interface {
	axis
	// rung is the ladder value a journal entry was measured at: its rate, or a replay's
	// speedup.
	rung(e JournalEntry) float64
	// describe adds what the workload's results say of the axis beyond its boundary (a
	// replay's trace).
	describe(out *results.Workload, w Workload)
	// nonMonotone is the note of a value that passed although a lower one failed.
	nonMonotone(passed, failed float64) string
}

func (b openLoopBase) stream(workload string, at trialAt) string {
	return fmt.Sprintf("%s r=%s %s t=%d", workload, strconv.FormatFloat(at.Value, 'g', 10, 64), at.Kind, at.Index)
}

func (b openLoopBase) recordsFile(index int, w Workload, at trialAt) (string, records.Trial) {
	return records.RateFileName(index, w.Label, at.Kind.String(), at.Value, at.Index), records.Trial{Workload: w.Label, Index: at.Index}
}

func (openLoopBase) progressAt(e JournalEntry) string { return rateAt(e) }

// offLadder says why a value (named name) is not on the search's ladder, or "".
func (b openLoopBase) offLadder(value float64, name string) string {
	l := b.ol.Ladder()
	if _, ok := l.Rung(value); !ok {
		return fmt.Sprintf("%s is not on the search's ladder (from %.6g to %.6g in steps of %.4g %%)", name, l.Min, l.Max, l.Tolerance*100)
	}
	return ""
}

// history is the journal's trials of a workload on the ladder, for resuming. Trials whose
// requests failed are measured again, as in the concurrency search.
func history(a onLadder, entries []JournalEntry, label string) []rateOutcome {
	var out []rateOutcome
	for _, t := range entries {
		if t.Workload == label && a.rung(t) > 0 && !t.remeasured() && t.Kind != kindComparison {
			out = append(out, rateOutcome{OutcomeOf: t.outcome(), Rate: a.rung(t)})
		}
	}
	return out
}

// remainingOnLadder is the trials a ladder search can still ask for after the entries done.
func remainingOnLadder(a onLadder, cfg Config, entries []JournalEntry) (lo, hi int) {
	done := make([]rateOutcome, len(entries))
	for i, e := range entries {
		done[i] = rateOutcome{OutcomeOf: e.outcome(), Rate: a.rung(e)}
	}
	return remainingRateTrials(cfg, done)
}

// measureLadder runs the search over a's ladder for one workload: the one search entry of
// the schedule axes.
func measureLadder(ctx context.Context, r *trialRunner, a onLadder, ol OpenLoop, speedup bool) (results.Workload, error) {
	s, w := r.s, r.w
	ladder := ol.Ladder()
	res, err := search.RunRate(ctx, search.RateConfigOf[*results.Trial]{
		Ladder:             ladder,
		ConfirmationTrials: s.cfg.ConfirmationTrials,
		History:            history(a, s.cfg.History, w.Label),
		Threshold:          1,
		GuardBand:          guardBand,
		Speedup:            speedup,
		Progress: func(o rateOutcome) {
			e := r.entry(o.OutcomeOf)
			a.mark(&e, w, o.Rate)
			r.finished(o.OutcomeOf, e)
		},
	}, func(ctx context.Context, q search.RateRequest) (outcome, error) {
		return r.runJudgeable(ctx, trialAt{Kind: q.Kind, Index: q.Index, Value: q.Rate})
	})
	if cb := (*clientBoundError)(nil); errors.As(err, &cb) {
		// The search cannot judge the server past a client-bound rate: the workload ends
		// there, its boundary what the trials below it say (DeriveHeadline).
		res = search.RateResultOf[*results.Trial]{All: append(res.All, rateOutcome{OutcomeOf: cb.trial, Rate: cb.at.Value}), NonMonotone: res.NonMonotone}
		err = nil
	}
	if err != nil {
		return results.Workload{}, err
	}
	outcomes := func(os []rateOutcome) []outcome {
		out := make([]outcome, len(os))
		for i, o := range os {
			out[i] = o.OutcomeOf
		}
		return out
	}
	out := workloadResult(w, outcomes(res.PassingTrials), outcomes(res.FailingTrials), outcomes(res.All))
	out.MaximumPassingRequestRate, out.FirstFailingRequestRate = res.MaximumPassing, res.FirstFailing
	a.describe(&out, w)
	for i := range out.AllTrials {
		out.AllTrials[i].Concurrency = 0 // the rung number; the trial's rate says what it ran at
	}
	if err := s.applyHeadline(&out); err != nil {
		return results.Workload{}, err
	}
	for _, n := range res.NonMonotone {
		out.Notes = append(out.Notes, a.nonMonotone(ladder.Rate(n.Passed), ladder.Rate(n.Failed)))
	}
	if n := rateBoundNote(out); n != "" {
		out.Notes = append(out.Notes, n)
	}
	for _, o := range res.All {
		if t := o.Detail; t != nil && o.Failed > 0 && !t.ClientBound() {
			out.Notes = append(out.Notes, failedNote(o.OutcomeOf, t, rateLevel(t)))
		}
		if t := o.Detail; t != nil && t.ClientBound() {
			out.Notes = append(out.Notes, clientBoundNote(o.OutcomeOf, rateLevel(t)))
		}
	}
	return out, nil
}

// rateLevel names where a rate trial ran: "2.5 requests/s", or "speedup 1.5 (2.5 requests/s)".
func rateLevel(t *results.Trial) string {
	if t.Speedup > 0 {
		return fmt.Sprintf("speedup %.4g (%.4g requests/s)", t.Speedup, t.RequestRate)
	}
	return fmt.Sprintf("%.4g requests/s", t.RequestRate)
}

// rateBoundNote says when a workload's rates are the edge of the search rather than its
// capacity, and what to change; "" when the boundary was found.
func rateBoundNote(w results.Workload) string {
	switch b := w.SearchBound(); {
	case b == results.BoundCeiling && w.MaximumPassingSpeedup != nil:
		return fmt.Sprintf("every speedup tried passed, up to %.4g (%.4g requests/s): the server holds at least that many times the recorded traffic; raise search.speedup.max to find the boundary", *w.MaximumPassingSpeedup, *w.MaximumPassingRequestRate)
	case b == results.BoundFloor && w.FirstFailingSpeedup != nil:
		return fmt.Sprintf("even the lowest speedup tried, %.4g (%.4g requests/s), failed: the server holds less than that; lower search.speedup.min to find the boundary", *w.FirstFailingSpeedup, *w.FirstFailingRequestRate)
	case b == results.BoundCeiling:
		r := *w.MaximumPassingRequestRate
		return fmt.Sprintf("every rate tried passed, up to %.4g requests/s: capacity is at least that; raise search.rate.max to find the boundary", r)
	case b == results.BoundFloor:
		r := *w.FirstFailingRequestRate
		return fmt.Sprintf("even the lowest rate tried, %.4g requests/s, failed: capacity is below it; lower search.rate.min to find the boundary", r)
	}
	return ""
}

// driveOnSchedule sends one trial's prompts on schedule (warmups first: they run into the
// measured arrivals without a pause, so the watchers' window covers the whole trial). A
// probe stops the moment its verdict is certain, or the completion guard's fail is: the
// offered rate is the schedule's, known before the first request. rate is the request rate
// the trial stands for, arrival what the document calls its arrivals, osl the max_tokens
// of a prompt that has none of its own. Over a fleet, deal gives each arrival to a pod
// (split.go); the probe then watches this pod's share, its stop decided over the whole
// trial's count and its completion guard over this pod's own arrivals.
func (b openLoopBase) driveOnSchedule(ctx context.Context, r *trialRunner, at trialAt, p trialPhases, schedule []time.Duration, rate float64, arrival string, osl int, deal func(parts int) []int) (driven, error) {
	warmups, measured := p.warmup, p.measured
	spec := load.OpenSpec{Schedule: schedule, Warmup: warmups.texts, Measured: measured.texts, OutputTokens: osl,
		WarmupOutputTokens: warmups.maxTokens, MeasuredOutputTokens: measured.maxTokens, MaxInFlight: b.ol.MaxInFlight}
	out := driven{openLoop: &metrics.OpenLoopRun{Arrival: arrival, Rate: rate}}
	var shares []Share
	local := spec // what this generator sends
	if f := r.s.fleet; f != nil {
		shares = splitOpen(spec, deal(f.pods), f.pods)
		local = load.OpenSpec{}
		if o := shares[0].Open; o != nil {
			local = load.OpenSpec{Schedule: o.Schedule, Warmup: o.Warmup, Measured: o.Measured}
		}
	}
	if at.Kind == search.Probe && len(local.Measured) > 0 {
		offered := scheduledRate(local.Schedule[len(local.Warmup):])
		var firstDone time.Time
		failed := 0
		cannotKeepUp := func(now time.Time) bool {
			return offered > 0 && metrics.DefaultOpenLoopRule().CannotKeepUp(now, firstDone, offered, len(local.Measured), failed)
		}
		var err error
		if out.stop, err = newProbeStop(r.s.slos(), len(measured.texts), cannotKeepUp); err != nil {
			return out, err
		}
		out.stop.completed = func(r load.RequestResult) {
			if metrics.Succeeded(r) {
				if firstDone.IsZero() || r.Done.Before(firstDone) {
					firstDone = r.Done
				}
			} else if !r.Cancelled {
				failed++
			}
		}
		spec.Tick, spec.Observe = out.stop.tick, out.stop.observe
	}
	if shares != nil {
		res, spread, err := r.s.fleet.send(ctx, r.s.client, shares, shareHooks{observe: spec.Observe, tick: spec.Tick}, len(spec.Warmup))
		out.res, out.measuredEnd, out.pods, out.podCPU = res, time.Now(), spread.pods, spread.cpu
		out.window = res.Requests
		return out, err
	}
	res, err := load.RunOpenTrial(ctx, r.s.client, spec)
	out.res, out.measuredEnd = res.TrialResult, time.Now()
	out.window = res.Requests // warmups included, as the watchers' window is
	return out, err
}

// remainingRateTrials is remainingTrials for a search over the rate (or speed-up) ladder: it
// plays the rest of the search out against every rung the boundary may still lie at.
func remainingRateTrials[D any](cfg Config, done []search.RateOutcomeOf[D]) (lo, hi int) {
	l := cfg.OpenLoop.Ladder()
	if l.Validate() != nil {
		return 0, 0
	}
	from, to := 0, l.Rungs()
	for _, o := range done {
		r, ok := l.Rung(o.Rate)
		switch {
		case !ok:
		case o.Pass:
			from = max(from, r)
		default:
			to = min(to, r-1)
		}
	}
	if from > to {
		from, to = 0, l.Rungs()
	}
	return playOut(from, to, func(b int) (int, error) {
		n := 0
		_, err := search.RunRate(context.Background(), search.RateConfigOf[D]{
			Ladder: l, ConfirmationTrials: cfg.ConfirmationTrials, History: done, Threshold: 1, GuardBand: guardBand,
		}, func(_ context.Context, q search.RateRequest) (search.OutcomeOf[D], error) {
			n++
			rung, _ := l.Rung(q.Rate)
			return clearCut[D](rung <= b), nil
		})
		return n, err
	})
}

// backlogUnjudged opens the note of a trial the backlog guard did not judge, by which the
// apply's warning (unjudgedRateTrials) finds it in a document, resumed trials' included.
const backlogUnjudged = "the backlog guard did not judge this trial"

// backlogUnjudgedNote says that the backlog guard did not judge a trial with too few samples
// (metrics.MinBacklogSamples): whether it kept up was judged by the completion guard alone.
func backlogUnjudgedNote(samples int) string {
	return fmt.Sprintf(backlogUnjudged+": it had %d in-flight %s after the first response and judges on %d, "+
		"so whether the server kept up was judged by the completion rate alone; raise trial.measured_requests (or, for a replay, "+
		"replay a longer trace) for both guards to judge", samples, plural(samples, "sample", "samples"), metrics.MinBacklogSamples)
}

// scheduledRate is (n − 1) over the span of a schedule's sends; 0 with fewer than two.
func scheduledRate(schedule []time.Duration) float64 {
	if len(schedule) < 2 || schedule[len(schedule)-1] <= schedule[0] {
		return 0
	}
	return float64(len(schedule)-1) / (schedule[len(schedule)-1] - schedule[0]).Seconds()
}

func (openLoopBase) loadStep() trialStep { return stepRequests }
