package capacity

// How one trial is split over the load generators of a fleet (runner.kubernetes.pods), per
// axis. Every rule keeps what the server sees of the trial as one generator would send it:
//
//   - closed loop (concurrency): the concurrency split as evenly as possible (7 over 3 is 3,
//     2, 2, the larger shares on the lower pods), and the warmup and measured prompts in
//     proportion to it (largest remainder), so every generator finishes about together and
//     the server holds the trial's concurrency throughout;
//   - users: the users split as evenly as possible, the measured turns in proportion, each
//     generator's users with their own conversations and a seed of their own;
//   - open loop (rate): the trial's one schedule is drawn as one generator would send it, and
//     each arrival is given to one generator: with a Poisson process by a seeded uniform draw,
//     so (thinning) each generator's arrivals are themselves independent Poisson streams at
//     rate/N; with a constant one in turn, each generator sending every N-th arrival (a
//     constant stream at rate/N); with gamma by the seeded draw as well. The union the server
//     meets is the configured arrival process exactly, for every pattern; for gamma (and
//     constant dealt out by draw) a generator's own stream is a thinned one, not gamma;
//   - replay: the trace's requests partitioned by session (a line's `session_id`, else the
//     request alone), the sessions dealt largest first to the
//     generator with the fewest requests so far: a session's requests stay on one generator,
//     in their recorded order, at their recorded offsets.

import (
	"math/bits"
	"sort"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// evenSplit splits n into parts as evenly as possible, the larger parts first.
func evenSplit(n, parts int) []int {
	out := make([]int, parts)
	for i := range out {
		out[i] = n / parts
		if i < n%parts {
			out[i]++
		}
	}
	return out
}

// proportional splits total in proportion to weights by largest remainder (ties to the lower
// index): a part whose weight is 0 gets 0, and the parts sum to total when any weight is not.
func proportional(total int, weights []int) []int {
	sum := 0
	for _, w := range weights {
		sum += w
	}
	out := make([]int, len(weights))
	if sum == 0 {
		return out
	}
	given := 0
	rems := make([]int, len(weights))
	for i, w := range weights {
		out[i] = total * w / sum
		rems[i] = total * w % sum
		given += out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rems[order[a]] > rems[order[b]] })
	for _, i := range order[:total-given] {
		out[i]++
	}
	return out
}

// atLeastOne splits total as proportional does, then moves one from the largest part to
// every part of a non-zero weight left with none (total must be at least their number): no
// generator that holds concurrency or users measures nothing.
func atLeastOne(total int, weights []int) []int {
	out := proportional(total, weights)
	for i, w := range weights {
		if w == 0 || out[i] > 0 {
			continue
		}
		big := 0
		for j := range out {
			if out[j] > out[big] {
				big = j
			}
		}
		if out[big] < 2 {
			break // fewer requests than generators: Validate refuses it
		}
		out[big]--
		out[i]++
	}
	return out
}

// spans turns part sizes into consecutive [from, to) ranges.
func spans(sizes []int) [][2]int {
	out := make([][2]int, len(sizes))
	at := 0
	for i, n := range sizes {
		out[i] = [2]int{at, at + n}
		at += n
	}
	return out
}

// dealArrivals gives each of n arrivals of a schedule drawn with pattern to one of parts
// generators (the rule in the file's comment); seed makes the draw reproducible per trial.
func dealArrivals(n, parts int, pattern string, seed uint64) []int {
	out := make([]int, n)
	if pattern == load.ArrivalConstant {
		for i := range out {
			out[i] = i % parts
		}
		return out
	}
	src := splitmix.New(seed ^ 0x9e3779b97f4a7c15)
	for i := range out {
		// The high bits of a 64-bit draw times parts: uniform to 2^-64, no modulo bias.
		hi, _ := bits.Mul64(src.Uint64(), uint64(parts))
		out[i] = int(hi)
	}
	return out
}

// sessionOf is the session a trace request belongs to for the split: its session_id, else
// itself. (A shared first block is no session: Mooncake's traces begin most prompts with the
// same system-prompt blocks, which would put nearly every request on one generator.)
func sessionOf(r trace.Request, i int) any {
	if r.Session != "" {
		return r.Session
	}
	return i
}

// dealSessions gives each request of a trace to one of parts generators, each session whole:
// sessions largest first (ties by their first request) to the generator with the fewest
// requests so far (ties to the lower index).
func dealSessions(reqs []trace.Request, parts int) []int {
	type session struct{ first, n int }
	var order []any
	sessions := map[any]*session{}
	for i, r := range reqs {
		k := sessionOf(r, i)
		s, ok := sessions[k]
		if !ok {
			s = &session{first: i}
			sessions[k] = s
			order = append(order, k)
		}
		s.n++
	}
	sort.SliceStable(order, func(a, b int) bool { return sessions[order[a]].n > sessions[order[b]].n })
	load := make([]int, parts)
	to := map[any]int{}
	for _, k := range order {
		best := 0
		for p := range load {
			if load[p] < load[best] {
				best = p
			}
		}
		to[k] = best
		load[best] += sessions[k].n
	}
	out := make([]int, len(reqs))
	for i, r := range reqs {
		out[i] = to[sessionOf(r, i)]
	}
	return out
}

