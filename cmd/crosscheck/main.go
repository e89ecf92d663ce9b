// Command crosscheck compares the client's timings with llama.cpp's own account of the same
// requests: TTFT against timings.prompt_ms and ITL against timings.predicted_per_token_ms,
// over one closed-loop trial at concurrency 1. It prints the medians of the differences.
//
//	go run ./cmd/crosscheck -endpoint http://127.0.0.1:8080 -model tiny
//
// scripts/crosscheck-llamacpp.sh starts llama-server in Docker and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/prompt"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "crosscheck:", err)
		os.Exit(1)
	}
}

func run() error {
	endpoint := flag.String("endpoint", "http://127.0.0.1:8080", "llama-server base URL")
	model := flag.String("model", "tiny", "model name")
	api := flag.String("api", "chat", "chat or completions")
	input := flag.Int("input", 256, "prompt tokens")
	output := flag.Int("output", 32, "output tokens")
	n := flag.Int("n", 16, "measured requests")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	control, err := engine.NewClient(engine.ClientConfig{BaseURL: *endpoint, Model: *model})
	if err != nil {
		return err
	}
	flush, err := control.FlushCache(ctx, engine.FlushAuto)
	if err != nil {
		return err
	}
	client, err := load.NewClient(load.ClientConfig{BaseURL: *endpoint, Model: *model, API: *api, ExtraBody: flush.RequestFields})
	if err != nil {
		return err
	}
	gen := &prompt.Generator{Seed: 7, Counter: control}
	warmup, _, err := gen.Prompts(ctx, "crosscheck warmup", 2, *input)
	if err != nil {
		return err
	}
	measured, _, err := gen.Prompts(ctx, "crosscheck measured", *n, *input)
	if err != nil {
		return err
	}
	res, err := load.RunTrial(ctx, client, load.TrialSpec{Concurrency: 1, Warmup: warmup, Measured: measured, OutputTokens: *output})
	if err != nil {
		return err
	}

	var ttft, promptMs, ttftGap, itl, perToken, itlGap []float64
	for _, r := range res.Measured() {
		if !metrics.Succeeded(r) || r.ServerTimings == nil {
			return fmt.Errorf("request %d: no llama.cpp timings (HTTP %d %s); is this llama-server?", r.Index, r.HTTPStatus, r.Err)
		}
		st := r.ServerTimings
		t := metrics.TTFTMs(r)
		ttft, promptMs, ttftGap = append(ttft, t), append(promptMs, st.PromptMs), append(ttftGap, t-st.PromptMs)
		if v, ok := metrics.ITLMs(r); ok {
			itl, perToken, itlGap = append(itl, v), append(perToken, st.PredictedPerTokenMs), append(itlGap, v-st.PredictedPerTokenMs)
		}
	}
	fmt.Printf("requests: %d at concurrency 1, %d prompt tokens (server: %d), %d output tokens\n",
		len(ttft), *input, res.Measured()[0].PromptTokens, *output)
	fmt.Printf("TTFT (client)            median %8.2f ms\n", median(ttft))
	fmt.Printf("timings.prompt_ms        median %8.2f ms\n", median(promptMs))
	fmt.Printf("TTFT - prompt_ms         median %8.2f ms   (min %.2f, max %.2f)\n", median(ttftGap), minOf(ttftGap), maxOf(ttftGap))
	fmt.Printf("ITL (client)             median %8.3f ms\n", median(itl))
	fmt.Printf("predicted_per_token_ms   median %8.3f ms\n", median(perToken))
	fmt.Printf("ITL - predicted_per_tok  median %8.3f ms   (min %.3f, max %.3f)\n", median(itlGap), minOf(itlGap), maxOf(itlGap))
	return nil
}

func median(v []float64) float64 {
	m, err := metrics.Percentile(v, 50)
	if err != nil {
		return 0
	}
	return m
}

func minOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[0]
}

func maxOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)-1]
}
