package capacity

// The open-loop capacity axis: every workload driven at a request rate, and the search over
// rates for the highest one at which the objectives hold and the server keeps up.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry"
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

// pattern is the document's arrival_pattern for an open-loop run.
func (o OpenLoop) pattern() string {
	if o.Speedup {
		return "open-loop trace replay"
	}
	if o.Arrival.Pattern == load.ArrivalGamma {
		return "open-loop gamma, burstiness " + strconv.FormatFloat(o.Arrival.Burstiness, 'g', -1, 64)
	}
	return "open-loop " + o.Arrival.Pattern
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

// ladderHistory is the journal's trials of a workload on the rate ladder, for resuming: a
// rung is a rate, or the trace's speedup when speedup is set. Trials whose requests failed
// are measured again, as in the concurrency search.
func ladderHistory(entries []JournalEntry, label string, speedup bool) []search.RateOutcome {
	var out []search.RateOutcome
	for _, t := range entries {
		rung := t.Rate
		if speedup {
			rung = t.Speedup
		}
		if t.Workload != label || rung <= 0 || t.Errors > 0 {
			continue
		}
		out = append(out, search.RateOutcome{Outcome: t.outcome(), Rate: rung})
	}
	return out
}

// measureRate runs the rate search for one workload.
func (s *session) measureRate(ctx context.Context, w Workload, history []search.RateOutcome) (results.Workload, error) {
	runner := &trialRunner{s: s, w: w, index: slices.IndexFunc(s.cfg.Workloads, func(o Workload) bool { return o.Label == w.Label })}
	replay := s.cfg.OpenLoop.Speedup
	res, err := search.RunRate(ctx, search.RateConfig{
		Ladder:             s.cfg.OpenLoop.Ladder(),
		ConfirmationTrials: s.cfg.ConfirmationTrials,
		History:            history,
		Threshold:          1,
		GuardBand:          guardBand,
		Speedup:            replay,
		Progress: func(o search.RateOutcome) {
			e := runner.entry(o.Outcome)
			e.Concurrency, e.Rate = 0, o.Rate
			if replay { // the ladder's values are speedups
				e.Rate, e.Speedup = traceRate(w, o.Rate), o.Rate
			}
			if !o.Resumed && s.cfg.Progress != nil {
				s.cfg.Progress(e)
			}
			s.watch.finishedRate(w.Label, o, e)
		},
	}, runner.runRateOnceMore)
	if err != nil {
		return results.Workload{}, err
	}
	outcomes := func(os []search.RateOutcome) []search.Outcome {
		out := make([]search.Outcome, len(os))
		for i, o := range os {
			out[i] = o.Outcome
		}
		return out
	}
	out := workloadResult(w, outcomes(res.PassingTrials), outcomes(res.FailingTrials), outcomes(res.All))
	out.MaximumPassingRequestRate, out.FirstFailingRequestRate = res.MaximumPassing, res.FirstFailing
	if replay {
		out.ConfiguredISL, out.ConfiguredOSL = w.Trace.MeanLengths()
		out.TraceFile, out.TraceSHA256 = w.TraceFile, w.Trace.SHA256
	}
	for i := range out.AllTrials {
		out.AllTrials[i].Concurrency = 0 // the rung number; the trial's rate says what it ran at
	}
	if err := s.applyHeadline(&out); err != nil {
		return results.Workload{}, err
	}
	ladder := s.cfg.OpenLoop.Ladder()
	for _, n := range res.NonMonotone {
		if replay {
			out.Notes = append(out.Notes, fmt.Sprintf("speedup %.4g passed although speedup %.4g failed", ladder.Rate(n.Passed), ladder.Rate(n.Failed)))
			continue
		}
		out.Notes = append(out.Notes, fmt.Sprintf("%.4g requests/s passed although %.4g requests/s failed", ladder.Rate(n.Passed), ladder.Rate(n.Failed)))
	}
	if n := rateBoundNote(out); n != "" {
		out.Notes = append(out.Notes, n)
	}
	for _, o := range res.All {
		if t, ok := o.Detail.(*results.Trial); ok && t != nil && o.Failed > 0 {
			out.Notes = append(out.Notes, failedNote(o.Outcome, t, rateLevel(t)))
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

// runRateOnceMore runs a rate trial again, once, when its client could not keep the
// schedule: that trial measured the client, not the server, and nothing of it was kept, so
// a passing stall of a shared machine costs one trial instead of the run, while a client
// that is too slow for the rate still stops the run with the reason.
func (r *trialRunner) runRateOnceMore(ctx context.Context, q search.RateRequest) (search.Outcome, error) {
	return onceMoreOnScheduleFault(ctx, q, r.runRate, func(err error) {
		r.s.watch.sayf("%s: the trial at %.4g requests/s runs again: %v", r.w.Label, q.Rate, err)
	})
}

func onceMoreOnScheduleFault(ctx context.Context, q search.RateRequest, run func(context.Context, search.RateRequest) (search.Outcome, error), say func(error)) (search.Outcome, error) {
	out, err := run(ctx, q)
	if late := (*load.ScheduleError)(nil); errors.As(err, &late) && ctx.Err() == nil {
		say(err)
		out, err = run(ctx, q)
	}
	return out, err
}

// runRate runs one open-loop trial at q.Rate.
func (r *trialRunner) runRate(ctx context.Context, q search.RateRequest) (search.Outcome, error) {
	s, w, ol := r.s, r.w, r.s.cfg.OpenLoop
	clock := newTrialClock()
	s.watch.beginRate(w.Label, q)
	rate := strconv.FormatFloat(q.Rate, 'g', 10, 64)
	stream := fmt.Sprintf("%s r=%s %s t=%d", w.Label, rate, q.Kind, q.Index)
	// The same steps as a closed-loop trial: prompts fitted while the server settles.
	prep := s.prepareAsync(ctx, w, stream)
	idleUnverified, err := r.settle(ctx, &clock.timing)
	if err != nil {
		prep.abandon()
		return search.Outcome{}, err
	}
	s.watch.enter("while its prompts were prepared")
	prompts, err := prep.wait(&clock.timing)
	if err != nil {
		return search.Outcome{}, err
	}
	s.watch.enter("while its requests ran")
	warmups, measured := prompts.warmup, prompts.measured
	var schedule []time.Duration
	rateValue, speedup := q.Rate, 0.0
	if ol.Speedup {
		// A replay: the trace's own arrivals, its offsets divided by the speedup.
		speedup, rateValue = q.Rate, traceRate(w, q.Rate)
		schedule, err = w.Trace.Schedule(speedup)
	} else {
		h := fnv.New64a()
		h.Write([]byte(stream))
		seed := splitmix.Mix(uint64(s.cfg.Seed) ^ splitmix.Mix(h.Sum64()))
		schedule, err = ol.Arrival.Schedule(q.Rate, len(warmups.texts)+len(measured.texts), seed)
	}
	if err != nil {
		return search.Outcome{}, err
	}
	osl := w.OutputTokens
	if w.Trace != nil {
		_, osl = w.Trace.MeanLengths() // each prompt asks for its own; this is only the default
	}
	spec := load.OpenSpec{Schedule: schedule, Warmup: warmups.texts, Measured: measured.texts, OutputTokens: osl,
		WarmupOutputTokens: warmups.maxTokens, MeasuredOutputTokens: measured.maxTokens, MaxInFlight: ol.MaxInFlight}
	slos := s.slos()
	rule := metrics.DefaultOpenLoopRule()
	var stop *probeStop
	if q.Kind == search.Probe {
		// The completion guard's certain fail: the offered rate is the schedule's, known now.
		offered := scheduledRate(schedule[len(warmups.texts):])
		var firstDone time.Time
		failed := 0
		cannotKeepUp := func(now time.Time) bool {
			return offered > 0 && rule.CannotKeepUp(now, firstDone, offered, len(measured.texts), failed)
		}
		if stop, err = newProbeStop(slos, len(measured.texts), cannotKeepUp); err != nil {
			return search.Outcome{}, err
		}
		stop.completed = func(r load.RequestResult) {
			if metrics.Succeeded(r) {
				if firstDone.IsZero() || r.Done.Before(firstDone) {
					firstDone = r.Done
				}
			} else if !r.Cancelled {
				failed++
			}
		}
		spec.Tick, spec.Observe = stop.tick, stop.observe
	}
	t0 := time.Now()
	// Warmups run into the measured arrivals without a pause: the accelerators' figures
	// cover the whole trial.
	accel := telemetry.Start(ctx, s.telemetry, s.cfg.TelemetryInterval)
	watch := watchServer(ctx, s.control, s.engine)
	hostStart := sampleHost()
	loadStart := time.Now()
	res, err := load.RunOpenTrial(ctx, s.client, spec)
	loadEnd := time.Now()
	host := hostLoad(hostStart, sampleHost())
	waitedOut := stop.decidedByWaiting()
	view := watch.finish(ctx)
	accelerators := accel.Finish(ctx)
	clock.timing.ServerScrapeS = seconds(loadStart.Sub(t0) + time.Since(loadEnd))
	if !res.MeasuredStart.IsZero() {
		clock.timing.WarmupS = seconds(res.MeasuredStart.Sub(loadStart))
		clock.timing.MeasuredS = seconds(loadEnd.Sub(res.MeasuredStart))
	} else {
		clock.timing.WarmupS = seconds(loadEnd.Sub(loadStart))
	}
	if err != nil {
		return search.Outcome{}, err
	}
	summaryStart := time.Now()
	fid := res.Fidelity()
	if err := fid.ClientFault(rateValue); err != nil && !res.Stopped {
		return search.Outcome{}, err
	}
	done := res.Measured()
	var verdict metrics.Verdict
	if !waitedOut {
		if verdict, err = metrics.Evaluate(slos, done); err != nil {
			return search.Outcome{}, err
		}
	}
	keep := rule.KeptUp(res.Requests)
	if res.Stopped {
		keep.Missed = nil // a probe cut short judges no guard; its stop says why it failed
	}
	failed := countFailed(done)
	if res.Stopped {
		cutShort(&verdict, failed)
	}
	pass := verdict.Pass && keep.Pass() && !res.Stopped
	if !keep.Pass() {
		verdict.Closeness = max(verdict.Closeness, 1)
	}
	out := search.Outcome{Pass: pass, Value: verdict.Closeness, DecidedEarly: res.Stopped,
		Cost: requestSeconds(res.Requests), Failed: failed}
	trial, err := metrics.Summarize(res.Requests, requestedOSL(w))
	if err != nil && q.Kind == search.Confirmation && !errors.Is(err, metrics.ErrNoSuccessfulRequests) {
		return search.Outcome{}, err
	}
	failDegenerate(&out, trial.Correctness.DegenerateOutputs)
	trial.Trial = q.Index
	trial.RequestRate, trial.Speedup = rateValue, speedup
	arrival := ol.Arrival.Pattern
	if ol.Speedup {
		arrival = "trace"
	}
	trial.OpenLoop = &results.OpenLoopTrial{
		Arrival: arrival, OfferedRate: keep.OfferedRate, AchievedRate: fid.OfferedRate,
		CompletionRate: keep.CompletionRate, BacklogGrowth: keep.BacklogGrowth, BacklogAllowance: keep.BacklogAllowance,
		InFlightMean: keep.InFlightMean, SendLatenessP50Ms: msOf(fid.LatenessP50), SendLatenessP99Ms: msOf(fid.LatenessP99),
		SendLatenessMaxMs: msOf(fid.LatenessMax), CapBound: fid.CapBound, KeptUp: keep.Pass() && !res.Stopped, Missed: keep.Missed,
	}
	if s.cfg.RecordsDirectory != "" {
		rel := filepath.Join(filepath.Dir(records.FileName(r.index, w.Label, q.Kind.String(), 0, q.Index)),
			fmt.Sprintf("%s-r%s-%d.jsonl", q.Kind, rate, q.Index))
		lines := records.FromLoad(records.Trial{Workload: w.Label, Index: q.Index, ChunkTimes: s.cfg.RecordChunkTimes}, res.Requests)
		sum, err := records.Write(s.cfg.RecordsDirectory, rel, lines)
		if err != nil {
			return search.Outcome{}, err
		}
		trial.RecordsFile, trial.RecordsSHA256 = filepath.ToSlash(rel), sum
	}
	trial.SLOs = verdict.Results
	if !waitedOut {
		goodput := verdict.GoodputPercent
		trial.GoodputPercent = &goodput
	}
	trial.Server = view
	trial.Accelerators = accelerators.Summary(outputTokens(res.Requests)) // warmups included, as the window is
	trial.Replicas = r.replicas.results()
	trial.Host = host
	if idleUnverified {
		trial.Notes = append(trial.Notes, idleUnverifiedNote)
	}
	if !keep.BacklogJudged && !res.Stopped {
		trial.Notes = append(trial.Notes, backlogUnjudgedNote(keep.BacklogSamples))
	}
	// Warmups are the schedule's first arrivals, with no pause before the measured ones, so
	// the engine's prefix-cache counter cannot be read over the measured requests alone.
	s.sawCacheReports(res.Requests)
	own, shared := w.InputTokens-w.SharedPrefixTokens, w.SharedPrefixTokens
	if w.Trace != nil {
		own, shared = 0, sharedBlockTokens(w) // a replayed prompt's blocks may rightly be cached
	}
	checkCache(&trial, done, coldCache{
		ownTokens:     own,
		sharedTokens:  int(math.Ceil(measured.calibration.TemplateOverheadTokens)) + shared,
		flushed:       s.flush.Engine != "",
		omittedAsZero: s.cacheReport.known(),
	})
	clock.timing.SummaryS = seconds(time.Since(summaryStart))
	clock.timing.TotalS = seconds(time.Since(clock.start))
	timing := clock.timing
	trial.Timing = &timing
	out.Detail = &trial
	return out, nil
}

// backlogUnjudgedNote says that the backlog guard did not judge a trial with too few samples
// (metrics.MinBacklogSamples): whether it kept up was judged by the completion guard alone.
func backlogUnjudgedNote(samples int) string {
	return fmt.Sprintf("the backlog guard did not judge this trial: it had %d in-flight %s after the first response and judges on %d, "+
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

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
