package capacity

// Prompt preparation for a trial: fitted while the server settles, so that the time between
// trials in which the server generates nothing is the longer of the two, not their sum.

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// trialPhases are a trial's warmup and measured prompts.
type trialPhases struct {
	warmup, measured trialPrompts
}

// preparation is prompt fitting under way in its own goroutine.
type preparation struct {
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time
	phases  trialPhases
	err     error
	elapsed time.Duration
}

// prepareAsync starts fitting the trial's prompts. Exactly one of wait or abandon must be
// called, so the goroutine never outlives the trial.
func (s *session) prepareAsync(ctx context.Context, w Workload, stream string) *preparation {
	ctx, cancel := context.WithCancel(ctx)
	p := &preparation{cancel: cancel, done: make(chan struct{}), started: time.Now()}
	go func() {
		defer close(p.done)
		p.phases, p.err = s.trialPrompts(ctx, w, stream)
		p.elapsed = time.Since(p.started)
	}()
	return p
}

// wait returns the prompts once fitted, recording how long fitting took and how much of it
// the trial still had to wait for after the server was ready.
func (p *preparation) wait(timing *results.TrialTiming) (trialPhases, error) {
	waitStart := time.Now()
	<-p.done
	p.cancel()
	timing.PromptPreparationS = seconds(p.elapsed)
	timing.PreparationWaitS = seconds(time.Since(waitStart))
	return p.phases, p.err
}

// abandon stops the fitting and waits for its goroutine.
func (p *preparation) abandon() {
	p.cancel()
	<-p.done
}

// trialPrompts fits the warmup and the measured prompts of one trial, as the run's axis
// sends them.
func (s *session) trialPrompts(ctx context.Context, w Workload, stream string) (trialPhases, error) {
	return s.axis.prompts(ctx, s, w, stream)
}

// syntheticPhases fits a trial's warmup and measured prompts to the workload's own shape.
func (s *session) syntheticPhases(ctx context.Context, w Workload, stream string) (trialPhases, error) {
	var out trialPhases
	var err error
	if out.warmup, err = s.workloadPrompts(ctx, w, stream+" warmup", s.cfg.WarmupRequests); err != nil {
		return out, fmt.Errorf("warmup prompts: %w", err)
	}
	if out.measured, err = s.workloadPrompts(ctx, w, stream+" measured", s.cfg.MeasuredRequests); err != nil {
		return out, fmt.Errorf("measured prompts: %w", err)
	}
	return out, nil
}

// trialPrompts are the prompts of one phase of a trial.
type trialPrompts struct {
	texts []string
	// maxTokens are each prompt's max_tokens when output lengths are spread; nil when every
	// request asks for the workload's.
	maxTokens   []int
	calibration prompt.Calibration // how the prompts were fitted to their lengths
}

// workloadPrompts makes n prompts of a trial's stream with the workload's shape. Lengths
// are drawn from a generator seeded by the configuration seed and the stream, so a resumed
// or repeated run sends the same lengths.
func (s *session) workloadPrompts(ctx context.Context, w Workload, stream string, n int) (trialPrompts, error) {
	if w.InputTokensStddev == 0 && w.OutputTokensStddev == 0 && w.SharedPrefixTokens == 0 {
		texts, cal, err := s.prompts.Prompts(ctx, stream, n, w.InputTokens)
		return trialPrompts{texts: texts, calibration: cal}, err
	}
	h := fnv.New64a()
	h.Write([]byte(stream))
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), h.Sum64()))
	draw := func(mean int, sd float64) int {
		if sd == 0 {
			return mean
		}
		return max(1, int(math.Round(float64(mean)+sd*rng.NormFloat64())))
	}
	var prefix string
	if w.SharedPrefixTokens > 0 {
		p, _, err := s.prompts.Prompts(ctx, w.Label+" shared prefix", 1, w.SharedPrefixTokens)
		if err != nil {
			return trialPrompts{}, fmt.Errorf("shared prefix: %w", err)
		}
		prefix = p[0] + "\n\n"
	}
	prompts := make([]string, n)
	var outs []int
	if w.OutputTokensStddev > 0 {
		outs = make([]int, n)
	}
	var cal prompt.Calibration
	for i := range prompts {
		own := max(1, draw(w.InputTokens, w.InputTokensStddev)-w.SharedPrefixTokens)
		p, c, err := s.prompts.Prompts(ctx, fmt.Sprintf("%s #%d", stream, i), 1, own)
		if err != nil {
			return trialPrompts{}, err
		}
		cal = c
		prompts[i] = prefix + p[0]
		if outs != nil {
			outs[i] = draw(w.OutputTokens, w.OutputTokensStddev)
		}
	}
	return trialPrompts{texts: prompts, maxTokens: outs, calibration: cal}, nil
}
