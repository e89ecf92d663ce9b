package load

import (
	"math"
	"slices"
	"time"
)

// Fidelity is how well an open-loop trial kept its schedule, over its measured requests.
type Fidelity struct {
	Sent int // measured requests dispatched
	// ScheduledRate is the rate the schedule asked for, OfferedRate the rate the requests
	// were really dispatched at: (Sent − 1) over the span from the first dispatch to the
	// last, in requests per second (0 with fewer than two sends).
	ScheduledRate float64
	OfferedRate   float64
	// Lateness is dispatch time minus due time, less any wait for the in-flight cap: what
	// the client itself added (timer wake-up, goroutine start). Percentiles interpolate
	// between closest ranks, as every percentile in this project does.
	LatenessP50, LatenessP99, LatenessMax time.Duration
	// CapBound counts measured requests that waited for MaxInFlight, CapWaitMax the
	// longest wait.
	CapBound   int
	CapWaitMax time.Duration
}

// Fidelity measures how well the trial's measured requests kept their schedule.
func (r OpenResult) Fidelity() Fidelity {
	var f Fidelity
	var late []time.Duration
	var firstDue, lastDue, firstSent, lastSent time.Time
	for _, rec := range r.Requests {
		if rec.Warmup || rec.Dispatched.IsZero() {
			continue
		}
		if f.Sent == 0 {
			firstDue, firstSent = rec.Due, rec.Dispatched
		}
		f.Sent++
		lastDue, lastSent = rec.Due, rec.Dispatched
		firstSent = minTime(firstSent, rec.Dispatched)
		lastSent = maxTime(lastSent, rec.Dispatched)
		late = append(late, max(0, rec.Dispatched.Sub(rec.Due)-rec.CapWait))
		if rec.CapWait > 0 {
			f.CapBound++
			f.CapWaitMax = max(f.CapWaitMax, rec.CapWait)
		}
	}
	if f.Sent >= 2 {
		if span := lastDue.Sub(firstDue).Seconds(); span > 0 {
			f.ScheduledRate = float64(f.Sent-1) / span
		}
		if span := lastSent.Sub(firstSent).Seconds(); span > 0 {
			f.OfferedRate = float64(f.Sent-1) / span
		}
	}
	if len(late) > 0 {
		slices.Sort(late)
		f.LatenessP50 = durationPercentile(late, 50)
		f.LatenessP99 = durationPercentile(late, 99)
		f.LatenessMax = late[len(late)-1]
	}
	return f
}

// LatenessLimit is the send delay (p99) beyond which a client has not kept the schedule
// of a trial at rate requests per second (metrics.ClientDelayLimit): a quarter of the mean gap between sends, and never
// less than 10 ms (operating-system timer wake-ups on a busy machine). Within it, sends keep
// their order and spacing and the offered rate is the schedule's; past it, sends bunch up
// behind a client that falls behind, and the server sees another arrival process.
func LatenessLimit(rate float64) time.Duration {
	limit := 10 * time.Millisecond
	if rate > 0 {
		limit = max(limit, time.Duration(float64(time.Second)/rate/4))
	}
	return limit
}

// durationPercentile interpolates linearly between closest ranks of sorted values.
func durationPercentile(sorted []time.Duration, p float64) time.Duration {
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + time.Duration((rank-float64(lo))*float64(sorted[hi]-sorted[lo]))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
