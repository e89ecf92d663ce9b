package results

import (
	"math"
	"strconv"
	"strings"
)

// Axis is what a workload's search varied: the users in flight of a closed-loop search, the
// request rate of an open-loop one, or the speed-up of a replayed trace. Every rendering asks
// the workload's axis for its boundary, each trial's level and how to write them, so a rate
// or a replay result reads as whole as a concurrency one: its own headings, units, rounding
// and both sides of its boundary.
type Axis interface {
	// Name is the axis in a sentence or heading: "concurrency", "request rate", "speed-up".
	Name() string
	// Column is a table's heading for a trial's level, with its unit.
	Column() string
	// Title is the chart's x-axis title.
	Title() string
	// Level is the trial's value on the axis; false when neither the trial nor its side says.
	Level(st SideTrial) (float64, bool)
	// Boundary is the workload's maximum passing and first failing level; nil when none.
	Boundary() (maxPassing, firstFailing *float64)
	// Text writes a level with its unit, rounded for reading but never so far that two levels
	// of the workload read the same: "4", "5.86 requests/s", "1.22× (6.1 requests/s)".
	Text(v float64) string
	// Cell writes a level under a heading that names the unit: "4", "5.86", "1.22×".
	Cell(v float64) string
	// Whole reports whether every level is a whole number (concurrency), so the chart's
	// ticks are too.
	Whole() bool
}

// Axis is the axis w was searched along: speed-up for a replay of a trace, request rate for
// an open-loop search, concurrency otherwise.
func (w Workload) Axis() Axis {
	switch {
	case w.byUsers():
		return usersAxis{w: w}
	case w.bySpeedup():
		a := speedupAxis{w: w, digits: levelDigits(w, func(t Trial) float64 { return t.Speedup }, w.MaximumPassingSpeedup, w.FirstFailingSpeedup)}
		a.meanRate = traceMeanRate(w)
		return a
	case w.byRate():
		return rateAxis{w: w, digits: levelDigits(w, func(t Trial) float64 { return t.RequestRate }, w.MaximumPassingRequestRate, w.FirstFailingRequestRate)}
	}
	return concurrencyAxis{w: w}
}

// BoundaryText is w's maximum passing and first failing level along its axis as the
// renderings write them, with their units and rounding: "4" and "5", "5.86 requests/s" and
// "7.32 requests/s", "1.22× (6.1 requests/s)"; a bound by the search reads "≥ 8 requests/s"
// or "none, below 3 requests/s", a missing side "none".
func (w Workload) BoundaryText() (maxPassing, firstFailing string) {
	return capacityText(w, "none"), firstFailingText(w, "none")
}

// concurrencyAxis is a closed-loop search: whole users in flight.
type concurrencyAxis struct{ w Workload }

func (concurrencyAxis) Name() string   { return "concurrency" }
func (concurrencyAxis) Column() string { return "Concurrency" }
func (concurrencyAxis) Title() string  { return "Concurrency (users in flight)" }
func (concurrencyAxis) Whole() bool    { return true }
func (concurrencyAxis) Level(st SideTrial) (float64, bool) {
	return float64(st.Concurrency), st.Concurrency > 0
}

