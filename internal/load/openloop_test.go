package load

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Open loop: every request goes at its time on the schedule although the earlier ones are
// all still in flight (each takes 400 ms; the 20 sends span 380 ms).
func TestRunOpenTrialSendsOnSchedule(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &fakeEngine{chunkDelay: 200 * time.Millisecond, chunks: 2}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := Arrival{Pattern: ArrivalConstant}.Schedule(50, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sentEvents, completed int
	res, err := RunOpenTrial(context.Background(), client, OpenSpec{
		Schedule: sched, Warmup: prompts("w", 4), Measured: prompts("m", 16), OutputTokens: 2,
		Observe: func(e Event) bool {
			switch e.Kind {
			case EventSent:
				sentEvents++
				if e.Result.Due.IsZero() || e.Result.Dispatched.Before(e.Result.Due) {
					t.Errorf("sent event %+v: dispatched before due", e.Result)
				}
			case EventCompleted:
				completed++
			}
			return false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Requests) != 20 || res.Stopped || res.Unsent != 0 {
		t.Fatalf("%d requests, stopped=%v, unsent=%d", len(res.Requests), res.Stopped, res.Unsent)
	}
	if sentEvents != 16 || completed != 16 {
		t.Errorf("%d sent and %d completed events, want 16 of each (measured only)", sentEvents, completed)
	}
	for i, r := range res.Requests {
		if !r.OK() {
			t.Fatalf("request %d failed: %+v", i, r)
		}
		if want := res.Start.Add(sched[i]); !r.Due.Equal(want) {
			t.Errorf("request %d due %v, want %v", i, r.Due, want)
		}
		// Generous for a shared CI machine; the benchmark holds the real figure.
		if late := r.Dispatched.Sub(r.Due); late < 0 || late > 150*time.Millisecond {
			t.Errorf("request %d dispatched %v after its time", i, late)
		}
		if r.Warmup != (i < 4) {
			t.Errorf("request %d warmup=%v", i, r.Warmup)
		}
	}
	if eng.maxInFlight < 15 {
		t.Errorf("the server saw at most %d requests at once; an open loop must not wait for responses", eng.maxInFlight)
	}
	f := res.Fidelity()
	if f.Sent != 16 || f.CapBound != 0 {
		t.Errorf("fidelity %+v", f)
	}
	if f.ScheduledRate < 49.9 || f.ScheduledRate > 50.1 {
		t.Errorf("scheduled rate %g, want 50", f.ScheduledRate)
	}
	if f.OfferedRate < 40 || f.OfferedRate > 60 {
		t.Errorf("offered rate %g, want about 50", f.OfferedRate)
	}
	if !res.MeasuredStart.Equal(res.Requests[4].Dispatched) || res.MeasuredEnd.Before(res.MeasuredStart) {
		t.Errorf("measured span %v .. %v", res.MeasuredStart, res.MeasuredEnd)
	}
	srv.Close()
	checkNoLeak(t, before)
}

// The in-flight cap holds a due request until one finishes; the wait is recorded apart from
// the client's own lateness.
func TestRunOpenTrialCapBinds(t *testing.T) {
	eng := &fakeEngine{chunkDelay: 100 * time.Millisecond, chunks: 2}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	sched, _ := Arrival{Pattern: ArrivalConstant}.Schedule(100, 10, 1)
	res, err := RunOpenTrial(context.Background(), client, OpenSpec{
		Schedule: sched, Measured: prompts("m", 10), OutputTokens: 2, MaxInFlight: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if eng.maxInFlight > 3 {
		t.Errorf("the server saw %d requests at once over a cap of 3", eng.maxInFlight)
	}
	f := res.Fidelity()
	// Requests 3..9 are due every 10 ms while each takes 200 ms: all of them wait.
	if f.CapBound != 7 || f.CapWaitMax < 100*time.Millisecond {
		t.Errorf("cap bound %d times, longest wait %v; want 7 and over 100 ms", f.CapBound, f.CapWaitMax)
	}
	if f.LatenessP99 > 50*time.Millisecond {
		t.Errorf("lateness p99 %v counts the cap's waits", f.LatenessP99)
	}
	if f.OfferedRate > 50 {
		t.Errorf("offered rate %g: the cap should have held it well under the scheduled 100/s", f.OfferedRate)
	}
}

// A stop from the observer cancels what is in flight and sends nothing more.
func TestRunOpenTrialStop(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &fakeEngine{chunkDelay: time.Second, chunks: 2}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client, err := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	sched, _ := Arrival{Pattern: ArrivalConstant}.Schedule(100, 50, 1)
	sent := 0
	start := time.Now()
	res, err := RunOpenTrial(context.Background(), client, OpenSpec{
		Schedule: sched, Measured: prompts("m", 50), OutputTokens: 2,
		Observe: func(e Event) bool {
			if e.Kind == EventSent {
				sent++
			}
			return sent == 5
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Unsent < 40 || time.Since(start) > 800*time.Millisecond {
		t.Fatalf("stopped=%v unsent=%d after %v", res.Stopped, res.Unsent, time.Since(start))
	}
	for _, r := range res.Requests {
		if !r.Cancelled {
			t.Errorf("request %d not cancelled", r.Index)
		}
	}
	srv.Close()
	checkNoLeak(t, before)
}

func TestRunOpenTrialValidation(t *testing.T) {
	t.Parallel()
	c := &failingStreamer{}
	for _, tc := range []struct {
		spec OpenSpec
		want string
	}{
		{OpenSpec{Schedule: []time.Duration{0}, Measured: []string{"a", "b"}, OutputTokens: 1}, "schedule of 1 sends for 2 prompts"},
		{OpenSpec{Schedule: []time.Duration{2, 1}, Measured: []string{"a", "b"}, OutputTokens: 1}, "never go back in time"},
		{OpenSpec{Schedule: []time.Duration{0}, Measured: []string{"a"}}, "output tokens 0"},
		{OpenSpec{Schedule: []time.Duration{0}, Measured: []string{"a"}, OutputTokens: 1, MaxInFlight: -1}, "max in flight -1"},
	} {
		_, err := RunOpenTrial(context.Background(), c, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestFidelityLateness(t *testing.T) {
	t.Parallel()
	base := time.Now()
	res := OpenResult{}
	for i := range 100 {
		due := base.Add(time.Duration(i) * 10 * time.Millisecond) // 100/s: limit max(10 ms, 2.5 ms)
		late := time.Millisecond
		if i >= 95 {
			late = 30 * time.Millisecond // the top 5 %: p99 lands among them
		}
		res.Requests = append(res.Requests, RequestResult{Index: i, Due: due, Dispatched: due.Add(late)})
	}
	f := res.Fidelity()
	if f.LatenessP50 != time.Millisecond || f.LatenessMax != 30*time.Millisecond || f.LatenessP99 != 30*time.Millisecond {
		t.Fatalf("lateness %v / %v / %v", f.LatenessP50, f.LatenessP99, f.LatenessMax)
	}
	if LatenessLimit(1000) != 10*time.Millisecond || LatenessLimit(2) != 125*time.Millisecond {
		t.Errorf("limits %v, %v", LatenessLimit(1000), LatenessLimit(2))
	}
}
