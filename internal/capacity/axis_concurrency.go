package capacity

// The closed-loop axis: a fixed number of requests in flight, each finished one replaced by
// the next, searched over the concurrency (or run as a grid over concurrency_levels).

import (
	"context"
	"fmt"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// concurrencyAxis searches the concurrency between min and max, or runs the grid levels.
type concurrencyAxis struct {
	syntheticPrompts
	levels   []int // search.concurrency_levels: a grid instead of the search
	min, max int
}

func (concurrencyAxis) pattern() string { return "closed-loop concurrency burst" }

// measure runs the concurrency search for one workload.
func (a concurrencyAxis) measure(ctx context.Context, r *trialRunner) (results.Workload, error) {
	res, out, err := a.search(ctx, r)
	if err != nil {
		return results.Workload{}, err
	}
	out.MaximumPassingConcurrency, out.FirstFailingConcurrency = res.MaximumPassing, res.FirstFailing
	if err := r.s.applyHeadline(&out); err != nil {
		return results.Workload{}, err
	}
	closedLoopNotes(&out, res, len(a.levels) > 0, func(level int) string { return fmt.Sprintf("concurrency %d", level) })
	return out, nil
}

// search runs the closed-loop search over integer levels (concurrency or users) from the
// journal's trials, and returns it with the workload's trials; the axis states the boundary.
func (a concurrencyAxis) search(ctx context.Context, r *trialRunner) (search.ResultOf[*results.Trial], results.Workload, error) {
	s, w := r.s, r.w
	var history []outcome
	for _, t := range s.cfg.History {
		// A trial whose requests failed, or whose client was the bottleneck, is measured
		// again (remeasured); a comparison's trials are not the search's.
		if t.Workload == w.Label && !t.remeasured() && t.Kind != kindComparison {
			history = append(history, t.outcome())
		}
	}
	res, err := search.Run(ctx, search.ConfigOf[*results.Trial]{
		Min: a.min, Max: a.max,
		Levels:             a.levels,
		ConfirmationTrials: s.cfg.ConfirmationTrials,
		History:            history,
		Threshold:          1,
		GuardBand:          guardBand,
		Progress:           func(o outcome) { r.finished(o, r.entry(o)) },
	}, search.RunnerFuncOf[*results.Trial](func(ctx context.Context, q search.Request) (outcome, error) {
		return r.runJudgeable(ctx, trialAt{Kind: q.Kind, Index: q.Index, Level: q.Concurrency, Value: float64(q.Concurrency)})
	}))
	if all, ok := endsClientBound(err, res.All); ok {
		// The search cannot judge the server past a client-bound level: the workload ends
		// there, its boundary what the trials below it say (DeriveHeadline).
		res = search.ResultOf[*results.Trial]{All: all, NonMonotone: res.NonMonotone}
		return res, workloadResult(w, nil, nil, all), nil
	}
	if err != nil {
		return res, results.Workload{}, err
	}
	return res, workloadResult(w, res.PassingTrials, res.FailingTrials, res.All), nil
}

// closedLoopNotes adds what a search over integer levels observed to the workload's notes:
// a non-monotone curve, a bound set by the search, each failed trial's errors (at names a
// level as the axis says it). Concurrency and users searches share it.
func closedLoopNotes(out *results.Workload, res search.ResultOf[*results.Trial], grid bool, at func(level int) string) {
	for _, n := range res.NonMonotone {
		out.Notes = append(out.Notes, n.String())
	}
	if n := BoundNote(*out, grid); n != "" {
		out.Notes = append(out.Notes, n)
	}
	for _, o := range res.All {
		if t := o.Detail; t != nil && o.Failed > 0 && !t.ClientBound() {
			out.Notes = append(out.Notes, failedNote(o, t, at(o.Concurrency)))
		}
		if t := o.Detail; t != nil && t.ClientBound() {
			out.Notes = append(out.Notes, clientBoundNote(o, at(o.Concurrency)))
		}
	}
}

func (concurrencyAxis) where(at trialAt) string { return fmt.Sprintf("concurrency %d", at.Level) }

func (concurrencyAxis) stream(workload string, at trialAt) string {
	return TrialStream(workload, at.Level, at.kindName(), at.Index)
}

// TrialStream names a closed-loop trial's prompt stream: its warmup prompts come from
// TrialStream + " warmup", its measured ones from TrialStream + " measured"
// (prompt.Generator.Prompts), so every trial sends prompts no other trial sends, and a
// resumed trial the same ones.
func TrialStream(workload string, concurrency int, kind string, index int) string {
	return fmt.Sprintf("%s c=%d %s t=%d", workload, concurrency, kind, index)
}

// drive runs the warmups and then the measured requests at the trial's concurrency; a probe
// stops the moment its verdict is certain, a confirmation runs in full because its metrics
// are reported. The warmups all finish before the measured requests start, so the watchers
// can mark the measured requests' start.
func (a concurrencyAxis) drive(ctx context.Context, r *trialRunner, at trialAt, p trialPhases, beforeMeasured func()) (driven, error) {
	spec := load.TrialSpec{Concurrency: at.Level, Warmup: p.warmup.texts, Measured: p.measured.texts, OutputTokens: r.w.OutputTokens,
		WarmupOutputTokens: p.warmup.maxTokens, MeasuredOutputTokens: p.measured.maxTokens, BeforeMeasured: beforeMeasured}
	var out driven
	if at.Kind == search.Probe {
		var err error
		if out.stop, err = newProbeStop(r.s.slos(), len(p.measured.texts), nil); err != nil {
			return out, err
		}
		spec.Tick, spec.Observe = out.stop.tick, out.stop.observe
	}
	res, spread, err := r.s.sendClosed(ctx, spec)
	out.res, out.measuredEnd, out.pods, out.podCPU = res, res.MeasuredEnd, spread.pods, spread.cpu
	out.window = res.Measured()
	// A trial added for a comparison may run at the minimum without being the search's
	// first: its failure is a finding of the comparison, never the end of the run.
	out.lowest = at.Level == a.min && !at.Comparison
	return out, err
}

func (concurrencyAxis) place(t *results.Trial, _ Workload, at trialAt) { t.Concurrency = at.Level }

// mark: the entry's concurrency is the search's level already.
func (concurrencyAxis) mark(*JournalEntry, Workload, float64) {}

func (concurrencyAxis) recordsFile(index int, w Workload, at trialAt) (string, records.Trial) {
	return records.FileName(index, w.Label, at.kindName(), at.Level, at.Index), records.Trial{Workload: w.Label, Concurrency: at.Level, Index: at.Index}
}

func (a concurrencyAxis) offAxis(t JournalEntry) string {
	switch {
	case t.Rate != 0:
		return fmt.Sprintf("it is a trial at rate %.6g requests/s, but the configuration searches by concurrency", t.Rate)
	case len(a.levels) > 0 && !slices.Contains(a.levels, t.Concurrency):
		return fmt.Sprintf("concurrency %d is not one of search.concurrency_levels", t.Concurrency)
	case len(a.levels) == 0 && (t.Concurrency < a.min || t.Concurrency > a.max):
		return fmt.Sprintf("concurrency %d lies outside search.min_concurrency to max_concurrency (%d to %d)", t.Concurrency, a.min, a.max)
	}
	return ""
}

func (concurrencyAxis) progressAt(e JournalEntry) string { return fmt.Sprintf("c=%d", e.Concurrency) }

// remaining plays the rest of a workload's search out against every boundary still
// possible (a level passes when it is at most the boundary) and returns the fewest and the
// most trials it would still ask for. The search is deterministic, so for clear-cut results
// this is exact.
func (a concurrencyAxis) remaining(cfg Config, entries []JournalEntry) (lo, hi int) {
	done := make([]outcome, len(entries))
	for i, e := range entries {
		done[i] = e.outcome()
	}
	return remainingTrials(cfg, done)
}

func remainingTrials(cfg Config, done []outcome) (lo, hi int) {
	if len(cfg.ConcurrencyLevels) > 0 {
		n := len(cfg.ConcurrencyLevels)*cfg.ConfirmationTrials - len(done)
		return max(n, 0), max(n, 0)
	}
	// Boundaries still possible: at least the highest level seen passing, below the
	// lowest seen failing; when results so far are not monotone, anywhere.
	from, to := cfg.MinConcurrency-1, cfg.MaxConcurrency
	for _, o := range done {
		if o.Pass {
			from = max(from, o.Concurrency)
		} else {
			to = min(to, o.Concurrency-1)
		}
	}
	if from > to {
		from, to = cfg.MinConcurrency-1, cfg.MaxConcurrency
	}
	return playOut(from, to, func(b int) (int, error) {
		n := 0
		_, err := search.Run(context.Background(), search.ConfigOf[*results.Trial]{
			Min: cfg.MinConcurrency, Max: cfg.MaxConcurrency, ConfirmationTrials: cfg.ConfirmationTrials,
			History: done, Threshold: 1, GuardBand: guardBand,
		}, search.RunnerFuncOf[*results.Trial](func(_ context.Context, req search.Request) (outcome, error) {
			n++
			return clearCut[*results.Trial](req.Concurrency <= b), nil
		}))
		return n, err
	})
}

// syntheticPrompts is the base of the axes that send the workload's own synthetic prompts
// (prepare.go): its lengths, spreads and shared prefix.
type syntheticPrompts struct{}

func (syntheticPrompts) prompts(ctx context.Context, s *session, w Workload, stream string) (trialPhases, error) {
	return s.syntheticPhases(ctx, w, stream)
}

func (syntheticPrompts) cacheShape(w Workload) (own, shared int) {
	return w.InputTokens - w.SharedPrefixTokens, w.SharedPrefixTokens
}

func (concurrencyAxis) loadStep() trialStep { return stepRequests }
