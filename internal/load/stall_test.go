package load

import (
	"sync/atomic"
	"testing"
	"time"
)

// The watchdog never fires while bytes keep arriving, fires no sooner than the stall
// timeout after the last one, and never after stop.
func TestStallWatch(t *testing.T) {
	t.Parallel()
	const stall = 80 * time.Millisecond
	var firedAt atomic.Int64
	fired := make(chan struct{})
	w := watchStalls(stall, func() { firedAt.Store(time.Now().UnixNano()); close(fired) })
	for range 30 { // 300 ms of progress, well past the timeout
		time.Sleep(10 * time.Millisecond)
		w.kick()
	}
	last := time.Now()
	select {
	case <-fired:
		if at := time.Unix(0, firedAt.Load()); at.Before(last) {
			t.Fatalf("fired at %v, while bytes were still arriving", at.Sub(last))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no stall reported 5 s after the last byte")
	}
	if gap := time.Unix(0, firedAt.Load()).Sub(last); gap < stall {
		t.Errorf("stall reported %v after the last byte, before the %v timeout", gap, stall)
	}
	w.stop() // after firing: harmless

	stopped := watchStalls(10*time.Millisecond, func() { t.Error("fired after stop") })
	stopped.stop()
	time.Sleep(50 * time.Millisecond)
}