// splitClosed splits a closed-loop trial over parts generators.
func splitClosed(spec load.TrialSpec, parts int) []Share {
	conc := evenSplit(spec.Concurrency, parts)
	warm := spans(proportional(len(spec.Warmup), conc))
	meas := spans(atLeastOne(len(spec.Measured), conc))
	out := make([]Share, parts)
	for i := range out {
		if conc[i] == 0 {
			continue
		}
		w, m := warm[i], meas[i]
		out[i].Closed = &ClosedShare{Concurrency: conc[i], Warmup: spec.Warmup[w[0]:w[1]], Measured: spec.Measured[m[0]:m[1]], OutputTokens: spec.OutputTokens,
			WarmupOutputTokens: sub(spec.WarmupOutputTokens, w), MeasuredOutputTokens: sub(spec.MeasuredOutputTokens, m)}
		out[i].warmup, out[i].measured = indexes(w), indexes(m)
	}
	return out
}

// splitOpen splits an open-loop trial over parts generators by deal (a generator per
// arrival, warmups first as in the schedule); each keeps its arrivals' offsets, so all of them
// started together send the schedule. The in-flight cap is split evenly.
func splitOpen(spec load.OpenSpec, deal []int, parts int) []Share {
	caps := evenSplit(spec.MaxInFlight, parts)
	out := make([]Share, parts)
	nw := len(spec.Warmup)
	for i, p := range deal {
		s := &out[p]
		if s.Open == nil {
			s.Open = &OpenShare{OutputTokens: spec.OutputTokens, MaxInFlight: caps[p]}
		}
		o := s.Open
		o.Schedule = append(o.Schedule, spec.Schedule[i])
		if i < nw {
			o.Warmup = append(o.Warmup, spec.Warmup[i])
			if spec.WarmupOutputTokens != nil {
				o.WarmupOutputTokens = append(o.WarmupOutputTokens, spec.WarmupOutputTokens[i])
			}
			s.warmup = append(s.warmup, i)
			continue
		}
		o.Measured = append(o.Measured, spec.Measured[i-nw])
		if spec.MeasuredOutputTokens != nil {
			o.MeasuredOutputTokens = append(o.MeasuredOutputTokens, spec.MeasuredOutputTokens[i-nw])
		}
		s.measured = append(s.measured, i-nw)
	}
	for i := range out {
		// A generator dealt only warmups has nothing to measure: its arrivals are few enough
		// (fewer than the generators) that leaving them out changes nothing the judge reads.
		if o := out[i].Open; o != nil && len(o.Measured) == 0 {
			out[i] = Share{}
		}
	}
	return out
}

// usersPools is what a users trial's conversations are made of (axis_users.go).
type usersPools struct {
	system   string
	warm     []string // WarmupConversations per user, Turns messages each
	measured []string // conversations of measured turns, Turns messages each
	turns    int
}

// splitUsers splits a users trial over parts generators: the users evenly, the measured turns
// in proportion, each generator's users taking their warmup conversations and measured
// conversations (its measured turns plus one per user) from pools of their own; seed of the
// first generator is the trial's (measured must be at least the generators: Validate), the others' derived from it.
func splitUsers(spec load.UsersSpec, p usersPools, maxTokens int, parts int) []Share {
	users := evenSplit(spec.Users, parts)
	measured := atLeastOne(spec.Measured, users)
	out := make([]Share, parts)
	warmAt, measAt := 0, 0
	for i := range out {
		if users[i] == 0 {
			continue
		}
		wn := users[i] * spec.WarmupConversations * p.turns
		mn := min((measured[i]+users[i])*p.turns, len(p.measured)-measAt)
		seed := spec.Seed
		if i > 0 {
			seed ^= splitmix.Mix(uint64(i))
		}
		out[i].Users = &UsersShare{Users: users[i], Measured: measured[i], WarmupConversations: spec.WarmupConversations, Think: spec.Think, Seed: seed,
			System: p.system, Turns: p.turns, MaxTokens: maxTokens, Warm: p.warm[warmAt:min(warmAt+wn, len(p.warm))], MeasuredPool: p.measured[measAt : measAt+mn]}
		warmAt += wn
		measAt += mn
	}
	return out
}

func sub(xs []int, span [2]int) []int {
	if xs == nil {
		return nil
	}
	return xs[span[0]:span[1]]
}

func indexes(span [2]int) []int {
	out := make([]int, 0, span[1]-span[0])
	for i := span[0]; i < span[1]; i++ {
		out = append(out, i)
	}
	return out
}
