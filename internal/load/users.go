package load

// A users trial: virtual users holding multi-turn conversations with think time, in a closed
// loop in users. The session model follows the peers' multi-turn generators (AIPerf's
// conversations with turn delays, vLLM's and SGLang's multi-turn benchmark scripts, LMCache's
// multi-round QA): each turn sends the whole history back (the system prompt, every earlier
// user message and the text the server actually returned), so the server's prefix cache can
// serve all of it but the new message. Where it differs: the history holds the server's own
// answers, not a dataset's canned ones (a canned answer would be a prefix the server never
// produced, and its cache could not serve it), and a user whose conversation ends starts a
// new one after a think time, so the number of users, not of requests, is what is held.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// Think-time distributions.
const (
	ThinkConstant    = "constant"    // every pause lasts the mean
	ThinkExponential = "exponential" // memoryless pauses with the given mean (a Poisson user)
)

// Think is the pause of a user between one answer and the next turn (reading, typing).
type Think struct {
	Distribution string // ThinkConstant or ThinkExponential
	Mean         time.Duration
}

// Validate reports a distribution without a mean or of an unknown kind.
func (t Think) Validate() error {
	switch t.Distribution {
	case ThinkConstant, ThinkExponential:
	default:
		return fmt.Errorf("think time distribution %q is not %q or %q", t.Distribution, ThinkConstant, ThinkExponential)
	}
	if t.Mean < 0 {
		return fmt.Errorf("think time mean %s must not be negative", t.Mean)
	}
	return nil
}

// Draw is one pause, given u uniform in [0, 1).
func (t Think) Draw(u float64) time.Duration {
	if t.Distribution == ThinkExponential {
		return time.Duration(-math.Log1p(-u) * float64(t.Mean))
	}
	return t.Mean
}

// Conversation is one session of a user: an optional system prompt shared by every
// conversation, then the user's messages in order.
type Conversation struct {
	System string
	Turns  []Turn
}

// Turn is one new user message and the output it asks for.
type Turn struct {
	Message   string
	MaxTokens int
}

// UsersSpec is one users trial.
type UsersSpec struct {
	Users int // virtual users, each holding one conversation at a time

	// Next returns a user's n-th conversation of the trial (n from 0); it must be unique per
	// (user, n) so that no conversation can hit another's cache. Called from the user's
	// goroutine.
	Next func(user, n int) Conversation

	// WarmupConversations is how many conversations each user holds before its turns are
	// measured: the cache and the users' phases reach their steady state meanwhile. Turns of
	// later conversations are measured until Measured of them were sent; then users stop
	// and the trial ends when every sent turn has finished.
	WarmupConversations int
	Measured            int

	Think Think
	// Seed makes the pauses reproducible: a pure function of (Seed, user, conversation, turn).
	Seed uint64

	// Observe sees measured requests' first-content and completion events, one at a time.
	// Returning true stops the trial: requests in flight are cancelled, no further turn is
	// sent.
	Observe func(Event) (stop bool)

	// Sleep waits d or until ctx ends; nil: a timer. Tests pass a fast clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (s UsersSpec) validate() error {
	switch {
	case s.Users < 1:
		return fmt.Errorf("users trial: users must be at least 1, got %d", s.Users)
	case s.Next == nil:
		return errors.New("users trial: no conversation source")
	case s.WarmupConversations < 0 || s.Measured < 1:
		return fmt.Errorf("users trial: warmup conversations %d must not be negative and measured turns %d at least 1", s.WarmupConversations, s.Measured)
	}
	return s.Think.Validate()
}

