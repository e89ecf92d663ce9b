package capacity

// One trial: the prompts, the load, the metrics, the verdict and the records file.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// trialRunner runs the search's trials for one workload against the server, on the run's
// axis (session.axis).
type trialRunner struct {
	s     *session
	w     Workload
	index int // of w in the configuration, for records file names
	// replicas is what each replica proved for the trial now running (replica_endpoints),
	// set by settle; nil without replicas. Trials of one workload run one at a time.
	replicas *replicaTrial
	// warmed: the engine warm-up ran (or was not asked for); warmupNote says what it sent.
	warmed     bool
	warmupNote string
}

// run is the one trial pipeline, on any axis, in named steps: settle the server (idle, cold
// cache) while the prompts are fitted, send the load through the axis (a probe stops once
// its verdict is certain), judge it, keep it. Its Timing says where the wall-clock went.
func (r *trialRunner) run(ctx context.Context, at trialAt) (outcome, error) {
	s, ax := r.s, r.s.axis
	if !r.warmed && s.cfg.EngineWarmupRequests > 0 {
		note, err := r.warmEngine(ctx)
		if err != nil {
			return outcome{}, err
		}
		r.warmed, r.warmupNote = true, note
		s.tracker.sayf("%s  %q %s", time.Now().UTC().Format("15:04:05"), r.w.Label, note)
	}
	clock := newTrialClock()
	s.tracker.begin(r.w.Label, ax.where(at), at)
	// Fitting prompts asks the server to count tokens, which generates nothing: it overlaps
	// the idle wait and the flush instead of following them.
	prep := s.prepareAsync(ctx, r.w, ax.stream(r.w.Label, at))
	idleUnverified, err := r.settle(ctx, &clock.timing)
	if err != nil {
		prep.abandon()
		return outcome{}, err
	}
	s.tracker.enter(stepPrompts)
	prompts, err := prep.wait(&clock.timing)
	if err != nil {
		return outcome{}, err
	}
	s.tracker.enter(ax.loadStep())
	run, seen, host, cpu, err := r.load(ctx, at, prompts, clock)
	// A runner pod lost in the trial loses that trial only: it is sent again once the
	// fleet answers (its peers wait for the pod to come back).
	for attempt := 2; attempt <= fleetAttempts && errors.As(err, new(*PeerLostError)) && ctx.Err() == nil; attempt++ {
		s.tracker.sayf("%s  %q %s: %v; sending the trial again (attempt %d of %d)", time.Now().UTC().Format("15:04:05"), r.w.Label, ax.where(at), err, attempt, fleetAttempts)
		run, seen, host, cpu, err = r.load(ctx, at, prompts, clock)
	}
	if err != nil {
		return outcome{}, err
	}
	summaryStart := time.Now()
	out, trial, abort, err := r.judge(at, prompts, run, seen, idleUnverified)
	if err != nil {
		return outcome{}, err
	}
	trial.Host = host
	rate := 0.0 // the schedule an open-loop trial's sends must keep
	if run.openLoop != nil {
		rate = run.openLoop.Rate
	}
	trial.Client = metrics.ClientTrial(load.MeasureSelfDelay(run.res.Requests), cpu, s.slos(), rate)
	if trial.ClientBound() {
		// What the client measured of itself outweighs what it measured of the server:
		// requests that failed or timed out behind a starved client are no proof that the
		// server fails.
		abort = nil
	}
	if err := r.keepRecords(at, trial, run.res.Requests); err != nil {
		return outcome{}, err
	}
	clock.timing.SummaryS = seconds(time.Since(summaryStart))
	clock.timing.TotalS = seconds(time.Since(clock.start))
	timing := clock.timing
	trial.Timing = &timing
	out.Detail = trial
	if trial.ClientBound() {
		// The search cannot judge it: it goes out as an error, journaled by runJudgeable
		// if it ends the search.
		out.Request = search.Request{Concurrency: at.Level, Kind: at.Kind, Index: at.Index}
		return outcome{}, &clientBoundError{trial: out, at: at, where: ax.where(at)}
	}
	if abort != nil {
		// The search never sees this outcome, so it journals it here; a resumed run measures
		// it again, as every trial whose requests failed.
		out.Request = search.Request{Concurrency: at.Level, Kind: at.Kind, Index: at.Index}
		r.journalUnseen(out, at)
		s.tracker.begin(r.w.Label, ax.where(at), at) // the run stops in this trial: its message names it
		return outcome{}, abort
	}
	return out, nil
}

