package simengine

import (
	"fmt"
	"math/bits"
	"net/http"
	"time"
)

// job is one request as the scheduler sees it: admitted in prefill batches up to the model's
// slots, then one token per decode step, each token signalled on notify.
type job struct {
	id       string
	prompt   int     // server-side prompt tokens
	generate int     // tokens to generate
	jitter   float64 // per-request prefill cost factor
	seq      []int   // prompt tokens as the prefix cache sees them
	// answered is seq followed by the chat answer as the next turn sends it back
	// (Options.CachedPrefill); nil otherwise.
	answered []int
	cached   int // prompt tokens served from the prefix cache
	// cachePrompt is llama.cpp's per-request cache_prompt (false: reuse nothing).
	cachePrompt bool
	submitted   time.Time
	admitted    time.Time // guarded by Server.mu
	first       time.Time // guarded by Server.mu
	produced    int       // guarded by Server.mu
	done        bool      // guarded by Server.mu
	cancelled   bool      // guarded by Server.mu
	notify      chan struct{}
}

// submit queues a job and starts the scheduler when it is not running.
func (s *Server) submit(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.submitted = time.Now()
	if j.seq != nil {
		j.cached = s.cachedTokens(j.seq, j.cachePrompt)
	}
	s.waiting = append(s.waiting, j)
	s.stats.InFlight++
	s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.stats.InFlight)
	if !s.schedRunning {
		s.schedRunning = true
		go s.schedule()
	}
}

// release accounts for a job leaving; cancelled jobs are dropped by the scheduler.
func (s *Server) release(j *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.InFlight--
	if !j.done {
		j.cancelled = true
		s.stats.Cancelled++
	}
}

// schedule runs the model in wall time. Deadlines are absolute so a late wake-up shortens the
// next sleep instead of drifting the whole stream.
func (s *Server) schedule() {
	deadline := time.Now()
	for {
		s.mu.Lock()
		s.waiting = dropCancelled(s.waiting)
		s.running = dropCancelled(s.running)
		if len(s.waiting) == 0 && len(s.running) == 0 {
			s.schedRunning = false
			s.mu.Unlock()
			return
		}
		m := s.opts.Model
		var batch []*job
		var cost float64
		if len(s.waiting) > 0 && len(s.running) < m.Slots {
			n := m.admit(len(s.waiting), m.Slots-len(s.running), func(i int) int { return s.waiting[i].prompt })
			batch = append(batch, s.waiting[:n]...)
			for _, j := range batch {
				j.admitted = time.Now()
			}
			s.waiting = append(s.waiting[:0:0], s.waiting[n:]...)
			weighted, total := 0.0, 0
			for _, j := range batch {
				tokens := j.prompt
				if s.opts.CachedPrefill {
					tokens -= j.cached
				}
				weighted += float64(tokens) * j.jitter
				total += tokens
			}
			cost = m.prefillCost(weighted) + s.compile(total, len(batch))
		} else {
			cost = m.decodeCost(len(s.running))
		}
		s.mu.Unlock()

		if now := time.Now(); now.Sub(deadline) > 50*time.Millisecond {
			deadline = now // idle or badly late: restart the clock rather than burst
		}
		deadline = deadline.Add(time.Duration(cost * s.opts.TimeScale))
		time.Sleep(time.Until(deadline))

		s.mu.Lock()
		if batch != nil {
			for _, j := range batch {
				if j.cancelled {
					continue
				}
				s.emit(j)
				if !j.done {
					s.running = append(s.running, j)
				}
			}
		} else {
			kept := s.running[:0]
			for _, j := range s.running {
				if j.cancelled {
					continue
				}
				s.emit(j)
				if !j.done {
					kept = append(kept, j)
				}
			}
			s.running = kept
		}
		s.mu.Unlock()
	}
}

// compile is the cost of a prefill shape met for the first time (Options.LazyPipelines), in
// model time; callers hold s.mu.
func (s *Server) compile(tokens, batch int) float64 {
	if s.opts.LazyPipelines <= 0 {
		return 0
	}
	shape := [2]int{tokens % 4, bits.Len(uint(batch))}
	if s.compiled[shape] {
		return 0
	}
	if s.compiled == nil {
		s.compiled = map[[2]int]bool{}
	}
	s.compiled[shape] = true
	return float64(s.opts.LazyPipelines)
}

// emit produces one token for j; callers hold s.mu.
func (s *Server) emit(j *job) {
	j.produced++
	if j.produced == 1 {
		j.first = time.Now()
	}
	if j.produced >= j.generate {
		j.done = true
	}
	select {
	case j.notify <- struct{}{}:
	default: // a wake-up is already pending; the handler reads j.produced, not the channel
	}
}

func dropCancelled(js []*job) []*job {
	kept := js[:0]
	for _, j := range js {
		if !j.cancelled {
			kept = append(kept, j)
		}
	}
	clear(js[len(kept):])
	return kept
}

// wait hands newly produced tokens [from, to) to deliver until j is done; it returns an error
// when the client goes away or a write fails, after which j is abandoned.
func (s *Server) wait(r *http.Request, j *job, deliver func(from, to int) error) error {
	sent := 0
	for {
		select {
		case <-r.Context().Done():
			return fmt.Errorf("client left request %s: %w", j.id, r.Context().Err())
		case <-j.notify:
		}
		s.mu.Lock()
		produced, done := j.produced, j.done
		s.mu.Unlock()
		if produced > sent {
			if err := deliver(sent, produced); err != nil {
				return err
			}
			sent = produced
		}
		if done {
			return nil
		}
	}
}

func (s *Server) completed(j *job, started time.Time) {
	s.mu.Lock()
	s.stats.RequestsServed++
	s.stats.PromptTokens += int64(j.prompt)
	s.stats.OutputTokens += int64(j.generate)
	s.stats.CachedTokens += int64(j.cached)
	if j.answered != nil {
		s.cache.insert(j.answered)
	} else if j.seq != nil {
		s.cache.insert(j.seq)
		s.observe(j)
	}
	s.mu.Unlock()
	if s.opts.Logf != nil {
		s.opts.Logf("request %s prompt_tokens=%d completion_tokens=%d elapsed=%s", j.id, j.prompt, j.generate, time.Since(started).Round(time.Microsecond))
	}
}
