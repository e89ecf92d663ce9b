package load

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// Ticks report the measured requests on the wire with their send times, so an observer can
// stop a trial on what waiting alone proves, before any slow first token arrives.
func TestRunTrialTicksReportInFlight(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &fakeEngine{chunkDelay: 2 * time.Second, chunks: 2} // first token only after 2 s
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}

	var ticks int
	var waited time.Duration
	start := time.Now()
	res, err := RunTrial(context.Background(), client, TrialSpec{
		Concurrency: 3, Measured: prompts("m", 6), OutputTokens: 2, Tick: 20 * time.Millisecond,
		Observe: func(e Event) bool {
			if e.Kind != EventTick {
				t.Errorf("got a %s event before any first token could arrive", e.Kind)
				return true
			}
			ticks++
			if len(e.InFlight) != 3 {
				return false // requests still connecting
			}
			for _, f := range e.InFlight {
				if f.FirstContent || f.Sent.IsZero() || f.Index < 0 || f.Index >= 6 {
					t.Errorf("in-flight entry %+v", f)
				}
			}
			// Stop once every request has provably waited 200 ms for its first token.
			oldest := e.Now.Sub(e.InFlight[0].Sent)
			for _, f := range e.InFlight {
				oldest = min(oldest, e.Now.Sub(f.Sent))
			}
			if oldest >= 200*time.Millisecond {
				waited = oldest
				return true
			}
			return false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if !res.Stopped || waited < 200*time.Millisecond {
		t.Fatalf("stopped=%v after waiting %v; want a stop decided on ticks", res.Stopped, waited)
	}
	if elapsed > 1500*time.Millisecond {
		t.Fatalf("the trial took %v; a tick-decided stop must not wait for the 2 s first tokens", elapsed)
	}
	if ticks < 5 {
		t.Fatalf("%d ticks in %v at a 20 ms period", ticks, elapsed)
	}
	for _, r := range res.Measured() {
		if !r.Cancelled {
			t.Errorf("request %d not cancelled: %+v", r.Index, r)
		}
	}
	if res.Unsent != 3 {
		t.Errorf("unsent = %d, want 3", res.Unsent)
	}
	srv.Close() // the server's own handler goroutines are not the runner's to answer for
	checkNoLeak(t, before)
}