// journalUnseen journals a trial the search never sees, and writes its progress line.
func (r *trialRunner) journalUnseen(o outcome, at trialAt) {
	e := r.entry(o)
	if at.Comparison {
		e.Kind = kindComparison
	}
	r.s.axis.mark(&e, r.w, at.Value)
	r.finished(o, e)
}

// finished journals a trial the search used, measured now or reused from the journal (the
// journal first: it is what survives a crash), and writes its progress line.
func (r *trialRunner) finished(o outcome, e JournalEntry) {
	if !o.Resumed && r.s.cfg.Progress != nil {
		r.s.cfg.Progress(e)
	}
	r.s.tracker.finished(r.w.Label, o, e)
}

// trialClock collects a trial's timing as its steps run.
type trialClock struct {
	start  time.Time
	timing results.TrialTiming
}

func newTrialClock() *trialClock { return &trialClock{start: time.Now()} }

func seconds(d time.Duration) float64 { return d.Seconds() }

// settle makes the server ready for a trial: requests a stopped probe cancelled may still be
// processed, so the trial starts on an idle server, and from a cold cache when flushing is
// on (the flush fails the trial when the server does not confirm it).
// unverified says the server offered no idle signal, so the wait could not tell.
func (r *trialRunner) settle(ctx context.Context, timing *results.TrialTiming) (unverified bool, err error) {
	s := r.s
	r.replicas = nil
	if len(s.replicas) > 0 {
		// Through the Service only one replica would be asked; each one is, on its own.
		r.replicas, unverified, err = s.settleReplicas(ctx, timing)
		return unverified, err
	}
	t0 := time.Now()
	s.tracker.enter(stepServerIdle)
	if err := s.control.WaitIdle(ctx, s.engine); err != nil {
		return false, err
	}
	timing.IdleWaitS = seconds(time.Since(t0))
	unverified = s.engine != "" && s.control.IdleUnverified()
	if s.flush.Engine == "" {
		return unverified, nil
	}
	t1 := time.Now()
	s.tracker.enter(stepServerFlush)
	err = s.control.Flush(ctx, s.flush) // waits for idle itself: immediate after the wait above
	timing.CacheFlushS = seconds(time.Since(t1))
	return unverified, err
}

// idleUnverifiedNote is a trial's note when the server offered no idle signal before it.
const idleUnverifiedNote = "the server offered no idle signal (no load endpoint and no running or waiting gauges: SGLang 0.4.x without --enable-metrics), " +
	"so this trial may have started while earlier requests still ran, and a flush sent then may have done nothing"

// driven is what an axis's load produced, for the judge.
type driven struct {
	res  load.TrialResult
	stop *probeStop // nil for a trial that is no probe
	// measuredEnd is when the measured requests ended, for the trial's timing; zero when
	// the load cannot say.
	measuredEnd time.Time
	// window is the requests the watchers' window covers: the accelerators' energy per
	// output token divides by their output tokens.
	window []load.RequestResult
	// lowest says a full trial here whose requests all failed (or whose outputs were
	// degenerate) leaves no capacity to measure: the run stops there. A closed loop's
	// minimum concurrency.
	lowest bool
	// openLoop is what the judge needs of a trial sent on a schedule (its arrivals and
	// rate: the client must have kept it, the server kept up with it); nil for a closed loop.
	openLoop *metrics.OpenLoopRun
	// conversations is what a users trial measured of its conversations; nil on other axes.
	conversations *results.ConversationTrial
	// pods is how the trial was spread over the runner's pods; nil when sent from here alone.
	// podCPU is each other pod's CPU over its share (nil where it could not be read).
	pods   *results.PodsTrial
	podCPU []*results.ClientCPU
}