// RunUsers runs a users trial: each user holds conversations one after another, pausing a
// think time before every turn, and starts its first turn after a pause drawn uniformly
// within one mean think time, so users do not arrive in one burst. A turn whose request
// fails ends its conversation (there is no answer to send back); the user starts a new one.
//
// The result holds every request in the order TrialResult promises: warmups first, then
// measured requests in the order they were sent, Index their position. MeasuredStart is
// when the first measured turn was sent, MeasuredEnd when the last finished. It returns once
// every request has ended; a cancelled ctx is returned as the error with the partial result.
func RunUsers(ctx context.Context, st Streamer, spec UsersSpec) (TrialResult, error) {
	if err := spec.validate(); err != nil {
		return TrialResult{}, err
	}
	sleep := spec.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// enough ends once every measured turn is handed out: users still thinking or warming up
	// send nothing more, while the turns in flight finish on runCtx.
	enough, sated := context.WithCancel(runCtx)
	defer sated()

	var (
		mu           sync.Mutex
		warm, meas   []RequestResult
		claimed      int // measured turns handed out
		stopped      bool
		conversation int
		observeMu    sync.Mutex
	)
	observe := func(ev Event) {
		if spec.Observe == nil {
			return
		}
		observeMu.Lock()
		defer observeMu.Unlock()
		if runCtx.Err() == nil && spec.Observe(ev) {
			mu.Lock()
			stopped = true
			mu.Unlock()
			stop()
		}
	}
	// claim hands out the next measured slot, or -1 when the trial has all it measures.
	claim := func() int {
		mu.Lock()
		defer mu.Unlock()
		if claimed >= spec.Measured || stopped {
			return -1
		}
		claimed++
		if claimed == spec.Measured {
			sated()
		}
		return claimed - 1
	}
	nextConversation := func() int {
		mu.Lock()
		defer mu.Unlock()
		conversation++
		return conversation
	}

	pause := func(d time.Duration) bool { return enough.Err() == nil && sleep(enough, d) == nil }
	start := time.Now()

	var wg sync.WaitGroup
	for u := range spec.Users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := splitmix.New(splitmix.Mix(spec.Seed ^ uint64(u+1)*0x9e3779b97f4a7c15))
			first := time.Duration(uniform(&rng) * float64(spec.Think.Mean))
			// ready is when the user's next turn is due: its think time after the last
			// answer (or the trial's start), so a late send is the client's own delay.
			ready := start.Add(first)
			think := func() bool {
				d := spec.Think.Draw(uniform(&rng))
				ready = ready.Add(d)
				return pause(d)
			}
			if !pause(first) {
				return
			}
			for n := 0; ; n++ {
				conv := spec.Next(u, n)
				id := nextConversation()
				measured := n >= spec.WarmupConversations
				var history []Message
				if conv.System != "" {
					history = append(history, Message{Role: "system", Content: conv.System})
				}
				for k, turn := range conv.Turns {
					if k > 0 && !think() {
						return
					}
					slot := -1
					if measured {
						if slot = claim(); slot < 0 {
							return
						}
					} else if enough.Err() != nil {
						return
					}
					req := Request{Prompt: turn.Message, MaxTokens: turn.MaxTokens, History: history, KeepText: true, Ready: ready}
					if slot >= 0 {
						req.OnFirstContent = func(p RequestResult) { observe(Event{Kind: EventFirstContent, Result: p}) }
					}
					rec := st.Stream(runCtx, req)
					if ready = rec.Done; ready.IsZero() {
						ready = time.Now()
					}
					rec.User, rec.Conversation, rec.Turn = u, id, k+1
					rec.Warmup = slot < 0
					if runCtx.Err() != nil && ctx.Err() == nil && rec.Err == "" {
						rec.Cancelled = true // stopped by Observe
					}
					mu.Lock()
					if slot >= 0 {
						meas = append(meas, rec)
					} else {
						warm = append(warm, rec)
					}
					mu.Unlock()
					if slot >= 0 {
						observe(Event{Kind: EventCompleted, Result: rec})
					}
					if !rec.OK() {
						break // no answer to send back: the conversation ends here
					}
					history = append(history, Message{Role: "user", Content: turn.Message}, Message{Role: "assistant", Content: rec.Text})
				}
				if !think() {
					return
				}
			}
		}()
	}
	wg.Wait()

	byStart := func(a, b RequestResult) int { return a.Sent.Compare(b.Sent) }
	slices.SortStableFunc(warm, byStart)
	slices.SortStableFunc(meas, byStart)
	res := TrialResult{Requests: append(warm, meas...), Stopped: stopped || ctx.Err() != nil, Unsent: spec.Measured - len(meas)}
	for i := range res.Requests {
		res.Requests[i].Index = i
	}
	for i, r := range meas {
		if i == 0 || r.Sent.Before(res.MeasuredStart) {
			res.MeasuredStart = r.Sent
		}
		if r.Done.After(res.MeasuredEnd) {
			res.MeasuredEnd = r.Done
		}
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("users trial at %d users: %w", spec.Users, err)
	}
	return res, nil
}

// uniform is a draw in [0, 1) with 53 random bits.
func uniform(s *splitmix.Source) float64 { return float64(s.Uint64()>>11) / (1 << 53) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InFlight is how many requests (warmups too: the server serves them alike) were on the
// wire over the measured window, from the client's side: their time-weighted mean and the
// peak. Zero for a trial with no measured window.
func (r TrialResult) InFlight() (mean float64, peak int) {
	from, to := r.MeasuredStart, r.MeasuredEnd
	if !to.After(from) {
		return 0, 0
	}
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, q := range r.Requests {
		if q.Sent.IsZero() || q.Done.IsZero() || !q.Done.After(from) || !q.Sent.Before(to) {
			continue
		}
		edges = append(edges, edge{maxTime(q.Sent, from), +1}, edge{minTime(q.Done, to), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // a request ending as another starts is not counted twice
	})
	n, area, last := 0, 0.0, from
	for _, e := range edges {
		area += float64(n) * e.at.Sub(last).Seconds()
		last = e.at
		n += e.d
		peak = max(peak, n)
	}
	return area / to.Sub(from).Seconds(), peak
}
