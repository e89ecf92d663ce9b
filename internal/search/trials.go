package search

import (
	"context"
	"fmt"
	"slices"
)

// Running and recording trials, and the result the search finishes with.

// finish reports lo and hi as the boundary, with their confirmation trials.
func (s *searcher[D]) finish(lo, hi int) {
	if lo >= s.cfg.Min {
		s.res.MaximumPassing = ptr(lo)
		s.res.PassingTrials = slices.Clone(s.levels[lo].conf)
	}
	if hi <= s.cfg.Max {
		s.res.FirstFailing = ptr(hi)
		s.res.FailingTrials = slices.Clone(s.levels[hi].conf)
	}
}

func (s *searcher[D]) lvl(c int) *level[D] {
	l := s.levels[c]
	if l == nil {
		l = &level[D]{}
		s.levels[c] = l
	}
	return l
}

func (s *searcher[D]) probe(ctx context.Context, c int) error {
	o, err := s.trial(ctx, Request{Concurrency: c, Kind: Probe, Index: 1})
	if err != nil {
		return err
	}
	s.lvl(c).probe = &o
	return nil
}

// confirm runs all k confirmation trials at c, in full even after one fails.
func (s *searcher[D]) confirm(ctx context.Context, c int) error {
	for len(s.lvl(c).conf) < s.cfg.ConfirmationTrials {
		if err := s.confirmOne(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// confirmOne adds the next confirmation trial at c.
func (s *searcher[D]) confirmOne(ctx context.Context, c int) error {
	l := s.lvl(c)
	o, err := s.trial(ctx, Request{Concurrency: c, Kind: Confirmation, Index: len(l.conf) + 1})
	if err != nil {
		return err
	}
	l.conf = append(l.conf, o)
	return nil
}

func (s *searcher[D]) trial(ctx context.Context, req Request) (OutcomeOf[D], error) {
	if i, ok := s.history[req]; ok && !s.used[i] {
		s.used[i] = true
		o := s.cfg.History[i]
		o.Request = req
		o.Resumed = true
		s.record(o)
		return o, nil
	}
	if err := ctx.Err(); err != nil {
		return OutcomeOf[D]{}, fmt.Errorf("search stopped before %s %d at concurrency %d: %w", req.Kind, req.Index, req.Concurrency, err)
	}
	o, err := s.runner.RunTrial(ctx, req)
	if err != nil {
		return OutcomeOf[D]{}, fmt.Errorf("%s %d at concurrency %d: %w", req.Kind, req.Index, req.Concurrency, err)
	}
	o.Request = req
	o.Resumed = false
	s.record(o)
	return o, nil
}

func (s *searcher[D]) record(o OutcomeOf[D]) {
	s.res.All = append(s.res.All, o)
	if s.cfg.Progress != nil {
		s.cfg.Progress(o)
	}
}

// nonMonotone lists, for every level with a passing trial, the highest lower level with a failing
// trial, if any. Trials that failed because requests failed are left out: a server error says
// nothing about how latency grows with load.
func nonMonotone[D any](all []OutcomeOf[D]) []NonMonotone {
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

func allPass[D any](os []OutcomeOf[D]) bool {
	for _, o := range os {
		if !o.Pass {
			return false
		}
	}
	return true
}

func ptr(v int) *int { return &v }
