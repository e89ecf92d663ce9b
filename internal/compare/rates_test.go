package compare_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// rateModel is the simulated server the false-alarm and detection rates are measured on: 16
// slots and prefill batches of at most 2048 tokens, so with 1024-token prompts TTFT grows
// gradually with concurrency (each batch stalls the others) rather than jumping at a slot
// limit, as on a real server. Seed draws its noise (3 % per trial, 2 % per request).
func rateModel(seed uint64, slower float64) simengine.Model {
	m := simengine.DefaultModel()
	m.PrefillPerToken = 80 * time.Microsecond
	m.PrefillOverhead = 10 * time.Millisecond
	m.DecodeStep = 20 * time.Millisecond
	m.DecodePerSeq = 1 * time.Millisecond
	m.MaxPrefillTokens = 2048
	m.Seed = seed
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * slower) }
	m.PrefillPerToken, m.PrefillOverhead = scale(m.PrefillPerToken), scale(m.PrefillOverhead)
	m.DecodeStep, m.DecodePerSeq = scale(m.DecodeStep), scale(m.DecodePerSeq)
	return m
}

// rateRun is one capacity benchmark against the simulated server, through the real run path
// (HTTP, streaming client, metrics, search), in scaled wall time.
func rateRun(ctx context.Context, m simengine.Model, timeScale float64, recordsDir string) (*results.Document, error) {
	return rateRunAgainst(ctx, m, timeScale, recordsDir, nil)
}

// rateRunAgainst is rateRun measuring against a baseline (nil: none) with the default
// comparison budget.
func rateRunAgainst(ctx context.Context, m simengine.Model, timeScale float64, recordsDir string, baseline *results.Document) (*results.Document, error) {
	eng, err := simengine.NewServer(simengine.Options{Model: m, ModelName: "sim", TimeScale: timeScale})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	return capacity.Run(ctx, capacity.Config{
		Endpoint: srv.URL, Model: "sim", API: "chat",
		Workloads: []capacity.Workload{{Label: "1K / 16", InputTokens: 1024, OutputTokens: 16}},
		// The threshold scales with the clock: 600 ms of model time.
		SLOs:           []results.SLO{{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 600 * timeScale}},
		MinConcurrency: 1, MaxConcurrency: 24,
		WarmupRequests: 4, MeasuredRequests: 32, ConfirmationTrials: 3,
		CacheFlush: "auto", Seed: 1, RecordsDirectory: recordsDir,
		Baseline: baselineOf(baseline), ComparisonBudget: envInt("COMPARE_BUDGET", compare.DefaultComparisonBudget),
	})
}

func baselineOf(d *results.Document) *capacity.Document {
	if d == nil {
		return nil
	}
	return &capacity.Document{Document: d}
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkRates measures the comparison's verdicts on the simulated engine through the
// capacity run path, in wall-clock time: for each seeded pair, two runs of the same server
// (different noise seeds) and a run of the same server made 15 % slower (every cost × 1.15).
// It reports the shares of each verdict (reportRates); on a loaded machine the wall clock adds
// noise the trials show, which should turn into inconclusive verdicts, not false ones. COMPARE_PAIRS sets the number of pairs (default 20), COMPARE_TIMESCALE the
// wall time per model time (default 0.25).
//
//	go test -run '^$' -bench BenchmarkRates -benchtime 1x ./internal/compare/
func BenchmarkRates(b *testing.B) {
	pairs := envInt("COMPARE_PAIRS", 20)
	timeScale := envFloat("COMPARE_TIMESCALE", 0.25)
	opts := compare.Options{Alpha: envFloat("COMPARE_ALPHA", 0), Band: envFloat("COMPARE_BAND", 0)}
	ctx := context.Background()
	for range b.N {
		sameV, slowerV := map[string]int{}, map[string]int{}
		for i := range pairs {
			seed := uint64(1000 + 3*i)
			base, err := rateRun(ctx, rateModel(seed, 1), timeScale, "")
			if err != nil {
				b.Fatal(err)
			}
			same, err := rateRun(ctx, rateModel(seed+1, 1), timeScale, "")
			if err != nil {
				b.Fatal(err)
			}
			slow, err := rateRun(ctx, rateModel(seed+2, 1.15), timeScale, "")
			if err != nil {
				b.Fatal(err)
			}
			rs := compare.Compare(base, same, opts)
			rw := compare.Compare(base, slow, opts)
			sameV[rs.Workloads[0].Verdict]++
			slowerV[rw.Workloads[0].Verdict]++
			if testing.Verbose() {
				fmt.Printf("pair %2d same: %-9s %s\n", i, rs.Workloads[0].Verdict, rs.Workloads[0].Reason)
				fmt.Printf("pair %2d slow: %-9s %s\n", i, rw.Workloads[0].Verdict, rw.Workloads[0].Reason)
			}
		}
		reportRates(b, pairs, sameV, slowerV)
	}
}

// BenchmarkSequential measures the benchmark measuring against its baseline, in wall-clock
// time through the whole run path (HTTP, streaming client, search, compare.Measure): per
// seeded pair a baseline run, then a run of the same server (other noise seeds) and one of
// the server made 15 % slower, each given the baseline, with the default
// trial.comparison_budget (COMPARE_BUDGET). Printed: each pair's verdicts, then the shares
// (reportRates) and the trials the comparisons added as a multiple of the runs' own.
// COMPARE_PAIRS (default 20) and COMPARE_TIMESCALE (default 0.25) as for BenchmarkRates.
//
//	flock /tmp/heavy.lock go test -run '^$' -bench 'BenchmarkSequential$' -benchtime 1x -timeout 120m ./internal/compare/
func BenchmarkSequential(b *testing.B) {
	pairs := envInt("COMPARE_PAIRS", 20)
	timeScale := envFloat("COMPARE_TIMESCALE", 0.25)
	ctx := context.Background()
	for range b.N {
		sameV, slowerV := map[string]int{}, map[string]int{}
		added, own := 0, 0
		for i := range pairs {
			seed := uint64(5000 + 3*i)
			base, err := rateRun(ctx, rateModel(seed, 1), timeScale, "")
			if err != nil {
				b.Fatal(err)
			}
			var verdicts [2]string
			for j, f := range []float64{1, 1.15} {
				cur, err := rateRunAgainst(ctx, rateModel(seed+1+uint64(j), f), timeScale, "", base)
				if err != nil {
					b.Fatal(err)
				}
				w := compare.Compare(base, cur, compare.Options{}).Workloads[0]
				verdicts[j] = w.Verdict
				needed, seq := compare.Added(cur.Workloads[0])
				added += needed + seq
				own += len(cur.Workloads[0].AllTrials) - needed - seq
				if testing.Verbose() {
					fmt.Printf("pair %2d ×%.2f: %-12s added %d+%d: %s\n", i, f, w.Verdict, needed, seq, w.Reason)
				}
			}
			sameV[verdicts[0]]++
			slowerV[verdicts[1]]++
			fmt.Printf("pair %2d: same %s, 15 %% slower %s (load %s)\n", i, verdicts[0], verdicts[1], loadAvg())
		}
		reportRates(b, pairs, sameV, slowerV)
		b.ReportMetric(float64(added)/float64(own), "added/own")
	}
}

// loadAvg is the machine's 1-minute load average, for the figures printed beside it.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(raw))[0]
}

