package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Streamer sends one streamed request; *Client is the real one. Tests and simulated engines
// may supply their own.
type Streamer interface {
	Stream(ctx context.Context, req Request) RequestResult
}

// EventKind says what happened to a measured request.
type EventKind int

const (
	// EventFirstContent means the request received its first content chunk (TTFT is known).
	EventFirstContent EventKind = iota + 1
	// EventCompleted means the request finished (successfully or not); Result is final.
	EventCompleted
	// EventTick is sent every TrialSpec.Tick during the measured phase; InFlight lists the
	// measured requests sent and not finished, so an observer can bound what they will
	// measure (a request waiting 12 s for its first token has a TTFT over 12 s).
	EventTick
	// EventSent is sent by open-loop trials only, when a measured request is dispatched;
	// Result carries its Index, Due, Dispatched and CapWait.
	EventSent
)

func (k EventKind) String() string {
	switch k {
	case EventFirstContent:
		return "first_content"
	case EventCompleted:
		return "completed"
	case EventTick:
		return "tick"
	case EventSent:
		return "sent"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event reports progress of a measured request to TrialSpec.Observe.
type Event struct {
	Kind     EventKind
	Result   RequestResult // partial for EventFirstContent, final for EventCompleted
	Now      time.Time     // EventTick: when the snapshot was taken
	InFlight []InFlight    // EventTick: measured requests sent and not yet finished
}

// InFlight is a measured request on the wire.
type InFlight struct {
	Index        int
	Sent         time.Time
	FirstContent bool // its first content chunk has arrived
}

// TrialSpec is one closed-loop trial.
type TrialSpec struct {
	Concurrency  int      // requests in flight, warmups and measured alike
	Warmup       []string // prompts sent first, not measured, all finished before measuring
	Measured     []string // prompts of the measured phase
	OutputTokens int      // max_tokens of every request, unless given per prompt below

	// WarmupOutputTokens and MeasuredOutputTokens, when set, give each prompt its own
	// max_tokens (a workload with an output length spread); they must match the prompts.
	WarmupOutputTokens   []int
	MeasuredOutputTokens []int

	// Observe, when set, sees measured requests' events one at a time from a single
	// goroutine. Returning true stops the trial at once: in-flight requests are cancelled
	// (recorded with Cancelled) and unsent prompts are not sent. It must not block for long:
	// while it runs, further events queue.
	Observe func(Event) (stop bool)
	// Tick, when positive, adds an EventTick every Tick while measured requests run.
	Tick time.Duration
	// BeforeMeasured, when set, is called once every warmup has finished and before the first
	// measured request is sent, so server-side counters can be read between the phases.
	BeforeMeasured func()
}

// TrialResult is what a trial produced.
type TrialResult struct {
	// Requests holds the result of every request that was sent, warmups first, in prompt
	// order (Index is the position across warmup and measured prompts). Unsent prompts have
	// none.
	Requests []RequestResult

	Stopped bool // Observe or ctx stopped the trial before every measured request had finished
	Unsent  int  // measured prompts never sent because the trial stopped

	// MeasuredStart is just before the first measured request was started; MeasuredEnd is
	// when the last measured request finished.
	MeasuredStart time.Time
	MeasuredEnd   time.Time
}

// Measured returns the results of the measured phase.
func (r TrialResult) Measured() []RequestResult {
	for i, rec := range r.Requests {
		if !rec.Warmup {
			return r.Requests[i:]
		}
	}
	return nil
}

// RunTrial runs warmups and then the measured prompts in a closed loop at spec.Concurrency:
// exactly that many requests in flight, each finished request immediately replaced by the
// next prompt, until every prompt is sent. It returns when every started request has ended,
// so no goroutine outlives it. A cancelled ctx stops the trial like Observe does and is also
// returned as the error, with the partial result.
func RunTrial(ctx context.Context, s Streamer, spec TrialSpec) (TrialResult, error) {
	var res TrialResult
	if s == nil {
		return res, errors.New("run trial: no client")
	}
	if spec.Concurrency < 1 {
		return res, fmt.Errorf("run trial: concurrency %d is below 1", spec.Concurrency)
	}
	if spec.OutputTokens < 1 {
		return res, fmt.Errorf("run trial: output tokens %d is below 1", spec.OutputTokens)
	}
	for _, per := range []struct {
		lengths []int
		prompts int
	}{{spec.WarmupOutputTokens, len(spec.Warmup)}, {spec.MeasuredOutputTokens, len(spec.Measured)}} {
		if per.lengths != nil && len(per.lengths) != per.prompts {
			return res, fmt.Errorf("run trial: %d per-prompt output lengths for %d prompts", len(per.lengths), per.prompts)
		}
		if slices.ContainsFunc(per.lengths, func(n int) bool { return n < 1 }) {
			return res, errors.New("run trial: a per-prompt output length is below 1")
		}
	}

	trialCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	nw := len(spec.Warmup)
	slots := make([]RequestResult, nw+len(spec.Measured))
	sent := make([]bool, len(slots))

	runPhase(trialCtx, s, spec.Concurrency, spec.Warmup, 0, true, outputTokens(spec.OutputTokens, spec.WarmupOutputTokens), slots, sent, nil, nil)
	if err := ctx.Err(); err != nil {
		res.Requests = collect(slots, sent)
		res.Stopped = true
		res.Unsent = len(spec.Measured)
		return res, fmt.Errorf("run trial at concurrency %d: stopped during warmup: %w", spec.Concurrency, err)
	}

	if spec.BeforeMeasured != nil {
		spec.BeforeMeasured()
	}

	// Events are handed to Observe from this goroutine. The buffer is large enough for every
	// in-flight request to post both its events without waiting on a slow observer; no more
	// requests are in flight than there are prompts, whatever the concurrency says.
	events := make(chan Event, 2*min(spec.Concurrency, len(spec.Measured))+2)
	done := make(chan struct{})
	flight := &inFlight{m: map[int]InFlight{}}
	res.MeasuredStart = time.Now()
	go func() {
		defer close(done)
		runPhase(trialCtx, s, spec.Concurrency, spec.Measured, nw, false, outputTokens(spec.OutputTokens, spec.MeasuredOutputTokens), slots, sent, events, flight)
		close(events)
	}()

	obs := &observer{observe: spec.Observe, cancel: cancel}
	tick, stopTicker := obs.ticks(spec.Tick)
	defer stopTicker()
	observe := obs.see
	for events != nil {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			observe(ev)
		case now := <-tick:
			observe(Event{Kind: EventTick, Now: now, InFlight: flight.snapshot()})
		}
	}
	<-done
	res.MeasuredEnd = time.Now()

	res.Requests = collect(slots, sent)
	for i := nw; i < len(sent); i++ {
		if !sent[i] {
			res.Unsent++
		}
	}
	res.MeasuredEnd = lastDone(res.Requests, res.MeasuredEnd)
	if err := ctx.Err(); err != nil {
		res.Stopped = true
		return res, fmt.Errorf("run trial at concurrency %d: %w", spec.Concurrency, err)
	}
	// A stop asked for after the last request finished cut nothing short.
	res.Stopped = obs.stopped && (res.Unsent > 0 || anyCancelled(res.Requests))
	return res, nil
}

func anyCancelled(recs []RequestResult) bool {
	for _, r := range recs {
		if r.Cancelled {
			return true
		}
	}
	return false
}

// outputTokens is the max_tokens of prompt i: its own when given, else the trial's.
func outputTokens(all int, per []int) func(i int) int {
	return func(i int) int {
		if per != nil {
			return per[i]
		}
		return all
	}
}

// runPhase keeps c requests in flight over prompts. Each worker takes the next prompt as soon
// as its previous request ends, which is what makes the loop closed: its slot is free from
// then (or from the phase's start), which is when it is ready to send the next
// (Request.Ready).
func runPhase(ctx context.Context, s Streamer, c int, prompts []string, offset int, warmup bool,
	maxTokens func(i int) int, slots []RequestResult, sent []bool, events chan<- Event, flight *inFlight) {
	if len(prompts) == 0 {
		return
	}
	if c > len(prompts) {
		c = len(prompts)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(c)
	start := time.Now()
	for w := 0; w < c; w++ {
		go func() {
			defer wg.Done()
			free := start
			for {
				if ctx.Err() != nil {
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(prompts) || ctx.Err() != nil {
					return
				}
				req := Request{Prompt: prompts[i], MaxTokens: maxTokens(i), Ready: free}
				if events != nil {
					req.OnFirstContent = func(partial RequestResult) {
						partial.Index, partial.Warmup = offset+i, warmup
						flight.firstContent(offset + i)
						events <- Event{Kind: EventFirstContent, Result: partial}
					}
				}
				if flight != nil {
					req.OnSent = func(at time.Time) { flight.sent(offset+i, at) }
				}
				rec := s.Stream(ctx, req)
				if free = rec.Done; free.IsZero() {
					free = time.Now()
				}
				flight.done(offset + i)
				rec.Index, rec.Warmup = offset+i, warmup
				rec.Prompt, rec.RequestedOutputTokens = prompts[i], req.MaxTokens
				slots[offset+i] = rec
				sent[offset+i] = true
				if events != nil {
					events <- Event{Kind: EventCompleted, Result: rec}
				}
			}
		}()
	}
	wg.Wait()
}

func collect(slots []RequestResult, sent []bool) []RequestResult {
	out := make([]RequestResult, 0, len(slots))
	for i, ok := range sent {
		if ok {
			out = append(out, slots[i])
		}
	}
	return out
}

// lastDone narrows the measured end to the last response actually received, so time spent
// draining the event queue is not counted in the trial duration.
func lastDone(recs []RequestResult, fallback time.Time) time.Time {
	var last time.Time
	for _, r := range recs {
		if !r.Warmup && r.Done.After(last) {
			last = r.Done
		}
	}
	if last.IsZero() {
		return fallback
	}
	return last
}

// observer hands the measured phase's events to TrialSpec.Observe; its first true stops
// the trial (cancel), after which nothing more is handed on.
type observer struct {
	observe func(Event) bool
	cancel  context.CancelFunc
	stopped bool
}

func (o *observer) see(ev Event) {
	if o.stopped || o.observe == nil {
		return
	}
	if o.observe(ev) {
		o.stopped = true
		o.cancel()
	}
}

// ticks is every period while someone observes, else a channel that never fires.
func (o *observer) ticks(period time.Duration) (<-chan time.Time, func()) {
	if period <= 0 || o.observe == nil {
		return nil, func() {}
	}
	t := time.NewTicker(period)
	return t.C, t.Stop
}

// inFlight tracks the measured requests on the wire for tick events. A nil *inFlight
// tracks nothing (the warmup phase).
type inFlight struct {
	mu sync.Mutex
	m  map[int]InFlight
}

func (f *inFlight) sent(index int, at time.Time) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.m[index] = InFlight{Index: index, Sent: at}
	f.mu.Unlock()
}

func (f *inFlight) firstContent(index int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	if r, ok := f.m[index]; ok {
		r.FirstContent = true
		f.m[index] = r
	}
	f.mu.Unlock()
}

func (f *inFlight) done(index int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	delete(f.m, index)
	f.mu.Unlock()
}

func (f *inFlight) snapshot() []InFlight {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]InFlight, 0, len(f.m))
	for _, r := range f.m {
		out = append(out, r)
	}
	return out
}
