package load

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// OpenSpec is one open-loop trial: every prompt is sent at its time on the schedule, however
// many requests are still in flight, so the server sees the arrival process and builds the
// backlog a closed loop never builds.
type OpenSpec struct {
	// Schedule gives each prompt's send time as an offset from the trial's start, warmups
	// first then measured prompts, non-decreasing (Arrival.Schedule). Warmups are the first
	// arrivals of the same process, so the measured requests meet a server already at its
	// steady load rather than an idle one.
	Schedule     []time.Duration
	Warmup       []string
	Measured     []string
	OutputTokens int
	// WarmupOutputTokens and MeasuredOutputTokens, when set, give each prompt its own
	// max_tokens, as in TrialSpec.
	WarmupOutputTokens   []int
	MeasuredOutputTokens []int

	// MaxInFlight, when positive, caps the requests on the wire: a request due while the
	// cap is reached waits for one to finish, and the wait is recorded (RequestResult.CapWait,
	// OpenResult.CapBound) rather than counted as the client's lateness.
	MaxInFlight int

	// Observe and Tick are as in TrialSpec; Observe also sees EventSent for measured requests.
	Observe func(Event) (stop bool)
	Tick    time.Duration
}

// OpenResult is what an open-loop trial produced.
type OpenResult struct {
	TrialResult
	// Start is the schedule's origin: prompt i was due at Start + Schedule[i].
	Start time.Time
	// CapBound counts requests that waited for MaxInFlight; zero when the cap never bound.
	CapBound int
}

// RunOpenTrial runs an open-loop trial: one scheduler sleeps until each prompt is due and
// starts its request on a goroutine of its own, never waiting for earlier ones (except for
// MaxInFlight). It returns when every started request has ended. A cancelled ctx or a stop
// from Observe ends it as in RunTrial: in-flight requests are cancelled, later prompts not sent.
func RunOpenTrial(ctx context.Context, s Streamer, spec OpenSpec) (OpenResult, error) {
	var res OpenResult
	if err := spec.validate(s); err != nil {
		return res, err
	}
	trialCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	nw, total := len(spec.Warmup), len(spec.Warmup)+len(spec.Measured)
	slots := make([]RequestResult, total)
	sent := make([]bool, total)
	events := make(chan Event, 3*len(spec.Measured)+2) // never blocks a request's goroutine
	flight := &inFlight{m: map[int]InFlight{}}
	var sem chan struct{}
	if spec.MaxInFlight > 0 {
		sem = make(chan struct{}, spec.MaxInFlight)
	}
	prompt := func(i int) (string, int, bool) {
		if i < nw {
			return spec.Warmup[i], outputTokens(spec.OutputTokens, spec.WarmupOutputTokens)(i), true
		}
		return spec.Measured[i-nw], outputTokens(spec.OutputTokens, spec.MeasuredOutputTokens)(i - nw), false
	}

	var wg sync.WaitGroup
	schedulerDone := make(chan struct{})
	// A short lead lets the scheduler's first timer be set before the first prompt is due.
	res.Start = time.Now().Add(time.Millisecond)
	go func() {
		defer close(schedulerDone)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		var lastCapWait time.Time // when the latest wait for the cap ended
		var wake waker
		for i := range total {
			due := res.Start.Add(spec.Schedule[i])
			if !wake.until(trialCtx, timer, due) {
				return
			}
			var capWait time.Duration
			if sem != nil {
				// The cap delays this request when it has to wait for a slot itself, and
				// when an earlier request's wait kept the scheduler past this one's time:
				// either way it is late from its due time until it got its slot.
				waited := false
				select {
				case sem <- struct{}{}:
				default:
					select {
					case sem <- struct{}{}:
						waited = true
					case <-trialCtx.Done():
						return
					}
				}
				if now := time.Now(); waited || lastCapWait.After(due) {
					capWait = max(0, now.Sub(due))
					lastCapWait = now
					res.CapBound++
				}
			}
			if trialCtx.Err() != nil {
				return
			}
			text, maxTokens, warmup := prompt(i)
			sent[i] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				dispatched := time.Now()
				if sem != nil {
					defer func() { <-sem }()
				}
				req := Request{Prompt: text, MaxTokens: maxTokens, Ready: due.Add(capWait)}
				if !warmup {
					events <- Event{Kind: EventSent, Result: RequestResult{Index: i, Due: due, Dispatched: dispatched, CapWait: capWait}}
					req.OnFirstContent = func(partial RequestResult) {
						partial.Index, partial.Due, partial.Dispatched, partial.CapWait = i, due, dispatched, capWait
						flight.firstContent(i)
						events <- Event{Kind: EventFirstContent, Result: partial}
					}
					req.OnSent = func(at time.Time) { flight.sent(i, at) }
				}
				rec := s.Stream(trialCtx, req)
				flight.done(i)
				rec.Index, rec.Warmup = i, warmup
				rec.Prompt, rec.RequestedOutputTokens = text, maxTokens
				rec.Due, rec.Dispatched, rec.CapWait = due, dispatched, capWait
				slots[i] = rec
				if !warmup {
					events <- Event{Kind: EventCompleted, Result: rec}
				}
			}()
		}
	}()
	allDone := make(chan struct{})
	go func() {
		<-schedulerDone
		wg.Wait()
		close(allDone)
	}()

	obs := &observer{observe: spec.Observe, cancel: cancel}
	tick, stopTicker := obs.ticks(spec.Tick)
	defer stopTicker()
	observe := obs.see
	for finished := false; !finished; {
		select {
		case ev := <-events:
			observe(ev)
		case now := <-tick:
			observe(Event{Kind: EventTick, Now: now, InFlight: flight.snapshot()})
		case <-allDone:
			finished = true
		}
	}
	for drained := false; !drained; { // events posted before the last request ended
		select {
		case ev := <-events:
			observe(ev)
		default:
			drained = true
		}
	}

	res.Requests = collect(slots, sent)
	for i := nw; i < total; i++ {
		if !sent[i] {
			res.Unsent++
		}
	}
	for _, r := range res.Requests {
		if !r.Warmup {
			res.MeasuredStart = r.Dispatched
			break
		}
	}
	res.MeasuredEnd = lastDone(res.Requests, time.Now())
	if err := ctx.Err(); err != nil {
		res.Stopped = true
		return res, fmt.Errorf("run open-loop trial: %w", err)
	}
	res.Stopped = obs.stopped && (res.Unsent > 0 || anyCancelled(res.Requests))
	return res, nil
}

