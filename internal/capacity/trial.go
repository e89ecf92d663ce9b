package capacity

// One trial: the prompts, the load, the metrics, the verdict and the records file.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// trialRunner runs the search's trials for one workload against the server.
type trialRunner struct {
	s     *session
	w     Workload
	index int // of w in the configuration, for records file names
}

func (r *trialRunner) RunTrial(ctx context.Context, req search.Request) (search.Outcome, error) {
	s, w := r.s, r.w // errors need no location: search.Run names the trial
	// Requests a stopped probe cancelled may still be processed: the next trial starts on an
	// idle server, and from a cold cache when flushing is on (the flush waits for idle
	// itself, and fails the trial when the server does not confirm it).
	if s.flush.Engine != "" {
		if err := s.control.Flush(ctx, s.flush); err != nil {
			return search.Outcome{}, err
		}
	} else if err := s.control.WaitIdle(ctx, s.engine); err != nil {
		return search.Outcome{}, err
	}
	idleUnverified := s.engine != "" && s.control.IdleUnverified()
	stream := fmt.Sprintf("%s c=%d %s t=%d", w.Label, req.Concurrency, req.Kind, req.Index)
	warmups, err := s.workloadPrompts(ctx, w, stream+" warmup", s.cfg.WarmupRequests)
	if err != nil {
		return search.Outcome{}, fmt.Errorf("warmup prompts: %w", err)
	}
	measured, err := s.workloadPrompts(ctx, w, stream+" measured", s.cfg.MeasuredRequests)
	if err != nil {
		return search.Outcome{}, fmt.Errorf("measured prompts: %w", err)
	}

	spec := load.TrialSpec{Concurrency: req.Concurrency, Warmup: warmups.texts, Measured: measured.texts, OutputTokens: w.OutputTokens,
		WarmupOutputTokens: warmups.maxTokens, MeasuredOutputTokens: measured.maxTokens}
	// Probes stop the moment their verdict is certain; confirmations always run in full
	// because their metrics are reported.
	slos := s.slos()
	waitedOut := false
	var decider *metrics.TrialDecider
	if req.Kind == search.Probe {
		decider, err = metrics.NewTrialDecider(slos, len(measured.texts))
		if err != nil {
			return search.Outcome{}, err
		}
		spec.Tick = probeTick(slos)
		spec.Observe = func(e load.Event) bool {
			var d metrics.Decision
			switch e.Kind {
			case load.EventFirstContent:
				d = decider.FirstContent(e.Result)
			case load.EventCompleted:
				d = decider.Complete(e.Result)
			case load.EventTick:
				// Requests still waiting already have a metric at least as long as their
				// wait: five requests waiting past a 10 s TTFT threshold decide a p95 fail
				// without waiting for their first tokens.
				d = decider.WithPending(e.Now, e.InFlight)
				waitedOut = d == metrics.DecidedFail
			}
			return d != metrics.Undecided
		}
	}
	// The engine's own metrics before, during and after the trial: its side of the story.
	watch := watchServer(ctx, s.control, s.engine)
	spec.BeforeMeasured = func() { watch.markMeasured(ctx) }
	res, err := load.RunTrial(ctx, s.client, spec)
	view := watch.finish(ctx)
	if err != nil {
		return search.Outcome{}, err
	}
	done := res.Measured()
	// Only a full trial at the minimum concurrency can say there is no capacity at all: a
	// probe stopped at its first failed request is just a fail, and a server shedding load
	// above the minimum is a failing level, recorded with its errors. The run stops there,
	// but only after the trial is kept like any other (below): what the server answered is
	// the user's diagnostic.
	var abort error
	if !res.Stopped && req.Concurrency == s.cfg.MinConcurrency {
		abort = allFailed(done, metrics.ErrorSummary(done, requestedOSL(w)))
	}
	var verdict metrics.Verdict
	if !waitedOut {
		if verdict, err = metrics.Evaluate(slos, done); err != nil {
			return search.Outcome{}, err
		}
	}
	failed := countFailed(done)
	erroredEarly := res.Stopped && failed > 0
	switch {
	case erroredEarly:
		// A probe stopped by a failed request failed for that reason: it measured no
		// objective value, and claims none.
		verdict.Closeness, verdict.Results = 0, nil
	case res.Stopped && !verdict.Pass:
		// A probe cut short knows only that it missed an objective; its closeness is at
		// least 1 whatever the few finished requests say.
		verdict.Closeness = max(verdict.Closeness, 1)
	}
	out := search.Outcome{
		Request: req, Pass: verdict.Pass, Value: verdict.Closeness,
		DecidedEarly: res.Stopped, Cost: requestSeconds(res.Requests), Failed: failed,
	}
	// Every trial is kept with its metrics. A probe cut short may have no successful
	// request to take them from, nor a trial whose requests all failed; their counters and
	// error summary still say what happened.
	trial, err := metrics.Summarize(res.Requests, requestedOSL(w))
	if err != nil && req.Kind == search.Confirmation && !errors.Is(err, metrics.ErrNoSuccessfulRequests) {
		return search.Outcome{}, err
	}
	trial.Trial = req.Index
	trial.Concurrency = req.Concurrency
	if s.cfg.RecordsDirectory != "" {
		rel := records.FileName(r.index, w.Label, req.Kind.String(), req.Concurrency, req.Index)
		lines := records.FromLoad(records.Trial{Workload: w.Label, Concurrency: req.Concurrency, Index: req.Index, ChunkTimes: s.cfg.RecordChunkTimes}, res.Requests)
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
	if idleUnverified {
		trial.Notes = append(trial.Notes, "the server offered no idle signal (no load endpoint and no running or waiting gauges: SGLang 0.4.x without --enable-metrics), "+
			"so this trial may have started while earlier requests still ran, and a flush sent then may have done nothing")
	}
	// A shared prefix is served from the cache after the first request: expected, not flagged.
	s.sawCacheReports(res.Requests)
	checkCache(&trial, done, coldCache{
		ownTokens:     w.InputTokens - w.SharedPrefixTokens,
		sharedTokens:  int(math.Ceil(measured.calibration.TemplateOverheadTokens)) + w.SharedPrefixTokens,
		flushed:       s.flush.Engine != "",
		omittedAsZero: s.cacheReport.known(),
		measuredHits:  watch.measuredHits(),
	})
	out.Detail = &trial
	if abort != nil {
		// The search never sees this outcome, so it journals it here; a resumed run measures
		// it again, as every trial whose requests failed.
		if s.cfg.Progress != nil {
			s.cfg.Progress(r.entry(out))
		}
		return search.Outcome{}, abort
	}
	return out, nil
}

// requestedOSL is the output length the metrics judge mismatches against: the workload's,
// or each request's own (0) when lengths are spread.
func requestedOSL(w Workload) int {
	if w.OutputTokensStddev > 0 {
		return 0
	}
	return w.OutputTokens
}

// trialPrompts are the prompts of one phase of a trial.
type trialPrompts struct {
	texts []string
	// maxTokens are each prompt's max_tokens when output lengths are spread; nil when every
	// request asks for the workload's.
	maxTokens   []int
	calibration prompt.Calibration // how the prompts were fitted to their lengths
}

// workloadPrompts makes n prompts of a trial's stream with the workload's shape. Lengths
// are drawn from a generator seeded by the configuration seed and the stream, so a resumed
// or repeated run sends the same lengths.
func (s *session) workloadPrompts(ctx context.Context, w Workload, stream string, n int) (trialPrompts, error) {
	if w.InputTokensStddev == 0 && w.OutputTokensStddev == 0 && w.SharedPrefixTokens == 0 {
		texts, cal, err := s.prompts.Prompts(ctx, stream, n, w.InputTokens)
		return trialPrompts{texts: texts, calibration: cal}, err
	}
	h := fnv.New64a()
	h.Write([]byte(stream))
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), h.Sum64()))
	draw := func(mean int, sd float64) int {
		if sd == 0 {
			return mean
		}
		return max(1, int(math.Round(float64(mean)+sd*rng.NormFloat64())))
	}
	var prefix string
	if w.SharedPrefixTokens > 0 {
		p, _, err := s.prompts.Prompts(ctx, w.Label+" shared prefix", 1, w.SharedPrefixTokens)
		if err != nil {
			return trialPrompts{}, fmt.Errorf("shared prefix: %w", err)
		}
		prefix = p[0] + "\n\n"
	}
	prompts := make([]string, n)
	var outs []int
	if w.OutputTokensStddev > 0 {
		outs = make([]int, n)
	}
	var cal prompt.Calibration
	for i := range prompts {
		own := max(1, draw(w.InputTokens, w.InputTokensStddev)-w.SharedPrefixTokens)
		p, c, err := s.prompts.Prompts(ctx, fmt.Sprintf("%s #%d", stream, i), 1, own)
		if err != nil {
			return trialPrompts{}, err
		}
		cal = c
		prompts[i] = prefix + p[0]
		if outs != nil {
			outs[i] = draw(w.OutputTokens, w.OutputTokensStddev)
		}
	}
	return trialPrompts{texts: prompts, maxTokens: outs, calibration: cal}, nil
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
	if m, ok := o.Detail.(*results.Trial); ok && m != nil {
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
