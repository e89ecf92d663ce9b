package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Axis is what a workload's capacity was searched over: users in flight, an offered request
// rate, or the speed-up of a recorded trace. Two workloads are compared on their own axis.
type Axis string

// The axes.
const (
	AxisConcurrency Axis = "concurrency"
	AxisRequestRate Axis = "request_rate"
	AxisSpeedup     Axis = "speedup"
	AxisUsers       Axis = "users"
)

// axisOf is the axis w was searched over, as results reads it for every rendering (a
// replay by speed-up, an open-loop search by rate, else concurrency), in the words of the
// comparison's attribute.
func axisOf(w results.Workload) Axis {
	switch w.Axis().Name() {
	case "speed-up":
		return AxisSpeedup
	case "request rate":
		return AxisRequestRate
	case "users":
		return AxisUsers
	}
	return AxisConcurrency
}

// at is where a trial ran on the axis; 0 when the trial does not say.
func (a Axis) at(t results.Trial) float64 {
	switch a {
	case AxisSpeedup:
		return t.Speedup
	case AxisRequestRate:
		return t.RequestRate
	case AxisUsers:
		return float64(t.Users)
	}
	return float64(t.Concurrency)
}

// boundary is w's maximum passing and first failing level on the axis (nil: none).
func (a Axis) boundary(w results.Workload) (passing, failing *float64) {
	switch a {
	case AxisSpeedup:
		return w.MaximumPassingSpeedup, w.FirstFailingSpeedup
	case AxisRequestRate:
		return w.MaximumPassingRequestRate, w.FirstFailingRequestRate
	}
	f := func(c *int) *float64 {
		if c == nil {
			return nil
		}
		v := float64(*c)
		return &v
	}
	if a == AxisUsers {
		return f(w.MaximumPassingUsers), f(w.FirstFailingUsers)
	}
	return f(w.MaximumPassingConcurrency), f(w.FirstFailingConcurrency)
}

// noun names a level on the axis for a sentence: "concurrency 4", "2.5 requests/s", "1.22×".
func (a Axis) noun(v float64) string {
	switch a {
	case AxisSpeedup:
		return strconv.FormatFloat(round3(v), 'f', -1, 64) + "×"
	case AxisRequestRate:
		return strconv.FormatFloat(round3(v), 'f', -1, 64) + " requests/s"
	case AxisUsers:
		return fmt.Sprintf("%g users", v)
	}
	return fmt.Sprintf("concurrency %g", v)
}

// phrase names a list of levels: "concurrency 1, 2, 3", "rate 2.5, 3.125 requests/s",
// "speed-up 0.5, 0.625×".
func (a Axis) phrase(vs []float64) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatFloat(round3(v), 'f', -1, 64)
	}
	switch a {
	case AxisSpeedup:
		return "speed-up " + s + "×"
	case AxisRequestRate:
		return "rate " + s + " requests/s"
	case AxisUsers:
		return "users " + s
	}
	return "concurrency " + s
}

// title is the axis in words, for a capacity: "capacity", "maximum passing rate", ...
func (a Axis) title() string {
	switch a {
	case AxisSpeedup:
		return "maximum passing speed-up"
	case AxisRequestRate:
		return "maximum passing rate"
	case AxisUsers:
		return "maximum passing users"
	}
	return "capacity"
}

// levelKey is a level as a map key: the same ladder written by two runs gives the same
// float, and 9 significant digits keep a rate recomputed elsewhere on the same key.
func levelKey(v float64) float64 {
	k, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 9, 64), 64)
	return k
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// levelsTried is every level a workload's trials ran at, probes included.
func levelsTried(a Axis, w results.Workload) []float64 {
	var out []float64
	for _, ts := range [][]results.Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for _, t := range ts {
			if v := a.at(t); v > 0 {
				out = append(out, levelKey(v))
			}
		}
	}
	mp, ff := a.boundary(w)
	for _, b := range []*float64{mp, ff} {
		if b != nil {
			out = append(out, levelKey(*b))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// capacitySteps is how many levels the maximum passing level moved, counted on the levels
// either run tried (a grid's steps, a rate ladder's rungs): negative when the current run
// holds less. A run whose minimum failed holds nothing, below every level.
func capacitySteps(a Axis, bw, cw results.Workload) int {
	bp, _ := a.boundary(bw)
	cp, _ := a.boundary(cw)
	lo, hi := math.Inf(-1), math.Inf(-1)
	if bp != nil {
		lo = levelKey(*bp)
	}
	if cp != nil {
		hi = levelKey(*cp)
	}
	sign := 1
	if hi < lo {
		lo, hi, sign = hi, lo, -1
	}
	levels := append(levelsTried(a, bw), levelsTried(a, cw)...)
	slices.Sort(levels)
	n := 0
	for _, l := range slices.Compact(levels) {
		if l > lo && l <= hi {
			n++
		}
	}
	return sign * n
}
