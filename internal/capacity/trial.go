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
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry"
)

// trialRunner runs the search's trials for one workload against the server.
type trialRunner struct {
	s     *session
	w     Workload
	index int // of w in the configuration, for records file names
	// replicas is what each replica proved for the trial now running (replica_endpoints),
	// set by settle; nil without replicas. Trials of one workload run one at a time.
	replicas *replicaTrial
}

// RunTrial runs one trial in named steps: settle the server (idle, cold cache) while the
// prompts are fitted, run the load (a probe stops once its verdict is certain), judge it,
// keep it. Its Timing says where the wall-clock went.
func (r *trialRunner) RunTrial(ctx context.Context, req search.Request) (search.Outcome, error) {
	clock := newTrialClock()
	watch := r.s.watch
	watch.begin(r.w.Label, req)
	stream := TrialStream(r.w.Label, req.Concurrency, req.Kind.String(), req.Index)
	// Fitting prompts asks the server to count tokens, which generates nothing: it overlaps
	// the idle wait and the flush instead of following them.
	prep := r.s.prepareAsync(ctx, r.w, stream)
	idleUnverified, err := r.settle(ctx, &clock.timing)
	if err != nil {
		prep.abandon()
		return search.Outcome{}, err
	}
	watch.enter("while its prompts were prepared")
	prompts, err := prep.wait(&clock.timing)
	if err != nil {
		return search.Outcome{}, err
	}
	watch.enter("while its requests ran")
	hostStart := sampleHost()
	run, err := r.load(ctx, req, prompts, clock)
	if err != nil {
		return search.Outcome{}, err
	}
	host := hostLoad(hostStart, sampleHost())
	run.idleUnverified = idleUnverified
	summaryStart := time.Now()
	out, abort, err := r.judge(req, prompts, run)
	if err != nil {
		return search.Outcome{}, err
	}
	trial := out.Detail.(*results.Trial)
	trial.Host = host
	if err := r.keepRecords(req, trial, run.res.Requests); err != nil {
		return search.Outcome{}, err
	}
	clock.timing.SummaryS = seconds(time.Since(summaryStart))
	clock.timing.TotalS = seconds(time.Since(clock.start))
	timing := clock.timing
	trial.Timing = &timing
	if abort != nil {
		// The search never sees this outcome, so it journals it here; a resumed run measures
		// it again, as every trial whose requests failed.
		e := r.entry(out)
		if r.s.cfg.Progress != nil {
			r.s.cfg.Progress(e)
		}
		watch.finished(r.w.Label, out, e)
		watch.begin(r.w.Label, req) // the run stops in this trial: its message names it
		return search.Outcome{}, abort
	}
	return out, nil
}

// TrialStream names a trial's prompt stream: its warmup prompts come from TrialStream + "
// warmup", its measured ones from TrialStream + " measured" (prompt.Generator.Prompts), so
// every trial sends prompts no other trial sends, and a resumed trial the same ones.
func TrialStream(workload string, concurrency int, kind string, index int) string {
	return fmt.Sprintf("%s c=%d %s t=%d", workload, concurrency, kind, index)
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
	s.watch.enter("while waiting for the server to finish earlier work")
	if err := s.control.WaitIdle(ctx, s.engine); err != nil {
		return false, err
	}
	timing.IdleWaitS = seconds(time.Since(t0))
	unverified = s.engine != "" && s.control.IdleUnverified()
	if s.flush.Engine == "" {
		return unverified, nil
	}
	t1 := time.Now()
	s.watch.enter("while flushing the server's prefix cache")
	err = s.control.Flush(ctx, s.flush) // waits for idle itself: immediate after the wait above
	timing.CacheFlushS = seconds(time.Since(t1))
	return unverified, err
}

// idleUnverifiedNote is a trial's note when the server offered no idle signal before it.
const idleUnverifiedNote = "the server offered no idle signal (no load endpoint and no running or waiting gauges: SGLang 0.4.x without --enable-metrics), " +
	"so this trial may have started while earlier requests still ran, and a flush sent then may have done nothing"

// trialLoad is what the load step produced.
type trialLoad struct {
	res            load.TrialResult
	view           *results.ServerView
	measuredHits   *float64             // the engine's prefix-cache hits over the measured requests alone
	waitedOut      bool                 // a probe decided by requests still waiting: no verdict from finished ones
	idleUnverified bool                 // the server offered no idle signal before the trial
	accelerators   *telemetry.Recording // the accelerators' exporters over the trial; nil without them
}

