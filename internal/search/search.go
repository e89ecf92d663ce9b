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

// Outcome is what one trial produced.
type Outcome struct {
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
	Detail  any     // the caller's full trial metrics, carried through untouched
	Resumed bool    // taken from Config.History rather than run by this search
}

// TrialRunner runs one trial. It must honour ctx: when ctx ends it stops the load and returns
// an error wrapping ctx.Err().
type TrialRunner interface {
	RunTrial(ctx context.Context, req Request) (Outcome, error)
}

// RunnerFunc adapts a function to TrialRunner.
type RunnerFunc func(ctx context.Context, req Request) (Outcome, error)

// RunTrial calls f.
func (f RunnerFunc) RunTrial(ctx context.Context, req Request) (Outcome, error) { return f(ctx, req) }

// Config is one search.
type Config struct {
	Min, Max           int // concurrency bounds, inclusive
	ConfirmationTrials int // k >= 1 full trials per confirmed level

	// Levels, when set, replaces the search by a plain grid: k confirmation trials at each of
	// these concurrencies (Min and Max are ignored), no probes, every level run whatever
	// the others gave. The boundary is the first failing level and the level before it.
	Levels []int

	// History holds outcomes of an earlier, interrupted search of the same workload. A request
	// found there is not run again.
	History []Outcome

	// Progress, when set, is called once per outcome the search uses, in order, including those
	// taken from History (marked Resumed).
	Progress func(Outcome)

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

func (c Config) validate() error {
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

// Result is the boundary and every trial behind it.
type Result struct {
	MaximumPassing *int // nil: even the minimum failed (or the search did not finish)
	FirstFailing   *int // nil: nothing failed up to the maximum (or the search did not finish)
	PassingTrials  []Outcome
	FailingTrials  []Outcome
	All            []Outcome // every trial used, in order, then unused History entries
	NonMonotone    []NonMonotone
	Cost           float64 // request-seconds of All
}

// level is what is known about one concurrency.
type level struct {
	probe *Outcome
	conf  []Outcome
}

type searcher struct {
	cfg     Config
	runner  TrialRunner
	history map[Request]int // index into cfg.History
	used    []bool
	levels  map[int]*level
	res     Result
}

// Run searches for the boundary. On error (a failed trial or a cancelled ctx) it returns what was
// measured so far in Result.All, with the boundaries left nil, so the caller can store the
// outcomes and resume later by passing them as History.
func Run(ctx context.Context, cfg Config, runner TrialRunner) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if runner == nil {
		return Result{}, errors.New("search: no trial runner")
	}
	s := &searcher{cfg: cfg, runner: runner, history: map[Request]int{}, used: make([]bool, len(cfg.History)), levels: map[int]*level{}}
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
func (s *searcher) belief(c int) (pass, ok bool) {
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

func (s *searcher) confirmed(c int) bool {
	l := s.levels[c]
	return l != nil && len(l.conf) == s.cfg.ConfirmationTrials
}

func (s *searcher) search(ctx context.Context) error {
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

// nearShort reports whether level c has fewer than k confirmation trials, one of which came
// within the guard band of the threshold. Over the 120 simulated scenarios, completing such
// levels as the walk reaches them saves 0.3 points of the grid's request-seconds (20.3 % to
// 20.0 %) and 0.7 over the 1 080 more (22.6 % to 21.9 %), with the same boundaries: the
// trials above the first failing level fall from 1.7 to 1.2 points. A band of its own did
// no better over the 1 080: 5 % cost 0.1 point more, 3 % and 10 % 0.3 more, 15 % more than
// not completing at all.
func (s *searcher) nearShort(c int) bool {
	l := s.levels[c]
	if s.cfg.GuardBand == 0 || l == nil || len(l.conf) == 0 || len(l.conf) >= s.cfg.ConfirmationTrials {
		return false
	}
	near := s.cfg.Threshold * (1 - s.cfg.GuardBand)
	for _, o := range l.conf {
		if o.Value >= near {
			return true
		}
	}
	return false
}

// walkWidth is the widest bracket walked up with single confirmation trials rather than
// bisected with probes. Near the boundary a probe's verdict comes late (a p95 just past the
// threshold needs most of the trial to show it), so it saves little over a full trial, and
// the confirmation trial it replaces is one the boundary or the guard needs anyway unless it
// lands above the first failing level. Where the values show which levels of the bracket
// are clear of the guard band, the walk skips them (see walkTo) and a wide bracket costs few
// trials more than a narrow one: then brackets of up to 32 levels are walked. Over the 120
// simulated scenarios that costs 18.5 % of the grid's request-seconds, up to 24 levels
// 19.1 %, 16 levels 19.4 %, 8 levels 19.8 %; over the 1 080 more, 20.4 % against 20.5 %,
// 20.8 % and 21.6 %. Without such values (no threshold, or a bracket whose failing end
// failed by failed requests) the walk goes one level at a time and only brackets of up to 8
// levels are walked: before the skip, 8 cost 20.0 % and 21.9 %, 4 levels 21.4 % and 23.7 %,
// 6 levels 21.0 % and 23.2 %, 12 levels 20.6 % and 22.8 %, 16 levels 21.0 % and 22.6 %.
func (s *searcher) walkWidth(lo, hi int) int {
	if _, ok := s.chord(lo, hi); ok {
		return 32
	}
	return 8
}

// walkClear is how far below the threshold (relative) the walk aims when it skips ahead:
// levels below that point need no trial of their own (the guard stops at a level whose
// trial came in guardClearOne or more below the threshold), so the walk resumes at the last
// level that the bracket's evidence puts below it. Over the 120 simulated scenarios it
// costs 18.5 % of the grid's request-seconds against 20.0 % for a walk that never skips
// (and walks brackets of up to 8 levels, as before), with the same boundaries; over the
// 1 080 more, 20.4 % against 21.9 %. Aiming at 0.86 of the threshold costs 19.0 % and
// 20.5 %, at 0.90 18.5 % and 20.6 %: aimed higher, more of the skips land above the first
// failing level, where a confirmation trial runs in full for nothing.
const walkClear = 1 - guardClearOne

// walkTo is the level the walk up from lo confirms next: lo+1, or further up where the
// bracket's values put the levels in between clear of the guard band (see chord).
func (s *searcher) walkTo(lo, hi int) int {
	x, ok := s.chord(lo, hi)
	if !ok {
		return lo + 1
	}
	return min(max(lo+1, int(math.Floor(x))), hi-1)
}

// chord is the level at which the bracket's evidence reaches walkClear of the threshold:
// the lower of the points where the chord from lo's value to hi's (the lowest failing
// level's) and the line through the two highest passing levels reach it. Latency grows
// faster than linearly once requests queue, so the chord lies above the curve and reaches
// that point early, which keeps a skip on the safe side; the line guards against a flat
// chord where hi's value is only a bound (a probe stopped at the threshold). ok is false
// without values to draw the chord from, and on the first two levels: the grid runs them
// whenever anything passes, so a search that stops there costs no more than the grid.
func (s *searcher) chord(lo, hi int) (float64, bool) {
	if lo < s.cfg.Min+1 || hi > s.cfg.Max || s.cfg.Threshold <= 0 {
		return 0, false
	}
	target := walkClear * s.cfg.Threshold
	vlo := s.value(lo)
	vhi, ok := s.failingValue(hi)
	if !ok || vhi <= vlo {
		return 0, false
	}
	x := float64(lo) + (target-vlo)/(vhi-vlo)*float64(hi-lo)
	if y, ok := s.lineTo(lo, target); ok {
		x = min(x, y)
	}
	return x, true
}

// failingValue is a failing level's value as far as it is known: the mean of its failing
// confirmation trials, else its probe's (for a probe stopped early, a bound: at least the
// threshold). Trials that failed because requests failed measured nothing, so ok is false
// when only they are known.
func (s *searcher) failingValue(c int) (v float64, ok bool) {
	l := s.levels[c]
	n := 0
	for _, o := range l.conf {
		if !o.Pass && o.Failed == 0 {
			v += o.Value
			n++
		}
	}
	if n > 0 {
		return v / float64(n), true
	}
	if p := l.probe; p != nil && !p.Pass && p.Failed == 0 {
		return p.Value, true
	}
	return 0, false
}

// bracket returns the lowest level believed failing (Max+1 if none) and the highest level
// believed passing below it (Min-1 if none). Levels strictly between them have never been
// tried, so no level is probed twice. Only tried levels are looked at: the bounds may be far
// apart.
func (s *searcher) bracket() (lo, hi int) {
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
func (s *searcher) grid(ctx context.Context) error {
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

// nextProbe picks the level to probe in (lo, hi). With no failure above lo it gallops: the step
// doubles from 1 since the last level that failed (or from the minimum), because passing probes
// cost a full trial while an overshoot fails early and cheaply. Where the two highest passing
// levels' values, continued in a line, reach the threshold somewhere else than the doubled
// step, the gallop aims a little past that point instead (see gallopAim). Otherwise it
// bisects: a failing probe's value is only a bound, so there is no line to follow down there.
func (s *searcher) nextProbe(lo, hi int) int {
	if hi > s.cfg.Max {
		lastFail := s.cfg.Min - 1
		tried := s.tried()
		for i := len(tried) - 1; i >= 0; i-- {
			if c := tried[i]; c <= lo && s.anyFail(c) {
				lastFail = c
				break
			}
		}
		step := max(1, lo-lastFail)
		if x, ok := s.extrapolate(lo); ok {
			return min(max(lo+1, int(math.Round(x*gallopAim))), lo+gallopReach*step, s.cfg.Max)
		}
		return min(lo+step, s.cfg.Max)
	}
	return lo + (hi-lo)/2
}

// gallopAim and gallopReach steer the gallop by the passing levels' values: it probes 1.2
// times as far as the line through the two highest passing levels reaches the threshold,
// and at most 4 steps on (3 more than the doubling). Latency grows faster than linearly once
// requests queue, so the line overshoots the boundary, and the overshoot is where a probe is
// cheap (it fails early), while a passing probe below the boundary costs a full trial and
// says little. Introduced alone, this saved 0.7 points of the grid's request-seconds over the
// 120 simulated scenarios (21.0 % to 20.3 %) and 1.1 over the 1 080 more (23.7 % to 22.6 %),
// with the same boundaries. With the rest of the search as it was before the walk skipped
// levels (20.0 % and 21.9 %), aiming at the line itself costs 20.4 % and 22.5 %, aiming 1.5
// times as far 20.0 % and 22.3 %, never reaching past the doubling 20.6 % and 22.8 % (one
// boundary lost), reaching 6 steps 20.5 % and 22.6 %; steering the bisection the same way
// cost more, because a line from below the boundary cannot see where the curve bends. With
// the skip (18.5 % and 20.4 %): aiming at the line 19.3 % and 21.5 %, 1.5 times as far
// 18.5 % and 20.6 %, reaching 2 steps 19.2 % and 21.2 % (one boundary lost), 5 steps 18.5 %
// and 20.5 %.
const (
	gallopAim   = 1.2
	gallopReach = 3
)

// extrapolate continues the line through the values of the two highest passing levels at or
// below lo to the threshold. ok is false without a threshold, without two such levels, or
// when the values do not grow towards the threshold.
func (s *searcher) extrapolate(lo int) (float64, bool) {
	if s.cfg.Threshold <= 0 {
		return 0, false
	}
	return s.lineTo(lo, s.cfg.Threshold)
}

// lineTo is where the line through the values of the two highest passing levels at or below
// lo reaches v. ok is false without two such levels, or when their values do not grow
// towards v.
func (s *searcher) lineTo(lo int, v float64) (float64, bool) {
	tried := s.tried()
	var at []int // the two levels, highest first
	for i := len(tried) - 1; i >= 0 && len(at) < 2; i-- {
		if c := tried[i]; c <= lo {
			if pass, ok := s.belief(c); ok && pass {
				at = append(at, c)
			}
		}
	}
	if len(at) < 2 {
		return 0, false
	}
	v1, v0 := s.value(at[0]), s.value(at[1])
	if v1 <= v0 || v1 >= v {
		return 0, false
	}
	return float64(at[0]) + (v-v1)*float64(at[0]-at[1])/(v1-v0), true
}

// value is a passing level's metric as far as it is known: the mean of its confirmation
// trials, else its probe's value.
func (s *searcher) value(c int) float64 {
	l := s.levels[c]
	if len(l.conf) == 0 {
		return l.probe.Value
	}
	sum := 0.0
	for _, o := range l.conf {
		sum += o.Value
	}
	return sum / float64(len(l.conf))
}

// tried lists the levels with a trial, ascending.
func (s *searcher) tried() []int {
	out := make([]int, 0, len(s.levels))
	for c := range s.levels {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func (s *searcher) anyFail(c int) bool {
	l := s.levels[c]
	if l == nil {
		return false
	}
	if l.probe != nil && !l.probe.Pass {
		return true
	}
	return !allPass(l.conf)
}

// guardClearTrials is how many trials of a level below the boundary must stay clear of the
// guard band before the walk stops there. One is not enough: where the capacity curve has a
// step (a batch limit), one level's trials spread by ±6 %, twice the usual noise, and a single
// low trial hid a failing one in 2 of 120 simulated scenarios. One is enough when it came
// in further below the threshold than guardClearOne (relative): none of those did, and over
// the 1 200 simulated scenarios this keeps every boundary while saving 0.6 points of the
// grid's request-seconds on the 120 (20.6 % to 20.0 %) and 0.7 on the 1 080 more (22.6 % to
// 21.9 %); at 0.10 it saves 0.3 more but loses one boundary in 120 and two in 1 080, at 0.15
// it saves 0.3 and 0.4 points. With the walk's skip (18.5 % and 20.4 %; its aim, walkClear,
// moves with this constant): 0.10 costs 18.2 %
// and 20.1 % but loses one boundary in 120 and two in 1 080, 0.11 18.4 % and 20.3 % and loses
// one in 1 080, 0.14 18.8 % and 20.6 %.
const (
	guardClearTrials = 2
	guardClearOne    = 0.12
)

// guardLevel returns the level at or below lo that needs one more confirmation trial because
// the evidence from lo downwards came within the guard band of the threshold, where the grid
// could have seen a noisy failure lower down. The walk goes down from lo through every level
// with a trial in the band: each such level needs all k trials, but the walk first goes on
// down, and those trials run afterwards from the lowest level up, so a failure found low
// spares the levels above it. The walk ends at a level with no trial yet (it gets one), at
// one clear of the band so far with fewer than guardClearTrials trials (it gets another;
// one trial is enough when it came in guardClearOne or more below the threshold),
// or at one whose trials (at least guardClearTrials of them) all stayed clear of the band:
// the levels under it are further from the threshold still. lo's own trials count like any
// level's; whatever lo still lacks after the walk, the search adds before it reports lo.
func (s *searcher) guardLevel(lo int) (int, bool) {
	if s.cfg.GuardBand == 0 {
		return 0, false
	}
	near := s.cfg.Threshold * (1 - s.cfg.GuardBand)
	clear := min(guardClearTrials, s.cfg.ConfirmationTrials)
	var inBand []int // levels of the walk still short of k trials, from lo down
	for g := lo; g >= s.cfg.Min; g-- {
		l := s.levels[g]
		if l == nil || len(l.conf) == 0 {
			return g, true
		}
		worst := math.Inf(-1)
		for _, o := range l.conf {
			worst = max(worst, o.Value)
		}
		if worst >= near {
			if len(l.conf) < s.cfg.ConfirmationTrials {
				inBand = append(inBand, g)
			}
			continue
		}
		need := clear
		if worst < s.cfg.Threshold*(1-guardClearOne) {
			need = 1
		}
		if len(l.conf) < need {
			return g, true
		}
		break
	}
	if len(inBand) > 0 {
		return inBand[len(inBand)-1], true
	}
	return 0, false
}

func (s *searcher) finish(lo, hi int) {
	if lo >= s.cfg.Min {
		s.res.MaximumPassing = ptr(lo)
		s.res.PassingTrials = slices.Clone(s.levels[lo].conf)
	}
	if hi <= s.cfg.Max {
		s.res.FirstFailing = ptr(hi)
		s.res.FailingTrials = slices.Clone(s.levels[hi].conf)
	}
}

func (s *searcher) lvl(c int) *level {
	l := s.levels[c]
	if l == nil {
		l = &level{}
		s.levels[c] = l
	}
	return l
}

func (s *searcher) probe(ctx context.Context, c int) error {
	o, err := s.trial(ctx, Request{Concurrency: c, Kind: Probe, Index: 1})
	if err != nil {
		return err
	}
	s.lvl(c).probe = &o
	return nil
}

// confirm runs all k confirmation trials at c, in full even after one fails.
func (s *searcher) confirm(ctx context.Context, c int) error {
	for len(s.lvl(c).conf) < s.cfg.ConfirmationTrials {
		if err := s.confirmOne(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// confirmOne adds the next confirmation trial at c.
func (s *searcher) confirmOne(ctx context.Context, c int) error {
	l := s.lvl(c)
	o, err := s.trial(ctx, Request{Concurrency: c, Kind: Confirmation, Index: len(l.conf) + 1})
	if err != nil {
		return err
	}
	l.conf = append(l.conf, o)
	return nil
}

func (s *searcher) trial(ctx context.Context, req Request) (Outcome, error) {
	if i, ok := s.history[req]; ok && !s.used[i] {
		s.used[i] = true
		o := s.cfg.History[i]
		o.Request = req
		o.Resumed = true
		s.record(o)
		return o, nil
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("search stopped before %s %d at concurrency %d: %w", req.Kind, req.Index, req.Concurrency, err)
	}
	o, err := s.runner.RunTrial(ctx, req)
	if err != nil {
		return Outcome{}, fmt.Errorf("%s %d at concurrency %d: %w", req.Kind, req.Index, req.Concurrency, err)
	}
	o.Request = req
	o.Resumed = false
	s.record(o)
	return o, nil
}

func (s *searcher) record(o Outcome) {
	s.res.All = append(s.res.All, o)
	if s.cfg.Progress != nil {
		s.cfg.Progress(o)
	}
}

// nonMonotone lists, for every level with a passing trial, the highest lower level with a failing
// trial, if any. Trials that failed because requests failed are left out: a server error says
// nothing about how latency grows with load.
func nonMonotone(all []Outcome) []NonMonotone {
	passed := map[int]bool{}
	failed := map[int]bool{}
	for _, o := range all {
		if o.Pass {
			passed[o.Concurrency] = true
		} else if o.Failed == 0 {
			failed[o.Concurrency] = true
		}
	}
	var fails []int
	for c := range failed {
		fails = append(fails, c)
	}
	slices.Sort(fails)
	var passes []int
	for c := range passed {
		passes = append(passes, c)
	}
	slices.Sort(passes)
	var out []NonMonotone
	for _, p := range passes {
		i, _ := slices.BinarySearch(fails, p) // fails[:i] are below p
		if i > 0 {
			out = append(out, NonMonotone{Passed: p, Failed: fails[i-1]})
		}
	}
	return out
}

func allPass(os []Outcome) bool {
	for _, o := range os {
		if !o.Pass {
			return false
		}
	}
	return true
}

func ptr(v int) *int { return &v }