// BenchmarkSequentialEndpoint runs BenchmarkSequential's pairs against a real server the
// caller starts and restarts: per pair COMPARE_RESTART (a shell command that starts the
// server afresh) then the baseline run, COMPARE_RESTART again then the same server measured
// against the baseline, and COMPARE_SLOWER (a shell command that starts it slower) then the
// slower one measured against it. Printed per pair: both verdicts, the trials each
// comparison added and whether each run's confirmation trials disagreed (the warning);
// then the shares. Skipped without COMPARE_ENDPOINT: scripts/sequential-llamacpp.sh runs it
// against llama.cpp in Docker. The protocol is the quickstart's first workload: 256 in / 32
// out, p95 TTFT < COMPARE_TTFT_MS (default 1500) ms, 2 warmups and COMPARE_MEASURED (default
// 16) measured requests, 3 confirmation trials, concurrency 1 to 16.
func BenchmarkSequentialEndpoint(b *testing.B) {
	endpoint := os.Getenv("COMPARE_ENDPOINT")
	if endpoint == "" {
		b.Skip("COMPARE_ENDPOINT is not set: scripts/sequential-llamacpp.sh starts llama.cpp and runs this")
	}
	pairs := envInt("COMPARE_PAIRS", 10)
	ctx := context.Background()
	sh := func(what string) {
		if out, err := exec.CommandContext(ctx, "sh", "-c", os.Getenv(what)).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", what, err, out)
		}
	}
	run := func(baseline *results.Document) *results.Document {
		cfg := capacity.Defaults()
		cfg.Endpoint, cfg.Model, cfg.Seed = endpoint, cmp.Or(os.Getenv("COMPARE_MODEL"), "tiny"), 1
		cfg.Workloads = []capacity.Workload{{Label: "256 / 32", InputTokens: 256, OutputTokens: 32}}
		cfg.SLOs = []results.SLO{{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: envFloat("COMPARE_TTFT_MS", 1500)}}
		cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 2, envInt("COMPARE_MEASURED", 16), 3
		cfg.MinConcurrency, cfg.MaxConcurrency = 1, 16
		cfg.Baseline = baselineOf(baseline)
		doc, err := capacity.Run(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return doc
	}
	for range b.N {
		sameV, slowerV := map[string]int{}, map[string]int{}
		warned, runs := 0, 0
		for i := range pairs {
			sh("COMPARE_RESTART")
			base := run(nil)
			var line []string
			for j, restart := range []string{"COMPARE_RESTART", "COMPARE_SLOWER"} {
				sh(restart)
				cur := run(base)
				w := compare.Compare(base, cur, compare.Options{}).Workloads[0]
				needed, seq := compare.Added(cur.Workloads[0])
				line = append(line, fmt.Sprintf("%s %s (capacity %s → %s, added %d+%d)", []string{"same", "slower"}[j], w.Verdict,
					levelStr(w.Axis, w.BaselineMaximumPassing), levelStr(w.Axis, w.CurrentMaximumPassing), needed, seq))
				[]map[string]int{sameV, slowerV}[j][w.Verdict]++
				if j == 0 {
					for _, d := range []*results.Document{base, cur} {
						runs++
						if len(d.Workloads[0].TrialDisagreements) > 0 {
							warned++
						}
					}
				}
				if testing.Verbose() {
					fmt.Printf("  %s\n", w.Reason)
				}
			}
			fmt.Printf("pair %2d: %s (load %s)\n", i, strings.Join(line, "; "), loadAvg())
		}
		fmt.Printf("same-server runs whose confirmation trials disagree (the warning): %d of %d\n", warned, runs)
		reportRates(b, pairs, sameV, slowerV)
	}
}

// levelStr is a maximum passing level, or "none".
func levelStr(_ compare.Axis, v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
