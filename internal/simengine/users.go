package simengine

import (
	"container/heap"
	"fmt"
	"time"
)

// CachedTurns is an engine whose user capacity is known by construction, for the tests of the
// users search (multi-turn conversations with think time): Slots requests are served at once,
// first come first served; a request's prefill costs PrefillPerToken for each prompt token its
// prefix cache does not hold, then it decodes its output at DecodePerToken a token. The cache
// keeps everything ever served (prompts and the text generated for them), so a conversation's
// later turn finds its whole history there and prefills only its new message, and a first
// turn finds the system prompt once any request carrying it has finished.
//
// Every turn after the very first request therefore takes the same service time
// S = PrefillPerToken × InputTokens + DecodePerToken × OutputTokens, and the engine is a
// closed queueing network of N users, a delay station (think time, mean Z) and an m-server
// station of service S. Its throughput is at most min(N / (S + Z), m / S); the two bounds
// meet at N* = m (S + Z) / S users (the saturation point of asymptotic bound analysis). With
// constant think time the steady state below N* has no waiting at all (each user's cycle
// S + Z leaves room for the others), while above it every turn waits N S / m − (S + Z) in
// steady state, growing by S / m a user: so an objective on the time to first token that
// allows less than S / m of waiting passes up to ⌊N*⌋ users and fails from ⌊N*⌋ + 1 (the
// first integer above N*; at N* itself, when it is an integer, the wait is zero).
type CachedTurns struct {
	Slots           int
	PrefillPerToken time.Duration
	DecodePerToken  time.Duration
}

// Conversations is the shape of every conversation: turns, a system prompt shared by all,
// the new input and the output of each turn, in tokens.
type Conversations struct {
	Turns, SystemTokens, InputTokens, OutputTokens int
}

// ServiceTime is S, a turn's time in a slot once its history is cached.
func (e CachedTurns) ServiceTime(c Conversations) time.Duration {
	return time.Duration(c.InputTokens)*e.PrefillPerToken + time.Duration(c.OutputTokens)*e.DecodePerToken
}

// SaturationUsers is N* = m (S + Z) / S: the users the engine holds with no waiting when
// every pause lasts the mean think time Z.
func (e CachedTurns) SaturationUsers(c Conversations, think time.Duration) float64 {
	s := e.ServiceTime(c).Seconds()
	return float64(e.Slots) * (s + think.Seconds()) / s
}

// TurnTiming is one turn as the engine served it, in virtual time from the trial's start.
type TurnTiming struct {
	User, Conversation, Turn   int // Conversation counts from 1 per trial, Turn from 1
	Arrival, FirstToken, End   time.Duration
	PromptTokens, CachedTokens int
	OutputTokens               int
}

// UsersRun is one closed-loop users trial in virtual time: Users users, each starting at
// Start(user) and pausing Think(user, n) before its n-th turn after the first (n from 0),
// between conversations too. It runs until Turns turns have arrived, and returns them in
// arrival order.
type UsersRun struct {
	Users int
	Shape Conversations
	Turns int
	Start func(user int) time.Duration
	Think func(user, n int) time.Duration
}

// Run serves the trial.
func (e CachedTurns) Run(r UsersRun) ([]TurnTiming, error) {
	c := r.Shape
	switch {
	case e.Slots < 1 || e.PrefillPerToken < 0 || e.DecodePerToken < 0 || e.ServiceTime(c) <= 0:
		return nil, fmt.Errorf("simengine: cached turns needs slots ≥ 1 and a positive service time, got %+v", e)
	case r.Users < 1 || c.Turns < 1 || c.InputTokens < 1 || c.OutputTokens < 1 || c.SystemTokens < 0 || r.Start == nil || r.Think == nil:
		return nil, fmt.Errorf("simengine: a users run needs users, turns, input and output tokens ≥ 1, got %+v", r)
	}
	type user struct {
		next       time.Duration // arrival of its next turn
		turn, conv int           // next turn (1-based) and its conversation
		pauses     int
		history    int // tokens of its conversation so far (without the system prompt)
	}
	users := make([]user, r.Users)
	arrivals := &arrivalHeap{}
	conv := 0
	for u := range users {
		conv++
		users[u] = user{next: r.Start(u), turn: 1, conv: conv}
		heap.Push(arrivals, arrival{at: users[u].next, user: u})
	}
	free := make(freeAt, e.Slots)
	systemCachedAt := time.Duration(-1) // when the first request carrying the system prompt ended
	var out []TurnTiming
	for len(out) < r.Turns {
		a := heap.Pop(arrivals).(arrival)
		us := &users[a.user]
		start := max(a.at, free[0])
		prompt := c.SystemTokens + us.history + c.InputTokens
		cached := us.history
		if c.SystemTokens > 0 && systemCachedAt >= 0 && systemCachedAt <= start {
			cached += c.SystemTokens
		} else if us.turn > 1 {
			cached += c.SystemTokens // its own first turn put the system prompt in the cache
		}
		prefill := time.Duration(prompt-cached) * e.PrefillPerToken
		end := start + prefill + time.Duration(c.OutputTokens)*e.DecodePerToken
		free[0] = end
		heap.Fix(&free, 0)
		if systemCachedAt < 0 || end < systemCachedAt {
			systemCachedAt = end
		}
		out = append(out, TurnTiming{User: a.user, Conversation: us.conv, Turn: us.turn, Arrival: a.at, FirstToken: start + prefill, End: end,
			PromptTokens: prompt, CachedTokens: cached, OutputTokens: c.OutputTokens})
		if us.turn == c.Turns {
			conv++
			us.turn, us.conv, us.history = 1, conv, 0
		} else {
			us.turn++
			us.history += c.InputTokens + c.OutputTokens
		}
		us.next = end + r.Think(a.user, us.pauses)
		us.pauses++
		heap.Push(arrivals, arrival{at: us.next, user: a.user})
	}
	return out, nil
}

type arrival struct {
	at   time.Duration
	user int
}

// arrivalHeap orders users by their next arrival (ties by user, so runs are reproducible).
type arrivalHeap []arrival

func (h arrivalHeap) Len() int { return len(h) }
func (h arrivalHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].user < h[j].user
}
func (h arrivalHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *arrivalHeap) Push(x any)   { *h = append(*h, x.(arrival)) }
func (h *arrivalHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// BusyOnArrival is the probability that a turn arriving at a system of users users finds
// every slot busy when think times are exponential with mean think: the Engset call
// congestion, the time congestion of the other users − 1 sources, each offering S / Z
// (Engset's formula; for a loss system it holds for any service distribution, and a waiting
// system rarely blocked differs from the loss system only in the few turns that wait).
func (e CachedTurns) BusyOnArrival(c Conversations, think time.Duration, users int) float64 {
	n, m := users-1, e.Slots
	if n < m {
		return 0
	}
	beta := e.ServiceTime(c).Seconds() / think.Seconds()
	term, sum := 1.0, 1.0
	for k := 0; k < m; k++ {
		term *= float64(n-k) / float64(k+1) * beta
		sum += term
	}
	return term / sum
}

// EngsetUsers is the most users for which at most a fraction p of turns find every slot
// busy with exponential think times (BusyOnArrival), searched up to limit.
func (e CachedTurns) EngsetUsers(c Conversations, think time.Duration, p float64, limit int) int {
	best := 0
	for n := 1; n <= limit; n++ {
		if e.BusyOnArrival(c, think, n) > p {
			break
		}
		best = n
	}
	return best
}