// load runs the warmups and measured requests, with the engine's own metrics scraped before,
// during and after; a probe stops the moment its verdict is certain, a confirmation runs in
// full because its metrics are reported.
func (r *trialRunner) load(ctx context.Context, req search.Request, prompts trialPhases, clock *trialClock) (trialLoad, error) {
	s, w := r.s, r.w
	spec := load.TrialSpec{Concurrency: req.Concurrency, Warmup: prompts.warmup.texts, Measured: prompts.measured.texts, OutputTokens: w.OutputTokens,
		WarmupOutputTokens: prompts.warmup.maxTokens, MeasuredOutputTokens: prompts.measured.maxTokens}
	var out trialLoad
	var stop *probeStop
	if req.Kind == search.Probe {
		var err error
		if stop, err = newProbeStop(s.slos(), len(prompts.measured.texts), nil); err != nil {
			return out, err
		}
		spec.Tick, spec.Observe = stop.tick, stop.observe
	}
	t0 := time.Now()
	// The accelerators' exporters are scraped in their own goroutine from here to after the
	// load; marking the measured requests' start only asks for a scrape, it never waits.
	accel := telemetry.Start(ctx, s.telemetry, s.cfg.TelemetryInterval)
	watch := watchServer(ctx, s.control, s.engine)
	spec.BeforeMeasured = func() {
		accel.MarkMeasured()
		watch.markMeasured(ctx)
		r.replicas.markMeasured(ctx)
	}
	loadStart := time.Now()
	res, err := load.RunTrial(ctx, s.client, spec)
	loadEnd := time.Now()
	out.waitedOut = stop.decidedByWaiting()
	out.view = watch.finish(ctx)
	out.measuredHits = watch.measuredHits()
	out.accelerators = accel.Finish(ctx)
	if r.replicas != nil {
		// The Service's /metrics is one replica's; the replicas' own counters add up to all.
		out.measuredHits = r.replicas.finish(ctx)
	}
	clock.timing.ServerScrapeS = seconds(loadStart.Sub(t0) + time.Since(loadEnd))
	if !res.MeasuredStart.IsZero() {
		clock.timing.WarmupS = seconds(res.MeasuredStart.Sub(loadStart))
		if !res.MeasuredEnd.IsZero() {
			clock.timing.MeasuredS = seconds(res.MeasuredEnd.Sub(res.MeasuredStart))
		}
	} else {
		clock.timing.WarmupS = seconds(loadEnd.Sub(loadStart))
	}
	out.res = res
	return out, err
}

// judge turns the load into the search's outcome and the trial's metrics. abort is
// ErrServerFailing when a full trial at the minimum concurrency saw no request succeed.
func (r *trialRunner) judge(req search.Request, prompts trialPhases, run trialLoad) (out search.Outcome, abort error, err error) {
	s, w := r.s, r.w
	res := run.res
	done := res.Measured()
	// Only a full trial at the minimum concurrency can say there is no capacity at all: a
	// probe stopped at its first failed request is just a fail, and a server shedding load
	// above the minimum is a failing level, recorded with its errors. The run stops there,
	// but only after the trial is kept like any other: what the server answered is the
	// user's diagnostic.
	if !res.Stopped && req.Concurrency == s.cfg.MinConcurrency {
		abort = allFailed(done, metrics.ErrorSummary(done, requestedOSL(w)))
	}
	slos := s.slos()
	var verdict metrics.Verdict
	if !run.waitedOut {
		if verdict, err = metrics.Evaluate(slos, done); err != nil {
			return out, nil, err
		}
	}
	failed := countFailed(done)
	if res.Stopped {
		cutShort(&verdict, failed)
	}
	out = search.Outcome{
		Request: req, Pass: verdict.Pass, Value: verdict.Closeness,
		DecidedEarly: res.Stopped, Cost: requestSeconds(res.Requests), Failed: failed,
	}
	// Every trial is kept with its metrics. A probe cut short may have no successful
	// request to take them from, nor a trial whose requests all failed; their counters and
	// error summary still say what happened.
	trial, err := metrics.Summarize(res.Requests, requestedOSL(w))
	if err != nil && req.Kind == search.Confirmation && !errors.Is(err, metrics.ErrNoSuccessfulRequests) {
		return out, nil, err
	}
	if d := trial.Correctness.DegenerateOutputs; failDegenerate(&out, d) {
		if abort == nil && !res.Stopped && req.Concurrency == s.cfg.MinConcurrency {
			abort = fmt.Errorf("%w: %d of %d measured outputs at the minimum concurrency: %s; the server answers HTTP 200 with broken text, "+
				"so there is no capacity to measure: check the model, its dtype and the engine's attention backend, and the server's logs",
				ErrDegenerateOutput, d.Requests, d.Checked, metrics.DescribeErrors(trial.ErrorSummary))
		}
	}
	trial.Trial = req.Index
	trial.Concurrency = req.Concurrency
	trial.SLOs = verdict.Results
	if !run.waitedOut {
		goodput := verdict.GoodputPercent
		trial.GoodputPercent = &goodput
	}
	trial.Server = run.view
	trial.Accelerators = run.accelerators.Summary(outputTokens(done))
	trial.Replicas = r.replicas.results()
	if run.idleUnverified {
		trial.Notes = append(trial.Notes, idleUnverifiedNote)
	}
	// A shared prefix is served from the cache after the first request: expected, not flagged.
	s.sawCacheReports(res.Requests)
	checkCache(&trial, done, coldCache{
		ownTokens:     w.InputTokens - w.SharedPrefixTokens,
		sharedTokens:  int(math.Ceil(prompts.measured.calibration.TemplateOverheadTokens)) + w.SharedPrefixTokens,
		flushed:       s.flush.Engine != "",
		omittedAsZero: s.cacheReport.known(),
		measuredHits:  run.measuredHits,
	})
	if trial.Correctness.RequestsCachedBeyondSharedPrefix > 0 && s.flush.Engine != "" {
		if note := r.replicas.hitsNote(); note != "" {
			trial.Notes = append(trial.Notes, note)
		}
	}
	out.Detail = &trial
	return out, abort, nil
}

