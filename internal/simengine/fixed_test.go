package simengine

import (
	"testing"
	"time"
)

// Two slots of 1 s: capacity 2/s. Arrivals every 0.6 s (1.67/s) never wait; every 0.4 s
// (2.5/s) the k-th request waits 0.1 s more than the one two places before it.
func TestFixedServiceKnownCapacity(t *testing.T) {
	f := FixedService{Slots: 2, Service: time.Second, FirstToken: 100 * time.Millisecond}
	if f.Capacity() != 2 {
		t.Fatalf("capacity %g, want 2", f.Capacity())
	}
	every := func(gap time.Duration, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(i) * gap
		}
		return out
	}
	below, err := f.Run(every(600*time.Millisecond, 20))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range below {
		if r.TTFT() != 100*time.Millisecond || r.Latency() != time.Second {
			t.Fatalf("below capacity request %d waited: %+v", r.Index, r)
		}
	}
	above, _ := f.Run(every(400*time.Millisecond, 7))
	// Starts: 0, 0.4, 1.0, 1.4, 2.0, 2.4, 3.0; arrivals 0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4.
	wantWait := []time.Duration{0, 0, 200, 200, 400, 400, 600}
	for i, r := range above {
		if got := r.TTFT() - 100*time.Millisecond; got != wantWait[i]*time.Millisecond {
			t.Errorf("request %d waited %v, want %v ms", i, got, wantWait[i])
		}
	}
	if _, err := (FixedService{Slots: 1, Service: time.Second}).Run([]time.Duration{2, 1}); err == nil {
		t.Error("arrivals going back in time must be refused")
	}
}