func (spec OpenSpec) validate(s Streamer) error {
	if s == nil {
		return errors.New("run open-loop trial: no client")
	}
	if spec.OutputTokens < 1 {
		return fmt.Errorf("run open-loop trial: output tokens %d is below 1", spec.OutputTokens)
	}
	if n := len(spec.Warmup) + len(spec.Measured); len(spec.Schedule) != n {
		return fmt.Errorf("run open-loop trial: a schedule of %d sends for %d prompts", len(spec.Schedule), n)
	}
	if !slices.IsSorted(spec.Schedule) || (len(spec.Schedule) > 0 && spec.Schedule[0] < 0) {
		return errors.New("run open-loop trial: the schedule must start at or after 0 and never go back in time")
	}
	if spec.MaxInFlight < 0 {
		return fmt.Errorf("run open-loop trial: max in flight %d is negative", spec.MaxInFlight)
	}
	for _, per := range []struct {
		lengths []int
		prompts int
	}{{spec.WarmupOutputTokens, len(spec.Warmup)}, {spec.MeasuredOutputTokens, len(spec.Measured)}} {
		if per.lengths != nil && len(per.lengths) != per.prompts {
			return fmt.Errorf("run open-loop trial: %d per-prompt output lengths for %d prompts", len(per.lengths), per.prompts)
		}
		if slices.ContainsFunc(per.lengths, func(n int) bool { return n < 1 }) {
			return errors.New("run open-loop trial: a per-prompt output length is below 1")
		}
	}
	return nil
}

// waker sleeps until a due time and wakes close to it. A timer fires late by the time the
// OS and the Go scheduler take to run the goroutine (about half a millisecond on an idle
// 2-core VM, tens of milliseconds on a loaded one), and every request would inherit it as
// send lateness. So the timer is set early by the lateness it has been showing (a running
// estimate, capped), and the rest of the wait yields the processor until the due time: a
// short spin in place of a systematic delay.
type waker struct {
	lead time.Duration // how early to set the timer: a running estimate of its overshoot
}

const (
	maxLead      = 2 * time.Millisecond  // caps the early wake, and so a request's spin
	leadStep     = 40 * time.Microsecond // how fast the estimate moves
	leadQuantile = 0.5                   // which quantile of the timer's overshoot it tracks
)

// until waits until due; false when ctx ended first.
func (w *waker) until(ctx context.Context, timer *time.Timer, due time.Time) bool {
	if d := time.Until(due) - w.lead; d > 0 {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
		// How far past its own time the timer fired. The lead follows a quantile of it
		// (a stochastic quantile estimate: up by q steps when the timer was later than the
		// lead, down by 1−q otherwise), so most wakes land just before the due time and
		// the spin stays short: spinning to cover the worst wake would cost a core.
		over := time.Since(due.Add(-w.lead))
		if over > w.lead {
			w.lead = min(maxLead, w.lead+time.Duration(leadQuantile*float64(leadStep)))
		} else {
			w.lead = max(0, w.lead-time.Duration((1-leadQuantile)*float64(leadStep)))
		}
	}
	for time.Now().Before(due) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return true
}
