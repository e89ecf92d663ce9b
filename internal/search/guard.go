package search

import "math"

// The guard below the boundary: the levels whose trials came close to the threshold get
// all k trials, as the grid would have run them.

// anyFail reports whether any trial at level c failed, probe or confirmation.
func (s *searcher[D]) anyFail(c int) bool {
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
func (s *searcher[D]) guardLevel(lo int) (int, bool) {
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
