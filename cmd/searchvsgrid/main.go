// Command searchvsgrid measures, against one running server, what the adaptive search saves in
// wall-clock over the grid a person would run by hand: every concurrency from the minimum up,
// the confirmation trials in full at each, stopping after the first level with a failing trial
// (search.concurrency_levels = 1 … c*+1). It runs both, in turn, -runs times (alternating which
// goes first, so a server that drifts does not favour one), and prints each run's wall-clocks,
// trials and answers, then the ratios and how often the two agreed.
//
//	go run ./cmd/searchvsgrid -endpoint http://127.0.0.1:18081 -model tiny -runs 3
//
// scripts/search-vs-grid-llamacpp.sh starts the quickstart's llama.cpp server and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "searchvsgrid:", err)
		os.Exit(1)
	}
}

// outcome is one measurement: how long it took, how many trials, and the boundary.
type outcome struct {
	wall         time.Duration
	trials       int
	costS        float64 // request-seconds of its trials
	passing, top string  // maximum passing and first failing concurrency ("none")
	maxPassing   int     // 0 when none passed
}

func run() error {
	endpoint := flag.String("endpoint", "http://127.0.0.1:18081", "server base URL")
	model := flag.String("model", "tiny", "served model name")
	runs := flag.Int("runs", 3, "search/grid pairs to run")
	input := flag.Int("input", 256, "prompt tokens")
	output := flag.Int("output", 32, "output tokens")
	ttft := flag.Float64("ttft-ms", 1500, "SLO: p95 time to first token below this")
	warmups := flag.Int("warmups", 2, "warmup requests per trial")
	measured := flag.Int("measured", 16, "measured requests per trial")
	k := flag.Int("k", 3, "confirmation trials per level")
	minC := flag.Int("min", 1, "lowest concurrency")
	maxC := flag.Int("max", 16, "highest concurrency")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := capacity.Defaults()
	cfg.Endpoint, cfg.Model = *endpoint, *model
	cfg.Workloads = []capacity.Workload{{Label: fmt.Sprintf("%d / %d", *input, *output), InputTokens: *input, OutputTokens: *output}}
	cfg.SLOs = []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: *ttft}}
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = *warmups, *measured, *k
	cfg.MinConcurrency, cfg.MaxConcurrency = *minC, *maxC
	cfg.Seed = 1

	fmt.Printf("workload %s, p95 TTFT < %g ms, %d warmups + %d measured requests, %d confirmation trials, concurrency %d..%d\n",
		cfg.Workloads[0].Label, *ttft, *warmups, *measured, *k, *minC, *maxC)
	var searches, grids []outcome
	for i := range *runs {
		order := []string{"search", "grid"}
		if i%2 == 1 {
			order = []string{"grid", "search"}
		}
		for _, what := range order {
			var o outcome
			var err error
			if what == "search" {
				o, err = searchOnce(ctx, cfg)
				searches = append(searches, o)
			} else {
				o, err = gridOnce(ctx, cfg)
				grids = append(grids, o)
			}
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", i+1, what, err)
			}
			fmt.Printf("run %d %-6s %7.1f s  %2d trials  %7.1f request-s  maximum passing %s, first failing %s\n",
				i+1, what, o.wall.Seconds(), o.trials, o.costS, o.passing, o.top)
		}
	}
	var agree int
	var ratios, gaps []string
	var sw, gw time.Duration
	for i := range searches {
		s, g := searches[i], grids[i]
		sw, gw = sw+s.wall, gw+g.wall
		ratios = append(ratios, fmt.Sprintf("%.2f", g.wall.Seconds()/s.wall.Seconds()))
		gaps = append(gaps, fmt.Sprintf("%+d", s.maxPassing-g.maxPassing))
		if s.maxPassing == g.maxPassing {
			agree++
		}
	}
	fmt.Printf("grid/search wall-clock per run: %s; over all runs %.1f s / %.1f s = %.2f\n",
		strings.Join(ratios, ", "), gw.Seconds(), sw.Seconds(), gw.Seconds()/sw.Seconds())
	fmt.Printf("same maximum passing concurrency in %d of %d runs; search minus grid per run: %s\n", agree, len(searches), strings.Join(gaps, ", "))
	fmt.Printf("all answers: search %s; grid %s\n", answers(searches), answers(grids))
	return nil
}

func answers(runs []outcome) string {
	var out []string
	for _, o := range runs {
		out = append(out, o.passing)
	}
	return strings.Join(out, ", ")
}

// searchOnce runs the adaptive search.
func searchOnce(ctx context.Context, cfg capacity.Config) (outcome, error) {
	var o outcome
	cfg.Progress = func(e capacity.JournalEntry) {
		o.trials++
		o.costS += e.CostS
		logTrial("search", e)
	}
	start := time.Now()
	doc, err := capacity.Run(ctx, cfg)
	o.wall = time.Since(start)
	if err != nil {
		return o, err
	}
	w := doc.Workloads[0]
	o.passing, o.top = show(w.MaximumPassingConcurrency), show(w.FirstFailingConcurrency)
	if w.MaximumPassingConcurrency != nil {
		o.maxPassing = *w.MaximumPassingConcurrency
	}
	return o, nil
}

// gridOnce runs the grid over every level from the minimum and stops it once the first level
// with a failing confirmation trial has all of its trials: the boundary is that level and the
// one below.
func gridOnce(ctx context.Context, cfg capacity.Config) (outcome, error) {
	var o outcome
	for c := cfg.MinConcurrency; c <= cfg.MaxConcurrency; c++ {
		cfg.ConcurrencyLevels = append(cfg.ConcurrencyLevels, c)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := map[int]int{}
	failed := map[int]bool{}
	first := 0 // the first failing level, once all its trials are in
	cfg.Progress = func(e capacity.JournalEntry) {
		o.trials++
		o.costS += e.CostS
		logTrial("grid", e)
		done[e.Concurrency]++
		failed[e.Concurrency] = failed[e.Concurrency] || !e.Pass
		if first == 0 && failed[e.Concurrency] && done[e.Concurrency] == cfg.ConfirmationTrials {
			first = e.Concurrency
			cancel()
		}
	}
	start := time.Now()
	doc, err := capacity.Run(ctx, cfg)
	o.wall = time.Since(start)
	switch {
	case first != 0 && errors.Is(err, context.Canceled):
	case err != nil:
		return o, err
	default: // nothing failed up to the maximum
		w := doc.Workloads[0]
		o.passing, o.top = show(w.MaximumPassingConcurrency), show(w.FirstFailingConcurrency)
		if w.MaximumPassingConcurrency != nil {
			o.maxPassing = *w.MaximumPassingConcurrency
		}
		return o, nil
	}
	o.top = fmt.Sprint(first)
	o.passing = "none"
	if below := slices.Index(cfg.ConcurrencyLevels, first); below > 0 {
		o.maxPassing = cfg.ConcurrencyLevels[below-1]
		o.passing = fmt.Sprint(o.maxPassing)
	}
	return o, nil
}

// logTrial says on stderr what each trial gave, as it finishes.
func logTrial(what string, e capacity.JournalEntry) {
	verdict := "pass"
	if !e.Pass {
		verdict = "fail"
	}
	fmt.Fprintf(os.Stderr, "  %s: c=%d %s %d %s, closeness %.2f, %.1f request-s\n", what, e.Concurrency, e.Kind, e.Index, verdict, e.Closeness, e.CostS)
}

func show(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
