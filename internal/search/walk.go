package search

import (
	"math"
	"slices"
)

// Where the search tries next: the walk up with single confirmation trials, the levels it
// skips, and the probes that bracket the boundary.

// nearShort reports whether level c has fewer than k confirmation trials, one of which came
// within the guard band of the threshold. Over the 120 simulated scenarios, completing such
// levels as the walk reaches them saves 0.3 points of the grid's request-seconds (20.3 % to
// 20.0 %) and 0.7 over the 1 080 more (22.6 % to 21.9 %), with the same boundaries: the
// trials above the first failing level fall from 1.7 to 1.2 points. A band of its own did
// no better over the 1 080: 5 % cost 0.1 point more, 3 % and 10 % 0.3 more, 15 % more than
// not completing at all.
func (s *searcher[D]) nearShort(c int) bool {
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
func (s *searcher[D]) walkWidth(lo, hi int) int {
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
func (s *searcher[D]) walkTo(lo, hi int) int {
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
func (s *searcher[D]) chord(lo, hi int) (float64, bool) {
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
func (s *searcher[D]) failingValue(c int) (v float64, ok bool) {
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

// nextProbe picks the level to probe in (lo, hi). With no failure above lo it gallops: the step
// doubles from 1 since the last level that failed (or from the minimum), because passing probes
// cost a full trial while an overshoot fails early and cheaply. Where the two highest passing
// levels' values, continued in a line, reach the threshold somewhere else than the doubled
// step, the gallop aims a little past that point instead (see gallopAim). Otherwise it
// bisects: a failing probe's value is only a bound, so there is no line to follow down there.
func (s *searcher[D]) nextProbe(lo, hi int) int {
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
func (s *searcher[D]) extrapolate(lo int) (float64, bool) {
	if s.cfg.Threshold <= 0 {
		return 0, false
	}
	return s.lineTo(lo, s.cfg.Threshold)
}

// lineTo is where the line through the values of the two highest passing levels at or below
// lo reaches v. ok is false without two such levels, or when their values do not grow
// towards v.
func (s *searcher[D]) lineTo(lo int, v float64) (float64, bool) {
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
func (s *searcher[D]) value(c int) float64 {
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
func (s *searcher[D]) tried() []int {
	out := make([]int, 0, len(s.levels))
	for c := range s.levels {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
