package capacity

// The load axis: what a benchmark varies to find its capacity boundary. Each axis is one
// type in a file of its own (axis_concurrency.go, axis_rate.go, axis_replay.go), picked once
// from the validated configuration (pickAxis); every trial, on any axis, goes through the one
// pipeline in trial.go (settle → prepare → load through the axis → judge → keep), and every
// workload through its axis's one search entry (measure). The axes that send on a schedule
// (rate, replay) share their base in openloop.go.

import (
	"context"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// axis is one way of loading the server, and of searching along that load for a workload's
// capacity. An implementation holds its settings; a run holds one (session.axis).
type axis interface {
	// pattern is the document's aiperf.arrival_pattern.
	pattern() string
	// measure is the axis's search entry: it searches one workload (r.w) along the axis,
	// running each trial through r.run and reusing the journal's trials (r.s.cfg.History),
	// and returns the workload's results with its boundary, headline and notes.
	measure(ctx context.Context, r *trialRunner) (results.Workload, error)

	// where names a trial's place for people: "concurrency 4", "2.5 requests/s",
	// "speedup 1.5" (the message of a run stopped in it).
	where(at trialAt) string
	// stream names a trial's prompt stream: the same trial always sends the same prompts,
	// and no two trials the same.
	stream(workload string, at trialAt) string
	// prompts fits one trial's warmup and measured prompts.
	prompts(ctx context.Context, s *session, w Workload, stream string) (trialPhases, error)
	// drive sends the trial's load and returns what the judge needs. It calls
	// beforeMeasured, when it has a pause between warmups and measured requests, so the
	// watchers can mark where the measured requests begin.
	drive(ctx context.Context, r *trialRunner, at trialAt, p trialPhases, beforeMeasured func()) (driven, error)
	// place writes the trial's position on the axis into its document record; mark
	// writes a finished trial's into its journal entry (value is at.Value).
	place(t *results.Trial, w Workload, at trialAt)
	mark(e *JournalEntry, w Workload, value float64)
	// cacheShape is the prompt tokens of each measured request that are its own (no cache
	// may serve them) and that it may rightly share with others (a shared prefix, a
	// replayed trace's blocks).
	cacheShape(w Workload) (own, shared int)
	// recordsFile is the per-request records file of a trial (relative to
	// records_directory) and the trial those records name.
	recordsFile(index int, w Workload, at trialAt) (string, records.Trial)

	// leastTrial is the least time a trial of workload i waits on its own schedule or its
	// users' pauses, whatever the server does (timebudget.go); zero when nothing but the
	// server decides it.
	leastTrial(cfg Config, i int, w Workload) trialFloor
	// loadStep is the step a trial is in while its load runs, as a stopped run names it.
	loadStep() trialStep

	// progressAt names a finished trial's place in its progress line: "c=4",
	// "rate 3.08/s offered 2.32/s".
	progressAt(e JournalEntry) string
	// remaining is the fewest and the most trials a workload's search can still ask for
	// after the trials done (none: a workload not begun).
	remaining(cfg Config, done []JournalEntry) (lo, hi int)
	// offAxis says why a journal entry's place is not one the axis's search can ask for
	// (another axis, a level outside the search), or "": resuming reuses only those.
	offAxis(t JournalEntry) string
}

// runAxis is the axis the configuration runs on: the one Check picked, or, for a
// configuration no Check has seen (a test's), the one it would pick.
func (c Config) runAxis() axis {
	if c.axis != nil {
		return c.axis
	}
	return pickAxis(c)
}

// pickAxis is the axis a validated configuration runs on; Check picks it once.
func pickAxis(cfg Config) axis {
	switch o := cfg.OpenLoop; {
	case o == nil && len(cfg.Workloads) > 0 && cfg.Workloads[0].Conversation != nil:
		return usersAxis{concurrencyAxis{levels: cfg.ConcurrencyLevels, min: cfg.MinConcurrency, max: cfg.MaxConcurrency}}
	case o == nil:
		return concurrencyAxis{levels: cfg.ConcurrencyLevels, min: cfg.MinConcurrency, max: cfg.MaxConcurrency}
	case o.Speedup:
		return replayAxis{openLoopBase{ol: *o}}
	default:
		return rateAxis{openLoopBase: openLoopBase{ol: *o}}
	}
}

// trialAt is one trial the search asks for, on the run's axis.
type trialAt struct {
	Kind  search.Kind
	Index int // 1-based: the confirmation trial's number at its level; probes are 1
	// Level is the search's level: the concurrency of a closed loop; 0 on a ladder, whose
	// rungs are the search's own.
	Level int
	// Value is what the level stands for: the concurrency, the request rate, or a replay's
	// speedup.
	Value float64
	// Comparison marks a full trial added for the comparison with the baseline
	// (comparison.go): Kind is Confirmation, Index its number among those at its level, and
	// its prompts and records file are its own, never a search trial's.
	Comparison bool
}

// kindName names the trial's kind in its prompt stream, records file and journal entry:
// probe, confirmation or comparison.
func (at trialAt) kindName() string {
	if at.Comparison {
		return kindComparison
	}
	return at.Kind.String()
}

// outcome and rateOutcome are the search's outcomes as capacity runs them: each carries its
// trial's document record, typed, from the trial pipeline to the document.
type (
	outcome     = search.OutcomeOf[*results.Trial]
	rateOutcome = search.RateOutcomeOf[*results.Trial]
)