func (a concurrencyAxis) Boundary() (mp, ff *float64) {
	return intLevel(a.w.MaximumPassingConcurrency), intLevel(a.w.FirstFailingConcurrency)
}
func (concurrencyAxis) Text(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func (concurrencyAxis) Cell(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

// usersAxis is a closed loop in users, each holding multi-turn conversations with think
// time: whole users.
type usersAxis struct{ w Workload }

func (usersAxis) Name() string   { return "users" }
func (usersAxis) Column() string { return "Users" }
func (usersAxis) Title() string  { return "Users (conversations with think time)" }
func (usersAxis) Whole() bool    { return true }
func (usersAxis) Level(st SideTrial) (float64, bool) {
	return float64(st.Trial.Users), st.Trial.Users > 0
}

func (a usersAxis) Boundary() (mp, ff *float64) {
	return intLevel(a.w.MaximumPassingUsers), intLevel(a.w.FirstFailingUsers)
}
func (usersAxis) Text(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func (usersAxis) Cell(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func intLevel(c *int) *float64 {
	if c == nil {
		return nil
	}
	v := float64(*c)
	return &v
}

// rateAxis is an open-loop search by request rate, in requests per second.
type rateAxis struct {
	w      Workload
	digits int
}

func (rateAxis) Name() string   { return "request rate" }
func (rateAxis) Column() string { return "Rate (requests/s)" }
func (rateAxis) Title() string  { return "Offered request rate (requests/s)" }
func (rateAxis) Whole() bool    { return false }
func (rateAxis) Level(st SideTrial) (float64, bool) {
	return st.Trial.RequestRate, st.Trial.RequestRate > 0
}

func (a rateAxis) Boundary() (mp, ff *float64) {
	return a.w.MaximumPassingRequestRate, a.w.FirstFailingRequestRate
}
func (a rateAxis) Text(v float64) string { return significant(v, a.digits) + " requests/s" }
func (a rateAxis) Cell(v float64) string { return significant(v, a.digits) }

// speedupAxis is a replay of recorded traffic searched by speed-up: the factor the trace's
// arrival offsets were divided by, so its request rate is the trace's mean rate times it.
type speedupAxis struct {
	w        Workload
	digits   int
	meanRate float64 // the trace's mean request rate at speed-up 1; 0 when no trial says
}

func (speedupAxis) Name() string   { return "speed-up" }
func (speedupAxis) Column() string { return "Speed-up" }
func (speedupAxis) Title() string  { return "Speed-up of the recorded trace (×)" }
func (speedupAxis) Whole() bool    { return false }
func (speedupAxis) Level(st SideTrial) (float64, bool) {
	return st.Trial.Speedup, st.Trial.Speedup > 0
}

func (a speedupAxis) Boundary() (mp, ff *float64) {
	return a.w.MaximumPassingSpeedup, a.w.FirstFailingSpeedup
}

func (a speedupAxis) Text(v float64) string {
	s := significant(v, a.digits) + "×"
	if a.meanRate > 0 {
		s += " (" + significant(v*a.meanRate, a.digits) + " requests/s)"
	}
	return s
}
func (a speedupAxis) Cell(v float64) string { return significant(v, a.digits) + "×" }

// traceMeanRate is the replayed trace's mean request rate at speed-up 1, from a trial that
// states both its rate and its speed-up, else from the boundary.
func traceMeanRate(w Workload) float64 {
	for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for _, t := range ts {
			if t.Speedup > 0 && t.RequestRate > 0 {
				return t.RequestRate / t.Speedup
			}
		}
	}
	for _, p := range [][2]*float64{{w.MaximumPassingRequestRate, w.MaximumPassingSpeedup}, {w.FirstFailingRequestRate, w.FirstFailingSpeedup}} {
		if p[0] != nil && p[1] != nil && *p[1] > 0 {
			return *p[0] / *p[1]
		}
	}
	return 0
}

// levelDigits is how many significant digits the workload's levels need: 3, or more where
// two different levels (a fine search tolerance) would otherwise read the same.
func levelDigits(w Workload, level func(Trial) float64, bounds ...*float64) int {
	var levels []float64
	for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for _, t := range ts {
			if v := level(t); v > 0 {
				levels = append(levels, v)
			}
		}
	}
	for _, b := range bounds {
		if b != nil {
			levels = append(levels, *b)
		}
	}
	for digits := 3; digits < 17; digits++ {
		seen := map[string]float64{}
		clash := false
		for _, v := range levels {
			s := significant(v, digits)
			if u, ok := seen[s]; ok && u != v {
				clash = true
				break
			}
			seen[s] = v
		}
		if !clash {
			return digits
		}
	}
	return 17
}

// significant writes v rounded to the given significant digits, without an exponent and
// without trailing zeros: 5.859375 → "5.86", 3 → "3", 1234.5 → "1235".
func significant(v float64, digits int) string {
	switch {
	case v == 0 || math.IsNaN(v) || math.IsInf(v, 0):
		return formatFloat(v)
	case math.Abs(v) >= 1e15:
		return strconv.FormatFloat(v, 'g', digits, 64)
	}
	decimals := max(digits-1-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// documentAxis is the one axis every workload of d shares (for a heading over all of
// them); nil when they differ or there are none.
func documentAxis(d *Document) Axis {
	var a Axis
	for _, w := range d.Workloads {
		wa := w.Axis()
		if a != nil && wa.Name() != a.Name() {
			return nil
		}
		a = wa
	}
	return a
}