// keepRecords writes the trial's per-request records file when records_directory is set.
func (r *trialRunner) keepRecords(req search.Request, trial *results.Trial, requests []load.RequestResult) error {
	dir := r.s.cfg.RecordsDirectory
	if dir == "" {
		return nil
	}
	rel := records.FileName(r.index, r.w.Label, req.Kind.String(), req.Concurrency, req.Index)
	lines := records.FromLoad(records.Trial{Workload: r.w.Label, Concurrency: req.Concurrency, Index: req.Index, ChunkTimes: r.s.cfg.RecordChunkTimes}, requests)
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

// cutShort is the verdict of a probe stopped early. One stopped by a failed request failed
// for that reason: it measured no objective value, and claims none. One that missed an
// objective knows only that its closeness is at least 1, whatever the few finished requests
// say.
func cutShort(v *metrics.Verdict, failed int) {
	switch {
	case failed > 0:
		v.Closeness, v.Results = 0, nil
	case !v.Pass:
		v.Closeness = max(v.Closeness, 1)
	}
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

// failDegenerate fails a trial most of whose outputs were degenerate (d.Most): the server
// answered with broken text, and what the trial timed is no capacity. It fails as a trial
// whose requests failed does, an error rather than an objective's miss, with the degenerate
// outputs counted among its failed requests.
func failDegenerate(out *search.Outcome, d *results.DegenerateOutputs) bool {
	if !d.Most() {
		return false
	}
	out.Pass, out.Value = false, 0
	out.Failed = max(out.Failed, d.Requests)
	return true
}

// failedNote is the workload note of a trial with failed requests (Outcome.Failed).
func failedNote(o search.Outcome, t *results.Trial, level string) string {
	what := fmt.Sprintf("%d measured requests failed", o.Failed)
	if d := t.Correctness.DegenerateOutputs; d.Most() {
		what = fmt.Sprintf("%d of %d measured outputs were degenerate", d.Requests, d.Checked)
	}
	return fmt.Sprintf("%s %d at %s: %s: %s", o.Kind, o.Index, level, what, metrics.DescribeErrors(t.ErrorSummary))
}

// countFailed counts measured requests that failed, not counting cancelled ones.
func countFailed(records []load.RequestResult) int {
	n := 0
	for _, r := range records {
		if !r.Cancelled && !metrics.Succeeded(r) {
			n++
		}
	}
	return n
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
func (r *trialRunner) entry(o search.Outcome) JournalEntry {
	t := JournalEntry{
		Time: time.Now().UTC(), Workload: r.w.Label, Concurrency: o.Concurrency,
		Kind: o.Kind.String(), Index: o.Index, Pass: o.Pass,
		Closeness:    o.Value,
		DecidedEarly: o.DecidedEarly, ValueIsBound: o.DecidedEarly && !o.Pass && o.Failed == 0, CostS: o.Cost,
		Errors: o.Failed,
	}
	t.Verdict = t.verdict()
	if m, ok := o.Detail.(*results.Trial); ok && m != nil {
		if m.Timing != nil {
			t.DurationS = m.Timing.TotalS
		}
		t.SLOs = m.SLOs
		t.Metrics = m
		t.ErrorSummary = m.ErrorSummary
		t.Requests = m.Correctness.WarmupRecords + m.Correctness.ProfilingRecords
	}
	return t
}

// outcome turns a journal entry back into a search outcome for resuming.
func (t JournalEntry) outcome() search.Outcome {
	kind := search.Probe
	if t.Kind == search.Confirmation.String() {
		kind = search.Confirmation
	}
	o := search.Outcome{
		Request: search.Request{Concurrency: t.Concurrency, Kind: kind, Index: t.Index},
		Pass:    t.Pass, Value: t.Closeness, DecidedEarly: t.DecidedEarly, Cost: t.CostS,
		Failed: t.Errors,
	}
	if t.Metrics != nil {
		o.Detail = t.Metrics
	}
	return o
}
