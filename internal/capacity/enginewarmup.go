package capacity

// The engine warm-up (trial.engine_warmup_requests): requests sent once, before a workload's
// first measured trial, so that an engine that builds its kernels on first use is measured in
// its steady state, as a server in service runs, and its start-up is not charged to the first
// trial that meets it. llama.cpp's Vulkan backend builds a matmul pipeline per shape the first
// time a prefill needs one: on an H200 (driver 580.159.04) 1.9 to 3.7 s for a 515 to 518-token
// prompt whose compiled pipeline then takes 5 ms, so a fresh server failed its first trial at
// concurrency 1 (p95 TTFT 872 and 959 ms in two runs) and was given no capacity, where the same
// server, warm, held 17. The per-trial warmups (trial.warmup_requests) run at the trial's own
// concurrency and meet only its shapes; peers warm up once per run as this does (AIPerf's
// warmup phase, vllm bench serve --num-warmups).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
)

// DefaultEngineWarmupRequests is trial.engine_warmup_requests for a benchmark that leaves it
// out: EngineWarmupOnGPU for a server the provider launched on Vulkan or an Intel GPU (the
// experiment's accelerator says so), 0 otherwise, and 0 when a workload replays a trace,
// which has no synthetic prompts to warm up with. On those accelerators the engines build
// kernels on first use of a shape: llama.cpp's Vulkan backend a pipeline per prefill shape
// (above), SGLang and vLLM on XPU their Triton kernels per specialization and oneDNN its
// primitives per shape. A configured value, 0 included, always wins.
func DefaultEngineWarmupRequests(c Config) int {
	if c.Experiment == nil || !slices.Contains(warmupAccelerators, c.Experiment.Accelerator) {
		return 0
	}
	for _, w := range c.Workloads {
		if w.TraceFile != "" {
			return 0
		}
	}
	return EngineWarmupOnGPU
}

// EngineWarmupOnGPU is the default warm-up on Vulkan and XPU: the count the lent H200's
// fresh llama.cpp Vulkan server needed (with 16 requests at each level it held 18 users
// where it held none cold; 80 requests, 19.4 s in all), and small beside a run's trials
// (a search of 3 confirmation trials of 64 measured requests sends hundreds).
const EngineWarmupOnGPU = 16

// warmupAccelerators are the experiment accelerators DefaultEngineWarmupRequests warms up.
var warmupAccelerators = []string{"vulkan", "xpu"}

// EngineWarmupMaxConcurrency bounds the warm-up's highest concurrency, and
// engineWarmupUnknownConcurrency is it for a server that does not say how many requests it
// runs at once.
const (
	EngineWarmupMaxConcurrency     = 64
	engineWarmupUnknownConcurrency = 8
)

// engineWarmupLevels are the concurrencies the warm-up runs at: 1, 2, 4, … up to the server's
// running-request limit (its slots), which it ends on, so that prefill batches of every size
// class the trials can form are met.
func engineWarmupLevels(maxRunning int) []int {
	top := engineWarmupUnknownConcurrency
	if maxRunning > 0 {
		top = min(maxRunning, EngineWarmupMaxConcurrency)
	}
	var levels []int
	for c := 1; c < top; c *= 2 {
		levels = append(levels, c)
	}
	return append(levels, top)
}

// warmEngine sends the warm-up's requests, unmeasured and unrecorded, and returns the note
// the workload's results carry. Prompts come from their own streams, so no trial's prompt is
// ever cached by them, and the trial that follows settles (idle wait, cache flush) as always.
// Failed requests do not stop the run (the trials will meet whatever failed them) but are
// counted in the note.
func (r *trialRunner) warmEngine(ctx context.Context) (string, error) {
	s, w := r.s, r.w
	n := s.cfg.EngineWarmupRequests
	levels := engineWarmupLevels(s.info.MaxRunningRequests)
	start := time.Now()
	sent, failed := 0, 0
	for _, c := range levels {
		p, err := s.workloadPrompts(ctx, w, fmt.Sprintf("%s engine warmup c=%d", w.Label, c), n)
		if err != nil {
			return "", fmt.Errorf("engine warm-up at concurrency %d: %w", c, err)
		}
		res, err := load.RunTrial(ctx, s.client, load.TrialSpec{Concurrency: c, Measured: p.texts, OutputTokens: w.OutputTokens, MeasuredOutputTokens: p.maxTokens})
		if err != nil {
			return "", fmt.Errorf("engine warm-up at concurrency %d: %w", c, err)
		}
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("engine warm-up at concurrency %d: %w", c, err)
		}
		for _, rec := range res.Requests {
			sent++
			if !metrics.Succeeded(rec) {
				failed++
			}
		}
	}
	at := make([]string, len(levels))
	for i, c := range levels {
		at[i] = fmt.Sprint(c)
	}
	note := fmt.Sprintf("engine warm-up before the first trial: %d requests at each concurrency %s (%d in all, %.1f s), not measured",
		n, strings.Join(at, ", "), sent, time.Since(start).Seconds())
	if failed > 0 {
		note += fmt.Sprintf("; %d of them failed", failed)
	}
	return note, nil
}
