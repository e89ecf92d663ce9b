package capacity

// The replay axis: every workload's recorded trace (trace.go) sent at its own arrivals, its
// offsets divided by a speedup, and searched over the speedup (openloop.go is its base).

import (
	"context"
	"fmt"
	"math"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// replayAxis searches the speedup of every workload's trace over search.speedup's ladder.
type replayAxis struct{ openLoopBase }

func (replayAxis) pattern() string { return "open-loop trace replay" }

func (a replayAxis) measure(ctx context.Context, r *trialRunner) (results.Workload, error) {
	return measureLadder(ctx, r, a, a.ol, true)
}

func (replayAxis) where(at trialAt) string {
	return "speedup " + trimFloat(math.Round(at.Value*1000)/1000)
}

// prompts are the trace's requests, each fitted to its own lengths and blocks.
func (replayAxis) prompts(ctx context.Context, s *session, w Workload, stream string) (trialPhases, error) {
	return s.tracePhases(ctx, w, stream)
}

// drive sends the trace's own arrivals, its offsets divided by the speedup.
func (a replayAxis) drive(ctx context.Context, r *trialRunner, at trialAt, p trialPhases, _ func()) (driven, error) {
	w := r.w
	schedule, err := w.Trace.Schedule(at.Value)
	if err != nil {
		return driven{}, err
	}
	_, osl := w.Trace.MeanLengths() // each prompt asks for its own; this is only the default
	deal := func(parts int) []int { return dealSessions(w.Trace.Requests, parts) }
	return a.driveOnSchedule(ctx, r, at, p, schedule, traceRate(w, at.Value), "trace", osl, deal)
}

// cacheShape: a replayed prompt's hash_ids blocks may rightly be cached.
func (replayAxis) cacheShape(w Workload) (own, shared int) { return 0, sharedBlockTokens(w) }

func (replayAxis) place(t *results.Trial, w Workload, at trialAt) {
	t.RequestRate, t.Speedup = traceRate(w, at.Value), at.Value
}

func (replayAxis) mark(e *JournalEntry, w Workload, value float64) {
	e.Concurrency, e.Rate, e.Speedup = 0, traceRate(w, value), value
}

func (replayAxis) rung(e JournalEntry) float64 { return e.Speedup }

func (a replayAxis) offAxis(t JournalEntry) string {
	switch {
	case t.Rate == 0:
		return fmt.Sprintf("it is a trial at concurrency %d, but the configuration searches by request rate", t.Concurrency)
	case t.Speedup == 0:
		return fmt.Sprintf("it is a trial at rate %.6g requests/s, but the configuration searches a replay's speedup", t.Rate)
	}
	return a.offLadder(t.Speedup, fmt.Sprintf("speedup %.6g", t.Speedup))
}

func (replayAxis) describe(out *results.Workload, w Workload) {
	out.ConfiguredISL, out.ConfiguredOSL = w.Trace.MeanLengths()
	out.TraceFile, out.TraceSHA256 = w.TraceFile, w.Trace.SHA256
}

func (replayAxis) nonMonotone(passed, failed float64) string {
	return fmt.Sprintf("speedup %.4g passed although speedup %.4g failed", passed, failed)
}

func (a replayAxis) remaining(cfg Config, done []JournalEntry) (lo, hi int) {
	return remainingOnLadder(a, cfg, done)
}
