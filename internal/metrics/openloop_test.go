package metrics

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
)

// openRecords builds 40 measured requests due every 100 ms; request i finishes
// 250 ms + i·slowdown after it was due.
func openRecords(slowdown time.Duration, fail func(i int) bool) []load.RequestResult {
	base := time.Unix(1000, 0)
	var out []load.RequestResult
	for i := range 40 {
		due := base.Add(time.Duration(i) * 100 * time.Millisecond)
		done := due.Add(250*time.Millisecond + time.Duration(i)*slowdown)
		r := load.RequestResult{Index: i, Due: due, Dispatched: due, Sent: due, FirstContent: due.Add(50 * time.Millisecond),
			LastContent: done, Done: done, HTTPStatus: 200}
		if fail != nil && fail(i) {
			r.HTTPStatus, r.Err = 500, "boom"
		}
		out = append(out, r)
	}
	return out
}

func TestKeptUp(t *testing.T) {
	t.Parallel()
	rule := DefaultOpenLoopRule()

	// Steady: 3 in flight at every sampled send (requests i-2, i-1, i), from request 3 on
	// (due 300 ms, after the first response at 250 ms); completions 10/s as offered.
	k := rule.KeptUp(openRecords(0, nil))
	if !k.Pass() || k.OfferedRate != 10 || math.Abs(k.CompletionRate-10) > 1e-9 ||
		k.BacklogSamples != 37 || k.InFlightMean != 3 || k.BacklogGrowth != 0 || k.BacklogAllowance != 2 {
		t.Errorf("steady: %+v", k)
	}

	// Each request 20 ms slower than the one before: in flight grows from 3 (request 3:
	// requests 1..3) to 9 (request 39: requests 31..39), and completions come at
	// 39 / (4.93 - 0.25) s = 8.33/s, under 95 % of 10/s.
	k = rule.KeptUp(openRecords(20*time.Millisecond, nil))
	if !slices.Equal(k.Missed, []string{MissedCompletionRate, MissedBacklog}) {
		t.Errorf("growing: missed %v (%+v)", k.Missed, k)
	}
	if math.Abs(k.CompletionRate-39/4.68) > 1e-9 || k.BacklogGrowth < 5 || k.BacklogGrowth > 7 {
		t.Errorf("growing: completion %g, growth %g", k.CompletionRate, k.BacklogGrowth)
	}

	// Every fourth request failing leaves 30 successes: 29 / 3.8 s (request 1's response at
	// 0.35 s to request 39's at 4.15 s) = 7.63/s.
	k = rule.KeptUp(openRecords(0, func(i int) bool { return i%4 == 0 }))
	if !slices.Equal(k.Missed, []string{MissedCompletionRate}) || math.Abs(k.CompletionRate-29/3.8) > 1e-9 {
		t.Errorf("failing requests: %+v", k)
	}

	// All sends before the first response: the backlog guard has no sample and does not
	// judge; the completions, 10/s as offered, say the server kept up.
	recs := openRecords(0, nil)
	for i := range recs {
		recs[i].Done = recs[i].Done.Add(5 * time.Second)
		recs[i].LastContent = recs[i].Done
	}
	k = rule.KeptUp(recs)
	if k.BacklogSamples != 0 || k.BacklogJudged || !k.Pass() {
		t.Errorf("too short: %+v", k)
	}
	// ... and a server that did not keep up still fails by the completion guard.
	for i := range recs {
		recs[i].Done = recs[i].Done.Add(time.Duration(i) * 50 * time.Millisecond)
		recs[i].LastContent = recs[i].Done
	}
	if k = rule.KeptUp(recs); k.BacklogJudged || !slices.Equal(k.Missed, []string{MissedCompletionRate}) {
		t.Errorf("too short and too slow: %+v", k)
	}
}

// TestBacklogGuardNeedsSamplesItCanGet is the trial: 8 measured requests at 8/s, no
// warmups, each served in 50 ms, so 7.997 of 8 requests/s complete with a flat backlog. The
// first request is sent before any response, so the guard can get 7 samples, never 8: it
// must not judge, and the trial keeps up. With 9 measured requests it gets 8 and judges.
func TestBacklogGuardNeedsSamplesItCanGet(t *testing.T) {
	t.Parallel()
	rule := DefaultOpenLoopRule()
	trial := func(n int) []load.RequestResult {
		base := time.Unix(1000, 0)
		var out []load.RequestResult
		for i := range n {
			due := base.Add(time.Duration(i) * 125 * time.Millisecond)
			done := due.Add(50*time.Millisecond + time.Duration(i)*time.Microsecond) // 7.997/s over 7 gaps
			out = append(out, load.RequestResult{Index: i, Due: due, Dispatched: due, Sent: due, FirstContent: due.Add(20 * time.Millisecond),
				LastContent: done, Done: done, HTTPStatus: 200})
		}
		return out
	}
	k := rule.KeptUp(trial(8))
	if k.BacklogSamples != 7 || k.BacklogJudged || !k.Pass() || k.CompletionRate < 7.99 || k.CompletionRate >= 8 {
		t.Errorf("8 measured requests: %+v; want 7 samples, the backlog unjudged, kept up", k)
	}
	k = rule.KeptUp(trial(9))
	if k.BacklogSamples != 8 || !k.BacklogJudged || !k.Pass() {
		t.Errorf("9 measured requests: %+v; want 8 samples, judged, kept up", k)
	}
}

func TestCannotKeepUp(t *testing.T) {
	t.Parallel()
	rule := DefaultOpenLoopRule()
	t0 := time.Unix(1000, 0)
	// 40 requests offered at 10/s need the last of 39 gaps by 39 / 9.5 s = 4.105 s after
	// the first response.
	for _, tc := range []struct {
		after  time.Duration
		failed int
		want   bool
	}{
		{4 * time.Second, 0, false},
		{4200 * time.Millisecond, 0, true},
		{3 * time.Second, 10, false}, // 29 / 3 s = 9.67/s still possible
		{3100 * time.Millisecond, 10, true},
	} {
		if got := rule.CannotKeepUp(t0.Add(tc.after), t0, 10, 40, tc.failed); got != tc.want {
			t.Errorf("after %v with %d failed: %v, want %v", tc.after, tc.failed, got, tc.want)
		}
	}
	if rule.CannotKeepUp(t0.Add(time.Hour), time.Time{}, 10, 40, 0) {
		t.Error("no response yet decides nothing")
	}
}