// load sends the trial's load through the axis, with its watchers started before and
// finished after; host is the machine's load over it, cpu the load generator's process's.
func (r *trialRunner) load(ctx context.Context, at trialAt, prompts trialPhases, clock *trialClock) (run driven, seen observed, host *results.HostLoad, cpu *results.ClientCPU, err error) {
	t0 := time.Now()
	watchers := r.startWatchers(ctx)
	readCPU := sampleCPU
	if r.s.cfg.sampleCPU != nil {
		readCPU = r.s.cfg.sampleCPU
	}
	hostStart, cpuStart := sampleHost(), readCPU()
	loadStart := time.Now()
	run, err = r.s.axis.drive(ctx, r, at, prompts, func() { watchers.markMeasured(ctx) })
	loadEnd := time.Now()
	host, cpu = hostLoad(hostStart, sampleHost()), busiest(clientCPU(cpuStart, readCPU()), run.podCPU)
	seen = watchers.finish(ctx)
	clock.timing.ServerScrapeS = seconds(loadStart.Sub(t0) + time.Since(loadEnd))
	res := run.res
	if !res.MeasuredStart.IsZero() {
		clock.timing.WarmupS = seconds(res.MeasuredStart.Sub(loadStart))
		if !run.measuredEnd.IsZero() {
			clock.timing.MeasuredS = seconds(run.measuredEnd.Sub(res.MeasuredStart))
		}
	} else {
		clock.timing.WarmupS = seconds(loadEnd.Sub(loadStart))
	}
	return run, seen, host, cpu, err
}

// judge turns the load into the search's outcome and the trial's metrics. abort is
// ErrServerFailing (or ErrDegenerateOutput) when a full trial at the axis's lowest level saw
// no request succeed (or most outputs degenerate). idleUnverified says the server offered
// no idle signal before the trial.
func (r *trialRunner) judge(at trialAt, prompts trialPhases, run driven, seen observed, idleUnverified bool) (out outcome, trial *results.Trial, abort error, err error) {
	s, w := r.s, r.w
	res := run.res
	j, err := metrics.Judge(metrics.TrialRun{Records: res.Requests, SLOs: s.slos(), RequestedOSL: requestedOSL(w),
		Confirmation: at.Kind == search.Confirmation, Stopped: res.Stopped, WaitedOut: run.stop.decidedByWaiting(), OpenLoop: run.openLoop})
	if err != nil {
		return out, nil, nil, err
	}
	out = outcome{Pass: j.Pass, Value: j.Closeness, DecidedEarly: res.Stopped, Cost: requestSeconds(res.Requests), Failed: j.Failed}
	t := j.Trial
	done := res.Measured()
	// Only a full trial at the lowest level can say there is no capacity at all: a probe
	// stopped at its first failed request is just a fail, and a server shedding load above
	// the minimum is a failing level, recorded with its errors. The run stops there, but
	// only after the trial is kept like any other: what the server answered is the user's
	// diagnostic.
	if !res.Stopped && run.lowest {
		abort = allFailed(done, metrics.ErrorSummary(done, requestedOSL(w)))
		if d := t.Correctness.DegenerateOutputs; j.Degenerate && abort == nil {
			abort = fmt.Errorf("%w: %d of %d measured outputs at the minimum concurrency: %s; the server answers HTTP 200 with broken text, "+
				"so there is no capacity to measure: check the model, its dtype and the engine's attention backend, and the server's logs",
				ErrDegenerateOutput, d.Requests, d.Checked, metrics.DescribeErrors(t.ErrorSummary))
		}
	}
	t.Trial = at.Index
	s.axis.place(&t, w, at)
	t.Conversations = run.conversations
	t.Pods = run.pods
	if c := run.conversations; c != nil && c.TurnsCachedBeyondHistory > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d of %d measured turns found more prompt tokens cached than their own conversation's history and the shared "+
			"system prompt hold: conversations are unique, so the cache was not emptied before the trial (or conversations repeat); latencies are too low and the capacity too high",
			c.TurnsCachedBeyondHistory, c.MeasuredTurns))
	}
	t.Server = seen.view
	t.Accelerators = seen.accelerators.Summary(outputTokens(run.window))
	t.Replicas = r.replicas.results()
	if idleUnverified {
		t.Notes = append(t.Notes, idleUnverifiedNote)
	}
	if t.OpenLoop != nil && !j.KeepUp.BacklogJudged && !res.Stopped {
		t.Notes = append(t.Notes, backlogUnjudgedNote(j.KeepUp.BacklogSamples))
	}
	// A shared prefix is served from the cache after the first request: expected, not
	// flagged. A schedule's warmups run into its measured arrivals without a pause, so no
	// watcher reads the engine's prefix-cache counter over the measured requests alone.
	s.sawCacheReports(res.Requests)
	own, shared := s.axis.cacheShape(w)
	checkCache(&t, done, coldCache{
		ownTokens:     own,
		sharedTokens:  int(math.Ceil(prompts.measured.calibration.TemplateOverheadTokens)) + shared,
		flushed:       s.flush.Engine != "",
		omittedAsZero: s.cacheReport.known(),
		measuredHits:  seen.measuredHits,
	})
	if t.Correctness.RequestsCachedBeyondSharedPrefix > 0 && s.flush.Engine != "" {
		if note := r.replicas.hitsNote(); note != "" {
			t.Notes = append(t.Notes, note)
		}
	}
	return out, &t, abort, nil
}

