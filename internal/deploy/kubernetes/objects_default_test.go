package kubernetes

import "testing"

func TestDefaultAcceleratorCount(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		resource string
		tp, want int64
	}{
		{"", 4, 0},
		{"nvidia.com/gpu", 0, 1}, // tensor_parallel_size unset
		{"nvidia.com/gpu", 1, 1},
		{"gpu.intel.com/i915", 4, 4},
	} {
		if got := DefaultAcceleratorCount(tt.resource, tt.tp); got != tt.want {
			t.Errorf("DefaultAcceleratorCount(%q, %d) = %d, want %d", tt.resource, tt.tp, got, tt.want)
		}
	}
}
