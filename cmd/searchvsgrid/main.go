// Command searchvsgrid measures, against one running server, what the adaptive search saves in
// wall-clock over the grid a person would run by hand: every concurrency from the minimum up,
// the confirmation trials in full at each, stopping after the first level with a failing trial
// (search.concurrency_levels = 1 … c*+1). It runs both, in turn, -runs times (alternating which
// goes first, so a server that drifts does not favour one), and prints each run's wall-clocks,
// trials and answers, then the ratios and how often the two agreed.
//
//	go run ./cmd/searchvsgrid -endpoint http://127.0.0.1:18081 -model tiny -runs 3
//
// scripts/search-vs-grid-llamacpp.sh starts the quickstart's llama.cpp server and runs it;
// scripts/device/realsize-vulkan.sh runs it on a lent GPU against a real-size model, with the
// engine warm-up (-engine-warmup), a search, the grid and a second search in that order
// (-sequence search,grid,search), after waiting for the server (-wait), and collects each
// outcome as a tab-separated row (-tsv).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
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
	engineWarmup := flag.Int("engine-warmup", 0, "trial.engine_warmup_requests: requests at each concurrency 1, 2, 4, … up to the server's slots before the first measured trial of each search and grid")
	sequence := flag.String("sequence", "", "what to run, in order, as a comma-separated list of search and grid (e.g. search,grid,search); replaces -runs' alternating pairs")
	wait := flag.Duration("wait", 0, "wait up to this long for the server's /health to answer 200 before the first trial (a model of many GiB loads for minutes)")
	tsv := flag.String("tsv", "", "append one tab-separated row per search or grid to this file: label, step, kind, wall-clock s, trials, request-s, maximum passing, first failing")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := capacity.Defaults()
	cfg.Endpoint, cfg.Model = *endpoint, *model
	cfg.Workloads = []capacity.Workload{{Label: fmt.Sprintf("%d / %d", *input, *output), InputTokens: *input, OutputTokens: *output}}
	cfg.SLOs = []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: *ttft}}
	cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = *warmups, *measured, *k
	cfg.MinConcurrency, cfg.MaxConcurrency = *minC, *maxC
	cfg.EngineWarmupRequests = *engineWarmup
	cfg.Seed = 1
	steps, err := plan(*sequence, *runs)
	if err != nil {
		return err
	}
	if *wait > 0 {
		if err := waitHealthy(ctx, *endpoint, *wait); err != nil {
			return err
		}
	}

	fmt.Printf("workload %s, p95 TTFT < %g ms, %d warmups + %d measured requests, %d confirmation trials, concurrency %d..%d, engine warm-up %d\n",
		cfg.Workloads[0].Label, *ttft, *warmups, *measured, *k, *minC, *maxC, *engineWarmup)
	var searches, grids []outcome
	for i, what := range steps {
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
			return fmt.Errorf("step %d, %s: %w", i+1, what, err)
		}
		fmt.Printf("step %d %-6s %7.1f s  %2d trials  %7.1f request-s  maximum passing %s, first failing %s\n",
			i+1, what, o.wall.Seconds(), o.trials, o.costS, o.passing, o.top)
		if *tsv != "" {
			if err := appendRow(*tsv, cfg.Workloads[0].Label, i+1, what, o); err != nil {
				return err
			}
		}
	}
	var agree int
	var ratios, gaps []string
	var sw, gw time.Duration
	for i := range min(len(searches), len(grids)) {
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
	fmt.Printf("same maximum passing concurrency in %d of %d runs; search minus grid per run: %s\n", agree, len(ratios), strings.Join(gaps, ", "))
	fmt.Printf("all answers: search %s; grid %s\n", answers(searches), answers(grids))
	return nil
}

// plan is the order of searches and grids: sequence as given, else runs pairs alternating
// which goes first (so a server that drifts does not favour one).
func plan(sequence string, runs int) ([]string, error) {
	if sequence == "" {
		var steps []string
		for i := range runs {
			if i%2 == 0 {
				steps = append(steps, "search", "grid")
			} else {
				steps = append(steps, "grid", "search")
			}
		}
		return steps, nil
	}
	steps := strings.Split(sequence, ",")
	for _, s := range steps {
		if s != "search" && s != "grid" {
			return nil, fmt.Errorf("-sequence %q: %q is neither search nor grid", sequence, s)
		}
	}
	return steps, nil
}

// waitHealthy polls endpoint/health until it answers 200, for at most d.
func waitHealthy(ctx context.Context, endpoint string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/health did not answer 200 within %s", endpoint, d)
		case <-time.After(time.Second):
		}
	}
}

// appendRow adds one outcome to the tab-separated file.
func appendRow(path, label string, step int, what string, o outcome) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s\t%d\t%s\t%.1f\t%d\t%.1f\t%s\t%s\n", label, step, what, o.wall.Seconds(), o.trials, o.costS, o.passing, o.top)
	return errors.Join(err, f.Close())
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
