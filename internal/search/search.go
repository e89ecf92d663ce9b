// Package search finds the capacity boundary: the highest concurrency whose confirmation trials
// all pass the SLO. It reports exactly what the exhaustive grid protocol reports (k confirmation
// trials at every concurrency from the minimum up to the first failure) while running far fewer
// trials: single probes that may stop as soon as their verdict is decided bracket and bisect the
// boundary down to a few levels, which are walked up with single confirmation trials (the
// grid's own trials), and only the two levels around the boundary, and the levels under it
// whose trials came close to the threshold, get all k confirmation trials.
//
// The package knows nothing of HTTP, metrics or Terraform: a TrialRunner runs one trial and says
// whether it passed.
package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Kind tells a probe from a confirmation trial.
type Kind int

const (
	// Probe is a single trial used to locate the boundary. The runner may stop it as soon as its
	// verdict is decided; it is never reported as a confirmation trial.
	Probe Kind = iota + 1
	// Confirmation is a full trial at a boundary side; k of them run at each confirmed level,
	// all in full even after one fails, because the result reports all of them.
	Confirmation
)

func (k Kind) String() string {
	switch k {
	case Probe:
		return "probe"
	case Confirmation:
		return "confirmation"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Request identifies one trial. (Concurrency, Kind, Index) is its identity for resuming: the
// search asks for the same requests in the same order whenever it sees the same outcomes.
type Request struct {
	Concurrency int
	Kind        Kind
	Index       int // 1-based: confirmation trial number at this concurrency; probes are always 1
}

// OutcomeOf is what one trial produced; D is the caller's full trial record, carried
// through the search untouched (Detail).
type OutcomeOf[D any] struct {
	Request
	Pass bool
	// Value is how near the trial came to failing, without a unit: capacity passes the
	// verdict's closeness (the largest value-over-threshold ratio of the objectives, 1 or more
	// when one was missed). For a probe stopped early it may be a bound rather than the exact
	// value; the search only reads confirmation values.
	Value        float64
	DecidedEarly bool // the runner stopped the trial once its verdict was decided
	// Failed counts measured requests that failed. A trial with failures fails because the
	// server failed, not because the metric missed the threshold: its Value means nothing,
	// and it is not evidence that the capacity curve is non-monotone.
	Failed  int
	Cost    float64 // request-seconds the trial occupied the server, warmups included
	Detail  D       // the caller's full trial record, carried through untouched
	Resumed bool    // taken from Config.History rather than run by this search
}

// The search is generic over the detail its outcomes carry (OutcomeOf, ConfigOf, ResultOf,
// TrialRunnerOf, RunnerFuncOf and their rate counterparts); Outcome, Config, Result,
// TrialRunner and RunnerFunc are its instances for a caller whose detail is untyped.
type (
	// Outcome is OutcomeOf with an untyped detail.
	Outcome = OutcomeOf[any]
	// Config is ConfigOf with an untyped detail.
	Config = ConfigOf[any]
	// Result is ResultOf with an untyped detail.
	Result = ResultOf[any]
	// TrialRunner is TrialRunnerOf with an untyped detail.
	TrialRunner = TrialRunnerOf[any]
	// RunnerFunc is RunnerFuncOf with an untyped detail.
	RunnerFunc = RunnerFuncOf[any]
)

// TrialRunnerOf runs one trial. It must honour ctx: when ctx ends it stops the load and
// returns an error wrapping ctx.Err().
type TrialRunnerOf[D any] interface {
	RunTrial(ctx context.Context, req Request) (OutcomeOf[D], error)
}

// RunnerFuncOf adapts a function to TrialRunnerOf.
type RunnerFuncOf[D any] func(ctx context.Context, req Request) (OutcomeOf[D], error)

// RunTrial calls f.
func (f RunnerFuncOf[D]) RunTrial(ctx context.Context, req Request) (OutcomeOf[D], error) {
	return f(ctx, req)
}

// ConfigOf is one search.
type ConfigOf[D any] struct {
	Min, Max           int // concurrency bounds, inclusive
	ConfirmationTrials int // k >= 1 full trials per confirmed level

	// Levels, when set, replaces the search by a plain grid: k confirmation trials at each of
	// these concurrencies (Min and Max are ignored), no probes, every level run whatever
	// the others gave. The boundary is the first failing level and the level before it.
	Levels []int

	// History holds outcomes of an earlier, interrupted search of the same workload. A request
	// found there is not run again.
	History []OutcomeOf[D]

	// Progress, when set, is called once per outcome the search uses, in order, including those
	// taken from History (marked Resumed).
	Progress func(OutcomeOf[D])

	// Threshold and GuardBand make the result safer against noise: the grid would also run the
	// levels just below the boundary, and where the boundary's confirmation trials came within
	// GuardBand (relative) of Threshold, one of those lower trials may fail too. The search then
	// confirms the level below as well, and so on down while the evidence stays that close.
	// Zero GuardBand turns this off. Values are compared as "lower is better" (latencies).
	Threshold float64
	GuardBand float64
}

// MaxLevel is the highest concurrency a search accepts. The search never walks the range
// between its bounds (it touches only the levels it tries), so the limit only keeps its
// arithmetic (Max+1, midpoints, doubling steps) clear of overflow.
const MaxLevel = math.MaxInt32

func (c ConfigOf[D]) validate() error {
	if len(c.Levels) > 0 {
		seen := map[int]bool{}
		for _, l := range c.Levels {
			if l < 1 {
				return fmt.Errorf("search: concurrency level %d: must be at least 1", l)
			}
			if seen[l] {
				return fmt.Errorf("search: concurrency level %d is listed twice", l)
			}
			seen[l] = true
		}
		if c.ConfirmationTrials < 1 {
			return fmt.Errorf("search: confirmation trials must be at least 1, got %d", c.ConfirmationTrials)
		}
		return nil
	}
	switch {
	case c.Min < 1:
		return fmt.Errorf("search: minimum concurrency must be at least 1, got %d", c.Min)
	case c.Max < c.Min:
		return fmt.Errorf("search: maximum concurrency %d is below the minimum %d", c.Max, c.Min)
	case c.Max > MaxLevel:
		return fmt.Errorf("search: maximum concurrency %d is above %d", c.Max, MaxLevel)
	case c.ConfirmationTrials < 1:
		return fmt.Errorf("search: confirmation trials must be at least 1, got %d", c.ConfirmationTrials)
	case c.GuardBand < 0 || c.GuardBand >= 1:
		return fmt.Errorf("search: guard band must be in [0, 1), got %g", c.GuardBand)
	case c.GuardBand > 0 && !(c.Threshold > 0):
		return fmt.Errorf("search: a guard band needs a positive threshold, got %g", c.Threshold)
	}
	return nil
}

// NonMonotone records a level that passed while a lower level failed: the capacity curve is not
// monotone there (noise or a real effect), and the reader should know.
type NonMonotone struct {
	Passed int // a concurrency with a passing trial
	Failed int // the highest lower concurrency with a failing trial
}

func (n NonMonotone) String() string {
	return fmt.Sprintf("concurrency %d passed although %d failed", n.Passed, n.Failed)
}

// ResultOf is the boundary and every trial behind it.
type ResultOf[D any] struct {
	MaximumPassing *int // nil: even the minimum failed (or the search did not finish)
	FirstFailing   *int // nil: nothing failed up to the maximum (or the search did not finish)
	PassingTrials  []OutcomeOf[D]
	FailingTrials  []OutcomeOf[D]
	All            []OutcomeOf[D] // every trial used, in order, then unused History entries
	NonMonotone    []NonMonotone
	Cost           float64 // request-seconds of All
}

// level is what is known about one concurrency.
type level[D any] struct {
	probe *OutcomeOf[D]
	conf  []OutcomeOf[D]
}

type searcher[D any] struct {
	cfg     ConfigOf[D]
	runner  TrialRunnerOf[D]
	history map[Request]int // index into cfg.History
	used    []bool
	levels  map[int]*level[D]
	res     ResultOf[D]
}

// Run searches for the boundary. On error (a failed trial or a cancelled ctx) it returns what was
// measured so far in Result.All, with the boundaries left nil, so the caller can store the
// outcomes and resume later by passing them as History.
func Run[D any](ctx context.Context, cfg ConfigOf[D], runner TrialRunnerOf[D]) (ResultOf[D], error) {
	if err := cfg.validate(); err != nil {
		return ResultOf[D]{}, err
	}
	if runner == nil {
		return ResultOf[D]{}, errors.New("search: no trial runner")
	}
	s := &searcher[D]{cfg: cfg, runner: runner, history: map[Request]int{}, used: make([]bool, len(cfg.History)), levels: map[int]*level[D]{}}
	for i, o := range cfg.History {
		if _, dup := s.history[o.Request]; !dup {
			s.history[o.Request] = i
		}
	}
	var err error
	if len(cfg.Levels) > 0 {
		err = s.grid(ctx)
	} else {
		err = s.search(ctx)
	}
	for i, o := range cfg.History {
		if !s.used[i] {
			o.Resumed = true
			s.res.All = append(s.res.All, o)
		}
	}
	for _, o := range s.res.All {
		s.res.Cost += o.Cost
	}
	s.res.NonMonotone = nonMonotone(s.res.All)
	if err != nil {
		s.res.MaximumPassing, s.res.FirstFailing, s.res.PassingTrials, s.res.FailingTrials = nil, nil, nil, nil
		return s.res, err
	}
	return s.res, nil
}

// belief is the best knowledge of a level's verdict: a failed confirmation trial, else the
// confirmation trials run so far (they are the grid's own trials; a level passing them is
// given the rest before it counts as the boundary), else its probe. ok is false for a level
// never tried.
func (s *searcher[D]) belief(c int) (pass, ok bool) {
	if c < s.cfg.Min {
		return true, true // below the bounds counts as passing: nothing to find there
	}
	if c > s.cfg.Max {
		return false, true // above the bounds counts as failing: the search stops at Max
	}
	l := s.levels[c]
	switch {
	case l == nil:
		return false, false
	case len(l.conf) > 0 && !allPass(l.conf):
		return false, true
	case len(l.conf) > 0:
		return true, true
	case l.probe != nil:
		return l.probe.Pass, true
	}
	return false, false
}

func (s *searcher[D]) confirmed(c int) bool {
	l := s.levels[c]
	return l != nil && len(l.conf) == s.cfg.ConfirmationTrials
}

func (s *searcher[D]) search(ctx context.Context) error {
	for {
		lo, hi := s.bracket()
		var err error
		switch {
		case hi-lo >= 2 && (hi-lo <= s.walkWidth(lo, hi) || lo < s.cfg.Min+1):
			// Walk up with single confirmation trials: next to the boundary a probe is
			// decided late and costs about as much as a full trial, while a confirmation
			// trial at or below the first failing level is never wasted: it is one of the
			// trials the boundary reports or the guard below it reads. The first two levels
			// are walked too: the grid runs them whenever anything passes, so a search that
			// stops there costs no more than the grid. A level the walk reached whose trial
			// came within the guard band gets its other trials before the walk goes on:
			// one of them may fail where the grid would have stopped, and the walk would
			// otherwise climb past it on first trials alone; below the boundary the guard
			// would ask for them anyway.
			if s.nearShort(lo) {
				err = s.confirmOne(ctx, lo)
				break
			}
			err = s.confirmOne(ctx, s.walkTo(lo, hi))
		case hi-lo >= 2:
			err = s.probe(ctx, s.nextProbe(lo, hi))
		case lo >= s.cfg.Min && len(s.levels[lo].conf) == 0:
			// Adjacent: lo passes and hi fails, by belief. Make both confirmed facts, one
			// trial at a time: a failing trial moves the boundary down at once.
			err = s.confirmOne(ctx, lo)
		case hi <= s.cfg.Max && len(s.levels[hi].conf) == 0:
			err = s.confirmOne(ctx, hi)
		default:
			// The guard's trials below lo come before lo's own remaining ones: a failure
			// down there makes lo's trials moot.
			if g, ok := s.guardLevel(lo); ok {
				err = s.confirmOne(ctx, g)
				break
			}
			if lo >= s.cfg.Min && !s.confirmed(lo) {
				err = s.confirmOne(ctx, lo)
				break
			}
			// hi's remaining trials come last: they are reported, but cannot move the
			// boundary, so they run only once nothing below can.
			if hi <= s.cfg.Max && !s.confirmed(hi) {
				err = s.confirm(ctx, hi)
				break
			}
			s.finish(lo, hi)
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// bracket returns the lowest level believed failing (Max+1 if none) and the highest level
// believed passing below it (Min-1 if none). Levels strictly between them have never been
// tried, so no level is probed twice. Only tried levels are looked at: the bounds may be far
// apart.
func (s *searcher[D]) bracket() (lo, hi int) {
	tried := s.tried()
	hi = s.cfg.Max + 1
	for _, c := range tried {
		if pass, ok := s.belief(c); ok && !pass {
			hi = c
			break
		}
	}
	lo = s.cfg.Min - 1
	for i := len(tried) - 1; i >= 0; i-- {
		c := tried[i]
		if c >= hi {
			continue
		}
		if pass, ok := s.belief(c); ok && pass {
			lo = c
			break
		}
	}
	return lo, hi
}

// grid confirms every level in ascending order and takes the boundary over them: the first
// failing level, and the level before it when that passed (it always did: the first failure
// is the lowest). Levels past the first failure still run; a pass among them is reported as
// non-monotone, as the exhaustive protocol would.
func (s *searcher[D]) grid(ctx context.Context) error {
	levels := slices.Clone(s.cfg.Levels)
	slices.Sort(levels)
	for _, c := range levels {
		if err := s.confirm(ctx, c); err != nil {
			return err
		}
	}
	for i, c := range levels {
		if allPass(s.levels[c].conf) {
			continue
		}
		s.res.FirstFailing = ptr(c)
		s.res.FailingTrials = slices.Clone(s.levels[c].conf)
		if i > 0 {
			s.res.MaximumPassing = ptr(levels[i-1])
			s.res.PassingTrials = slices.Clone(s.levels[levels[i-1]].conf)
		}
		return nil
	}
	last := levels[len(levels)-1]
	s.res.MaximumPassing = ptr(last)
	s.res.PassingTrials = slices.Clone(s.levels[last].conf)
	return nil
}
