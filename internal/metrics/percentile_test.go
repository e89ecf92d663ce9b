package metrics

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
		q      float64
		want   float64
	}{
		// numpy.percentile([1, 2, 3, 4], 95): rank 0.95·3 = 2.85 → 3 + 0.85·(4−3).
		{"numpy p95 of 1..4", []float64{1, 2, 3, 4}, 95, 3.85},
		{"p50 of 1..4 between the middle two", []float64{1, 2, 3, 4}, 50, 2.5},
		{"p99 of 1..4", []float64{1, 2, 3, 4}, 99, 3.97},
		{"p0 is the minimum", []float64{4, 1, 3, 2}, 0, 1},
		{"p100 is the maximum", []float64{4, 1, 3, 2}, 100, 4},
		// numpy's documented example: rank 0.4·4 = 1.6 → 20 + 0.6·(35−20).
		{"numpy docs example, unsorted", []float64{35, 15, 50, 20, 40}, 40, 29},
		{"integer rank needs no interpolation", []float64{10, 20, 30, 40, 50}, 75, 40},
		{"single value", []float64{7}, 95, 7},
		{"ties", []float64{5, 5, 5, 9}, 50, 5},
		// rank 0.95·63 = 59.85 over 0..63 → 59.85.
		{"p95 over 64 ranks", seq(64), 95, 59.85},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.values)
			got, err := Percentile(tc.values, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Percentile(%v, %v) = %.17g, want %v", tc.values, tc.q, got, tc.want)
			}
			if !slices.Equal(before, tc.values) {
				t.Errorf("input was modified: %v", tc.values)
			}
		})
	}
}

func TestPercentileErrors(t *testing.T) {
	t.Parallel()
	if _, err := Percentile(nil, 50); !errors.Is(err, ErrNoValues) {
		t.Errorf("empty: err = %v, want ErrNoValues", err)
	}
	for _, q := range []float64{-1, 100.5, math.NaN()} {
		if _, err := Percentile([]float64{1}, q); err == nil {
			t.Errorf("q=%v: want an error", q)
		}
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}
