package load

import (
	"context"
	"sync"
	"testing"
	"time"
)

// readyStreamer records each request's Ready and answers after a fixed time.
type readyStreamer struct {
	mu    sync.Mutex
	ready map[string]time.Time
}

func (s *readyStreamer) Stream(_ context.Context, req Request) RequestResult {
	s.mu.Lock()
	s.ready[req.Prompt] = req.Ready
	s.mu.Unlock()
	sent := time.Now()
	time.Sleep(5 * time.Millisecond)
	return RequestResult{Ready: req.Ready, Sent: sent, Done: time.Now(), HTTPStatus: 200}
}

// A closed loop is ready to send a slot's next request the moment the previous one on that
// slot ended; its first requests, when the phase began.
func TestClosedLoopReadyIsTheSlotFreeing(t *testing.T) {
	t.Parallel()
	s := &readyStreamer{ready: map[string]time.Time{}}
	before := time.Now()
	res, err := RunTrial(t.Context(), s, TrialSpec{Concurrency: 1, Measured: []string{"a", "b", "c"}, OutputTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Measured()
	if r := s.ready["a"]; r.Before(before) || r.After(m[0].Sent) {
		t.Errorf("the first request was ready at %v, not at the phase's start (before %v, sent %v)", r, before, m[0].Sent)
	}
	for i, p := range []string{"b", "c"} {
		if !s.ready[p].Equal(m[i].Done) {
			t.Errorf("%s ready at %v, want the previous request's end %v", p, s.ready[p], m[i].Done)
		}
	}
}

// An open-loop request is ready when it is due, plus its wait for the in-flight cap.
func TestOpenLoopReadyIsTheDueTime(t *testing.T) {
	t.Parallel()
	s := &readyStreamer{ready: map[string]time.Time{}}
	res, err := RunOpenTrial(t.Context(), s, OpenSpec{Schedule: []time.Duration{0, 20 * time.Millisecond}, Measured: []string{"a", "b"}, OutputTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Requests {
		if want := r.Due.Add(r.CapWait); !s.ready[r.Prompt].Equal(want) {
			t.Errorf("%s ready at %v, want due %v + cap wait %v", r.Prompt, s.ready[r.Prompt], r.Due, r.CapWait)
		}
	}
}

// The send delay leaves out the connection's set-up; the figures are the measured
// requests' mean, p99 and maximum, reads only where they were timed.
func TestMeasureSelfDelay(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(100, 0)
	ms := time.Millisecond
	req := func(warmup bool, ready, sent, lookup, connect time.Duration, lag time.Duration, reads int) RequestResult {
		return RequestResult{Warmup: warmup, Ready: t0.Add(ready), Sent: t0.Add(sent), Lookup: lookup, Connect: connect, ReadLagMax: lag, ReadsTimed: reads}
	}
	recs := []RequestResult{
		req(true, 0, 900*ms, 0, 0, 900*ms, 1),    // a warmup: not counted
		req(false, 0, 3*ms, ms, ms, 4*ms, 10),    // 1 ms once lookup and connect are left out
		req(false, 10*ms, 13*ms, 0, 0, 0, 0),     // 3 ms; its reads were not timed
		req(false, 20*ms, 25*ms, 0, 0, 2*ms, 10), // 5 ms
		{Sent: t0},                               // no Ready: no send delay
	}
	d := MeasureSelfDelay(recs)
	// p99 of {1, 3, 5}: rank 0.99 × 2 = 1.98, between 3 and 5: 4.96 ms.
	if d.Sends != 3 || d.SendMean != 3*ms || d.SendP99 != 4960*time.Microsecond || d.SendMax != 5*ms {
		t.Errorf("sends %+v", d)
	}
	// Only the two requests whose reads were timed: p99 of {2, 4} is 3.98 ms.
	if d.Reads != 2 || d.ReadMean != 3*ms || d.ReadP99 != 3980*time.Microsecond || d.ReadMax != 4*ms {
		t.Errorf("reads %+v", d)
	}
	if (MeasureSelfDelay(nil) != SelfDelay{}) {
		t.Error("no requests give figures")
	}
}
