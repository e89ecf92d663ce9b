package results

import "testing"

func TestWorkloadSearchBound(t *testing.T) {
	t.Parallel()
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name       string
		pass, fail *int
		want       Bound
	}{
		{"boundary found", n(7), n(8), BoundNone},
		{"every level passed", n(64), nil, BoundCeiling},
		{"lowest level above 1 failed", nil, n(4), BoundFloor},
		{"one request failed: capacity 0 is an answer", nil, n(1), BoundNone},
		{"nothing measured", nil, nil, BoundNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{MaximumPassingConcurrency: tc.pass, FirstFailingConcurrency: tc.fail}
			if got := w.SearchBound(); got != tc.want {
				t.Errorf("SearchBound() = %q, want %q", got, tc.want)
			}
		})
	}
}
