// Package simengine is a deterministic simulated LLM inference engine: a queueing model of a
// continuous-batching server (slots, prefill cost per prompt token, decode steps that slow down
// as the batch grows). It has two faces that share one timing model: Model.Run computes a whole
// closed-loop trial in virtual time (no sleeping, for fast search evaluation), and Server streams
// real OpenAI-compatible responses in real time (for HTTP client and acceptance tests).
package simengine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// Model is the timing of one simulated engine. The scheduler mirrors SGLang's default policy:
// whenever a slot is free and requests wait, it prefills all admissible waiting requests as one
// batch, and the running requests' decoding stalls meanwhile (that stall is how a new request's
// prefill slows everybody else's inter-token latency). Otherwise it runs one decode step in which
// every running request produces one token.
type Model struct {
	Slots           int           // requests decoded together at most (max running requests)
	PrefillPerToken time.Duration // prefill cost per prompt token
	PrefillOverhead time.Duration // fixed cost of one prefill batch
	DecodeStep      time.Duration // one decode step with a single running request
	DecodePerSeq    time.Duration // extra cost per running request in one decode step
	// MaxPrefillTokens caps one prefill batch's prompt tokens (SGLang's chunked prefill size);
	// a batch always admits at least one request. Zero: no cap. The cap staggers requests, so
	// later prefills stall requests already decoding, as on a real server.
	MaxPrefillTokens int

	// TrialNoise is the relative standard deviation of a whole trial's speed (thermal state,
	// neighbours, clocks): every cost in a trial is scaled by one log-normal factor drawn for it.
	TrialNoise float64
	// RequestNoise is the relative standard deviation of one request's prefill cost.
	RequestNoise float64
	// Seed selects the scenario; noise is a pure function of (Seed, concurrency, trial index).
	Seed uint64
}

// DefaultModel is a mid-sized GPU serving a mid-sized model: 2048 prompt tokens prefill in about
// 90 ms and a single stream decodes at about 60 tokens/s.
func DefaultModel() Model {
	return Model{
		Slots:            16,
		PrefillPerToken:  40 * time.Microsecond,
		PrefillOverhead:  8 * time.Millisecond,
		DecodeStep:       15 * time.Millisecond,
		DecodePerSeq:     500 * time.Microsecond,
		MaxPrefillTokens: 8192,
		TrialNoise:       0.03,
		RequestNoise:     0.02,
		Seed:             1,
	}
}

// TwoSlotModel has a capacity boundary known by construction, for the tests of the benchmark
// and its search: two slots, so two concurrent requests start at once and see their first
// token after one short prefill (a few milliseconds for 64 prompt tokens), while a third
// waits for a slot to free, a whole generation of 40 ms decode steps (about 8 × 40 ms =
// 320 ms for 8 output tokens). Against a 150 ms p95 TTFT objective, concurrency 2 passes and
// 3 fails with a wide margin on both sides, however loaded the machine.
func TwoSlotModel() Model {
	m := DefaultModel()
	m.Slots = 2
	m.PrefillPerToken = 20 * time.Microsecond
	m.PrefillOverhead = 2 * time.Millisecond
	m.DecodeStep = 40 * time.Millisecond
	m.DecodePerSeq = 0
	return m
}

// Validate reports the first setting that makes the model unusable.
func (m Model) Validate() error {
	switch {
	case m.Slots < 1:
		return fmt.Errorf("simengine: slots must be at least 1, got %d", m.Slots)
	case m.PrefillPerToken < 0 || m.PrefillOverhead < 0 || m.DecodePerSeq < 0:
		return errors.New("simengine: prefill and per-sequence decode costs must not be negative")
	case m.DecodeStep <= 0:
		return fmt.Errorf("simengine: decode step must be positive, got %s", m.DecodeStep)
	case m.MaxPrefillTokens < 0:
		return fmt.Errorf("simengine: max prefill tokens must not be negative, got %d", m.MaxPrefillTokens)
	case m.TrialNoise < 0 || m.RequestNoise < 0:
		return errors.New("simengine: noise must not be negative")
	}
	return nil
}

// prefillCost is the duration of one prefill batch; weights are the batch's per-request
// prompt-token counts already multiplied by their per-request jitter.
func (m Model) prefillCost(weightedTokens float64) float64 {
	return float64(m.PrefillOverhead) + weightedTokens*float64(m.PrefillPerToken)
}

// admit returns how many of the waiting requests (prompt lengths in queue order) the next prefill
// batch takes, given free slots.
func (m Model) admit(waiting int, free int, prompt func(i int) int) int {
	n, tokens := 0, 0
	for n < waiting && n < free {
		tokens += prompt(n)
		if n > 0 && m.MaxPrefillTokens > 0 && tokens > m.MaxPrefillTokens {
			break
		}
		n++
	}
	return n
}

// decodeCost is the duration of one decode step with batch requests running.
func (m Model) decodeCost(batch int) float64 {
	return float64(m.DecodeStep) + float64(batch)*float64(m.DecodePerSeq)
}