// keepRecords writes the trial's per-request records file when records_directory is set.
func (r *trialRunner) keepRecords(at trialAt, trial *results.Trial, requests []load.RequestResult) error {
	dir := r.s.cfg.RecordsDirectory
	if dir == "" {
		return nil
	}
	rel, rt := r.s.axis.recordsFile(r.index, r.w, at)
	rt.ChunkTimes = r.s.cfg.RecordChunkTimes
	if trial.Pods != nil {
		rt.Pods = trial.Pods.Pods
	}
	lines := records.FromLoad(rt, requests)
	sum, err := records.Write(dir, rel, lines)
	if err != nil {
		return err
	}
	trial.RecordsFile, trial.RecordsSHA256 = filepath.ToSlash(rel), sum
	return nil
}

// outputTokens is the output tokens the server reported for the measured requests, the
// divisor of the accelerators' joules per output token: a failed request's tokens cost
// energy too.
func outputTokens(measured []load.RequestResult) int {
	n := 0
	for _, r := range measured {
		n += r.CompletionTokens
	}
	return n
}

// requestedOSL is the output length the metrics judge mismatches against: the workload's,
// or each request's own (0) when lengths are spread.
func requestedOSL(w Workload) int {
	if w.OutputTokensStddev > 0 {
		return 0
	}
	return w.OutputTokens
}

// probeTick is how often a probe re-checks what waiting requests prove: a twentieth of the
// smallest latency threshold a wait can bound (TTFT, request latency), within [10 ms, 1 s],
// so the stop comes at most 5 % after it became certain; 1 s when no objective has one.
func probeTick(slos []results.SLO) time.Duration {
	d := time.Second
	for _, s := range slos {
		if s.Metric == results.MetricTTFT || s.Metric == results.MetricRequestLatency {
			d = min(d, time.Duration(s.ThresholdMs/20*float64(time.Millisecond)))
		}
	}
	return min(max(d, 10*time.Millisecond), time.Second)
}

// probeStop stops a probe the moment its verdict is certain. Requests still waiting already
// have a metric at least as long as their wait: five requests waiting past a 10 s TTFT
// threshold decide a p95 fail without waiting for their first tokens. A probe decided that
// way has no verdict from finished requests, which waitedOut records.
type probeStop struct {
	decider   *metrics.TrialDecider
	tick      time.Duration
	waitedOut bool
	// cannotKeepUp, when set, is asked at each tick the decider leaves open: the open loop's
	// completion guard fails a rate the server cannot keep up with before its latencies do.
	cannotKeepUp func(now time.Time) bool
	completed    func(load.RequestResult)
}

