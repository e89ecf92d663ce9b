// Package metrics turns the per-request results of one trial into the numbers AIPerf reports
// (latency percentiles, throughputs, correctness counters) and judges them against an SLO,
// including deciding a trial's verdict early, before every request has finished.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrNoValues is returned when a percentile is asked of an empty set.
var ErrNoValues = errors.New("no values to take a percentile of")

// Percentile returns the q-th percentile (0 ≤ q ≤ 100) of values with numpy's default
// "linear" method: rank h = q/100·(n−1), interpolated between the closest ranks. values
// may be unsorted; it is not modified.
func Percentile(values []float64, q float64) (float64, error) {
	if len(values) == 0 {
		return 0, ErrNoValues
	}
	if math.IsNaN(q) || q < 0 || q > 100 {
		return 0, fmt.Errorf("percentile %v is outside [0, 100]", q)
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return percentileSorted(sorted, q), nil
}

// percentileSorted is Percentile over an ascending, non-empty slice. It follows numpy's
// arithmetic step by step (quantile = q/100, virtual index = (n−1)·quantile, lerp that
// switches form at t ≥ 0.5) so results agree with numpy to the last bit, not just closely:
// the reference results were produced by numpy and users compare them by eye.
func percentileSorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	h := float64(n-1) * (q / 100)
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	if i < 0 {
		return sorted[0]
	}
	return lerp(sorted[i], sorted[i+1], h-lo)
}

// lerp is numpy's _lerp. Infinite operands only arise when the Decider bounds unknown
// values from above; they are handled first because Inf−Inf would give NaN.
func lerp(a, b, t float64) float64 {
	if t == 0 {
		return a
	}
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return math.Inf(1)
	}
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}