// Trial is one closed-loop trial: Concurrency requests in flight, each finished request replaced
// at once, Warmups requests first and then Measured requests.
type Trial struct {
	Concurrency  int
	Warmups      int
	Measured     int
	InputTokens  int // prompt tokens as the server counts them
	OutputTokens int // completion tokens per request (ignore_eos)
	// Index tells trials at the same concurrency apart; the same (Seed, Concurrency, Index)
	// always draws the same noise, so two search strategies see identical trials.
	Index int
}

// RequestTiming is one simulated request, in virtual time since the trial began.
type RequestTiming struct {
	Index        int // issue order: warmups first
	Warmup       bool
	Start        time.Duration // sent
	FirstToken   time.Duration // first content token received
	End          time.Duration // last token received
	OutputTokens int
}

// TTFT is the time to first token.
func (r RequestTiming) TTFT() time.Duration { return r.FirstToken - r.Start }

// Latency is the request latency (start to last token).
func (r RequestTiming) Latency() time.Duration { return r.End - r.Start }

// ITL is the token-normalised inter-token latency; zero when the request has fewer than two tokens.
func (r RequestTiming) ITL() time.Duration {
	if r.OutputTokens < 2 {
		return 0
	}
	return (r.End - r.FirstToken) / time.Duration(r.OutputTokens-1)
}

// Run simulates one trial in virtual time and returns every request, warmups included, in issue
// order. It takes microseconds of CPU per trial: between two request completions the running
// batch is constant, so its decode steps are advanced in one go.
func (m Model) Run(t Trial) ([]RequestTiming, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if t.Concurrency < 1 || t.Warmups < 0 || t.Measured < 1 || t.InputTokens < 1 || t.OutputTokens < 1 {
		return nil, fmt.Errorf("simengine: invalid trial %+v: concurrency, measured, input and output tokens must be at least 1", t)
	}
	rng := newRNG(mix(m.Seed, uint64(t.Concurrency), uint64(t.Index)))
	factor := rng.logNormal(m.TrialNoise)

	total := t.Warmups + t.Measured
	out := make([]RequestTiming, total)
	jitter := make([]float64, total)
	remaining := make([]int, total)
	waiting := make([]int, 0, total)
	running := make([]int, 0, m.Slots)
	now := 0.0
	next, done := 0, 0

	issue := func() {
		k := next
		next++
		out[k] = RequestTiming{Index: k, Warmup: k < t.Warmups, Start: time.Duration(now), OutputTokens: t.OutputTokens}
		jitter[k] = rng.logNormal(m.RequestNoise)
		waiting = append(waiting, k)
	}
	finish := func(k int) {
		out[k].End = time.Duration(now)
		done++
		if next < total {
			issue()
		}
	}
	for next < total && next < t.Concurrency {
		issue()
	}
	for done < total {
		if len(waiting) > 0 && len(running) < m.Slots {
			n := m.admit(len(waiting), m.Slots-len(running), func(int) int { return t.InputTokens })
			batch := append([]int(nil), waiting[:n]...)
			waiting = waiting[n:]
			weighted := 0.0
			for _, k := range batch {
				weighted += float64(t.InputTokens) * jitter[k]
			}
			now += m.prefillCost(weighted) * factor
			for _, k := range batch {
				out[k].FirstToken = time.Duration(now)
				remaining[k] = t.OutputTokens - 1
				if remaining[k] == 0 {
					finish(k)
					continue
				}
				running = append(running, k)
			}
			continue
		}
		if len(running) == 0 {
			// Unreachable in a closed loop (a finished request is replaced at once); guard
			// against a silent infinite loop all the same.
			return out[:done], errors.New("simengine: scheduler idle with requests outstanding")
		}
		steps := remaining[running[0]]
		for _, k := range running[1:] {
			steps = min(steps, remaining[k])
		}
		now += float64(steps) * m.decodeCost(len(running)) * factor
		kept := running[:0]
		var finished []int
		for _, k := range running {
			remaining[k] -= steps
			if remaining[k] == 0 {
				finished = append(finished, k)
				continue
			}
			kept = append(kept, k)
		}
		running = kept
		for _, k := range finished {
			finish(k)
		}
	}
	return out, nil
}

// rng is a splitmix64 stream: its output is fixed forever, unlike math/rand's distribution
// helpers, so recorded scenarios stay reproducible across Go releases.
type rng struct{ splitmix.Source }

func newRNG(seed uint64) *rng { return &rng{splitmix.New(seed)} }

// float returns a uniform value in (0, 1].
func (r *rng) float() float64 { return (float64(r.Uint64()>>11) + 1) / (1 << 53) }

// normal is a standard normal draw (Box-Muller).
func (r *rng) normal() float64 {
	return math.Sqrt(-2*math.Log(r.float())) * math.Cos(2*math.Pi*r.float())
}

// logNormal is a multiplicative factor with median 1 and relative spread sigma.
func (r *rng) logNormal(sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	return math.Exp(sigma * r.normal())
}

// mix folds several values into one well-spread seed.
func mix(vals ...uint64) uint64 {
	h := uint64(0x243f6a8885a308d3)
	for _, v := range vals {
		r := rng{splitmix.New(h ^ v)}
		h = r.Uint64()
	}
	return h
}