func newProbeStop(slos []results.SLO, measured int, cannotKeepUp func(time.Time) bool) (*probeStop, error) {
	d, err := metrics.NewTrialDecider(slos, measured)
	if err != nil {
		return nil, err
	}
	return &probeStop{decider: d, tick: probeTick(slos), cannotKeepUp: cannotKeepUp}, nil
}

func (p *probeStop) observe(e load.Event) bool {
	var d metrics.Decision
	switch e.Kind {
	case load.EventFirstContent:
		d = p.decider.FirstContent(e.Result)
	case load.EventCompleted:
		d = p.decider.Complete(e.Result)
		if p.completed != nil {
			p.completed(e.Result)
		}
	case load.EventTick:
		d = p.decider.WithPending(e.Now, e.InFlight)
		p.waitedOut = d == metrics.DecidedFail
		if d == metrics.Undecided && p.cannotKeepUp != nil && p.cannotKeepUp(e.Now) {
			p.waitedOut, d = true, metrics.DecidedFail
		}
	}
	return d != metrics.Undecided
}

// decidedByWaiting is whether the probe was stopped by requests still waiting; false for a
// trial that is no probe (nil).
func (p *probeStop) decidedByWaiting() bool { return p != nil && p.waitedOut }

// allFailed reports ErrServerFailing, with the failures by kind, when no finished measured
// request succeeded.
func allFailed(records []load.RequestResult, summary []results.ErrorCount) error {
	n := 0
	for _, r := range records {
		if r.Cancelled {
			continue
		}
		if metrics.Succeeded(r) {
			return nil
		}
		n++
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d of %d at the minimum concurrency: %s; check the server's logs", ErrServerFailing, n, len(records), metrics.DescribeErrors(summary))
}

// failedNote is the workload note of a trial with failed requests (Outcome.Failed).
func failedNote(o outcome, t *results.Trial, level string) string {
	what := fmt.Sprintf("%d measured requests failed", o.Failed)
	if d := t.Correctness.DegenerateOutputs; d.Most() {
		what = fmt.Sprintf("%d of %d measured outputs were degenerate", d.Requests, d.Checked)
	}
	return fmt.Sprintf("%s %d at %s: %s: %s", o.Kind, o.Index, level, what, metrics.DescribeErrors(t.ErrorSummary))
}

func requestSeconds(records []load.RequestResult) float64 {
	var total time.Duration
	for _, r := range records {
		if !r.Sent.IsZero() && !r.Done.IsZero() {
			total += r.Done.Sub(r.Sent)
		}
	}
	return total.Seconds()
}

// entry turns a search outcome into a journal entry.
func (r *trialRunner) entry(o outcome) JournalEntry {
	t := JournalEntry{
		Time: time.Now().UTC(), Workload: r.w.Label, Concurrency: o.Concurrency,
		Kind: o.Kind.String(), Index: o.Index, Pass: o.Pass,
		Closeness:    o.Value,
		DecidedEarly: o.DecidedEarly, ValueIsBound: o.DecidedEarly && !o.Pass && o.Failed == 0, CostS: o.Cost,
		Errors: o.Failed,
	}
	if m := o.Detail; m != nil {
		if m.Timing != nil {
			t.DurationS = m.Timing.TotalS
		}
		t.SLOs = m.SLOs
		t.Metrics = m
		t.ErrorSummary = m.ErrorSummary
		t.Requests = m.Correctness.WarmupRecords + m.Correctness.ProfilingRecords
	}
	t.Verdict = t.verdict()
	return t
}

// outcome turns a journal entry back into a search outcome for resuming.
func (t JournalEntry) outcome() outcome {
	kind := search.Probe
	if t.Kind == search.Confirmation.String() {
		kind = search.Confirmation
	}
	o := outcome{
		Request: search.Request{Concurrency: t.Concurrency, Kind: kind, Index: t.Index},
		Pass:    t.Pass, Value: t.Closeness, DecidedEarly: t.DecidedEarly, Cost: t.CostS,
		Failed: t.Errors,
	}
	if t.Metrics != nil {
		o.Detail = t.Metrics
	}
	return o
}
