package compare_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// virtualRun is a capacity run computed in the simulated engine's virtual time: the same
// search, metrics and objective verdicts as capacity.Run, without HTTP and without sleeping,
// so a benchmark can afford hundreds of runs and the machine's load plays no part. Probes are
// kept as stopped early (the comparison reads only full trials), as most are on the real path.
func virtualRun(m simengine.Model, label string, isl, osl int, slo results.SLO, warmups, measured, k, maxC int) (*results.Document, error) {
	slos := []results.SLO{slo}
	runner := search.RunnerFunc(func(_ context.Context, q search.Request) (search.Outcome, error) {
		index := q.Index
		if q.Kind == search.Probe {
			index += 1000 // probes draw their own noise
		}
		tr, pass, closeness, err := virtualTrial(m, isl, osl, slos, warmups, measured, q.Concurrency, index)
		if err != nil {
			return search.Outcome{}, err
		}
		tr.Trial = q.Index
		return search.Outcome{Request: q, Pass: pass, Value: closeness, DecidedEarly: q.Kind == search.Probe, Detail: &tr}, nil
	})
	res, err := search.Run(context.Background(), search.Config{Min: 1, Max: maxC, ConfirmationTrials: k, Threshold: 1, GuardBand: 0.07}, runner)
	if err != nil {
		return nil, err
	}
	w := results.Workload{Label: label, ConfiguredISL: isl, ConfiguredOSL: osl,
		MaximumPassingConcurrency: res.MaximumPassing, FirstFailingConcurrency: res.FirstFailing}
	for _, o := range res.All {
		t := *o.Detail.(*results.Trial)
		t.Kind, t.StoppedEarly = o.Kind.String(), o.DecidedEarly
		t.Verdict = map[bool]string{true: "pass", false: "fail"}[o.Pass]
		w.AllTrials = append(w.AllTrials, t)
	}
	for _, o := range res.PassingTrials {
		w.PassingTrials = append(w.PassingTrials, *o.Detail.(*results.Trial))
	}
	for _, o := range res.FailingTrials {
		w.FailingTrials = append(w.FailingTrials, *o.Detail.(*results.Trial))
	}
	return &results.Document{SchemaVersion: 1, Experiment: results.Experiment{Model: "sim"},
		AIPerf: results.Protocol{ArrivalPattern: "closed-loop concurrency burst", Streaming: true, IgnoreEOS: true,
			WarmupsPerTrial: warmups, MeasuredRequestsPerTrial: measured, IndependentTrialsPerBoundarySide: k},
		SLOs: slos, Workloads: []results.Workload{w}}, nil
}

// virtualTrial is one full trial at concurrency c in the simulated engine's virtual time,
// judged by slos: its record (trial number index), whether it passed and its closeness.
func virtualTrial(m simengine.Model, isl, osl int, slos []results.SLO, warmups, measured, c, index int) (results.Trial, bool, float64, error) {
	base := time.Unix(1_700_000_000, 0)
	reqs, err := m.Run(simengine.Trial{Concurrency: c, Warmups: warmups, Measured: measured, InputTokens: isl, OutputTokens: osl, Index: index})
	if err != nil {
		return results.Trial{}, false, 0, err
	}
	recs := make([]load.RequestResult, len(reqs))
	for i, r := range reqs {
		recs[i] = load.RequestResult{Index: i, Warmup: r.Warmup, RequestedOutputTokens: osl,
			Sent: base.Add(r.Start), Headers: base.Add(r.Start), FirstContent: base.Add(r.FirstToken), LastContent: base.Add(r.End), Done: base.Add(r.End),
			ContentChunks: r.OutputTokens, UsageReported: true, PromptTokens: isl, CompletionTokens: r.OutputTokens,
			FinishReason: "length", HTTPStatus: 200}
	}
	v, err := metrics.Evaluate(slos, recs)
	if err != nil {
		return results.Trial{}, false, 0, err
	}
	tr, err := metrics.Summarize(recs, osl)
	if err != nil {
		return results.Trial{}, false, 0, err
	}
	tr.Trial, tr.Concurrency, tr.SLOs = index, c, v.Results
	return tr, v.Pass, v.Closeness, nil
}

// virtualScenario is one server and workload of the virtual-time rates.
type virtualScenario struct {
	name     string
	model    simengine.Model
	isl, osl int
	slo      results.SLO
}

func virtualScenarios() []virtualScenario {
	gradual := rateModel(0, 1)
	twoSlot := simengine.TwoSlotModel()
	return []virtualScenario{
		// The reference protocol's shape on a gradual server: capacity moves with speed.
		{"16 slots, 1K / 16, p95 TTFT < 600 ms", gradual, 1024, 16, results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 600, Comparison: results.StrictlyLessThan}},
		// A slot-bound server: capacity does not move with speed, the values must show it.
		{"2 slots, 64 / 8, p95 TTFT < 150 ms", twoSlot, 64, 8, results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 150, Comparison: results.StrictlyLessThan}},
		// An objective on decode speed.
		{"16 slots, 1K / 16, p95 ITL < 40 ms", gradual, 1024, 16, results.SLO{Metric: results.MetricITL, Percentile: 95, ThresholdMs: 40, Comparison: results.StrictlyLessThan}},
	}
}

func slowerModel(m simengine.Model, seed uint64, f float64) simengine.Model {
	m.Seed = seed
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	m.PrefillPerToken, m.PrefillOverhead = scale(m.PrefillPerToken), scale(m.PrefillOverhead)
	m.DecodeStep, m.DecodePerSeq = scale(m.DecodeStep), scale(m.DecodePerSeq)
	return m
}

// BenchmarkRatesVirtual measures the verdicts' rates on the simulated engine in virtual time,
// over COMPARE_PAIRS (default 200) seeded pairs per scenario: two runs of the same server with
// different noise seeds, and a run of the server made 15 % slower (every cost × 1.15).
// Reported: the share of same-server pairs called regressed (a false alarm, at most 5 %),
// unchanged and inconclusive; the share of slower pairs called regressed (at least 95 %) and
// unchanged (wrong: at most 5 %). Reference protocol shape: 8 warmups, 64 measured requests,
// 3 confirmation trials. COMPARE_BAND sets the equivalence band (default DefaultBand).
//
//	go test -run '^$' -bench BenchmarkRatesVirtual -benchtime 1x ./internal/compare/
func BenchmarkRatesVirtual(b *testing.B) {
	pairs := envInt("COMPARE_PAIRS", 200)
	opts := compare.Options{Alpha: envFloat("COMPARE_ALPHA", 0), Band: envFloat("COMPARE_BAND", 0)}
	for _, sc := range virtualScenarios() {
		b.Run(sc.name, func(b *testing.B) {
			for range b.N {
				same, slow := map[string]int{}, map[string]int{}
				for i := range pairs {
					seed := uint64(1 + 3*i)
					run := func(seed uint64, f float64) *results.Document {
						d, err := virtualRun(slowerModel(sc.model, seed, f), "w", sc.isl, sc.osl, sc.slo, 8, 64, 3, 64)
						if err != nil {
							b.Fatal(err)
						}
						return d
					}
					base, sameRun, slowRun := run(seed, 1), run(seed+1, 1), run(seed+2, 1.15)
					rs := compare.Compare(base, sameRun, opts).Workloads[0]
					rw := compare.Compare(base, slowRun, opts).Workloads[0]
					same[rs.Verdict]++
					slow[rw.Verdict]++
					if testing.Verbose() {
						fmt.Printf("%s pair %d same: %s: %s\n", sc.name, i, rs.Verdict, rs.Reason)
						fmt.Printf("%s pair %d slower: %s: %s\n", sc.name, i, rw.Verdict, rw.Reason)
					}
				}
				reportRates(b, pairs, same, slow)
			}
		})
	}
}

// reportRates reports the verdicts' shares in percent of the pairs.
func reportRates(b *testing.B, pairs int, same, slow map[string]int) {
	pct := func(n int) float64 { return 100 * float64(n) / float64(pairs) }
	b.ReportMetric(pct(same[compare.Regressed]), "%same-regressed")
	b.ReportMetric(pct(same[compare.Unchanged]), "%same-unchanged")
	b.ReportMetric(pct(same[compare.Inconclusive]), "%same-inconclusive")
	b.ReportMetric(pct(slow[compare.Regressed]), "%slower-regressed")
	b.ReportMetric(pct(slow[compare.Unchanged]), "%slower-unchanged")
	b.ReportMetric(pct(slow[compare.Inconclusive]), "%slower-inconclusive")
	b.ReportMetric(float64(pairs), "pairs")
}

// BenchmarkSequentialVirtual measures the benchmark's sequential comparison (compare.Measure,
// the loop capacity runs with a baseline) on the simulated engine in virtual time, over
// COMPARE_PAIRS (default 1000) seeded pairs per scenario and case. Each pair is a baseline
// run and a current run of the reference protocol's shape (8 warmups, 64 measured requests,
// COMPARE_CONFIRMATIONS confirmation trials, default 3); the current run then measures
// against the baseline with trial.comparison_budget = COMPARE_BUDGET (default 12). Cases:
// the same server (other noise seeds), every cost 10 % higher, and capacity one level
// lower (2 → 1 slot on the slot-bound server; on the gradual ones the smallest slow-down
// that moves the noise-free capacity down by one). COMPARE_NOISE is the per-trial noise
// (default 0.03, the simulated engine's). Printed per scenario and case: the share of
// each verdict read by compare() on the two runs as they finished ("plain") and by the
// sequential comparison, and the trials it added, mean and 95th percentile, as a multiple
// of the current run's own trials.
//
//	go test -run '^$' -bench BenchmarkSequentialVirtual -benchtime 1x -timeout 60m ./internal/compare/
func BenchmarkSequentialVirtual(b *testing.B) {
	pairs := envInt("COMPARE_PAIRS", 1000)
	budget := envInt("COMPARE_BUDGET", compare.DefaultComparisonBudget)
	k := envInt("COMPARE_CONFIRMATIONS", 3)
	noise := envFloat("COMPARE_NOISE", 0.03)
	for range b.N {
		fmt.Printf("sequential comparison, virtual time: %d pairs per case, per-trial noise %.0f %%, %d confirmation trials, budget %d\n", pairs, noise*100, k, budget)
		fmt.Printf("%-38s %-14s %-36s %-36s %s\n", "scenario", "case", "plain: regr / unch / inconcl / impr", "sequential: regr / unch / inconcl / impr", "added trials: mean, p95 (× own)")
		for _, sc := range virtualScenarios() {
			sc.model.TrialNoise = noise
			cases := []struct {
				name  string
				model func(seed uint64) simengine.Model
			}{
				{"same server", func(seed uint64) simengine.Model { return slowerModel(sc.model, seed, 1) }},
				{"10 % slower", func(seed uint64) simengine.Model { return slowerModel(sc.model, seed, 1.10) }},
				{"one level lower", oneLevelLower(b, sc, k)},
			}
			for _, c := range cases {
				plain, seq := map[string]int{}, map[string]int{}
				var ratios []float64
				for i := range pairs {
					seed := uint64(7 + 5*i)
					run := func(m simengine.Model) *results.Document {
						d, err := virtualRun(m, "w", sc.isl, sc.osl, sc.slo, 8, 64, k, 64)
						if err != nil {
							b.Fatal(err)
						}
						return d
					}
					base, cur := run(slowerModel(sc.model, seed, 1)), run(c.model(seed+1))
					plain[compare.Compare(base, cur, compare.Options{}).Workloads[0].Verdict]++
					m := c.model(seed + 1)
					w, cw, err := compare.Measure(base, cur, cur.Workloads[0], compare.Plan{ConfirmationTrials: k, Budget: budget},
						func(at float64, index int) (results.Trial, error) {
							tr, pass, _, err := virtualTrial(m, sc.isl, sc.osl, cur.SLOs, 8, 64, int(at), 2000+index)
							tr.Trial, tr.Kind, tr.Verdict = index, "confirmation", map[bool]string{true: "pass", false: "fail"}[pass]
							return tr, err
						})
					if err != nil {
						b.Fatal(err)
					}
					seq[cw.Verdict]++
					if testing.Verbose() {
						fmt.Printf("%s %s pair %d: %s: %s\n", sc.name, c.name, i, cw.Verdict, cw.Reason)
					}
					needed, added := compare.Added(w)
					ratios = append(ratios, float64(needed+added)/float64(len(cur.Workloads[0].AllTrials)))
				}
				slices.Sort(ratios)
				mean := 0.0
				for _, r := range ratios {
					mean += r
				}
				mean /= float64(len(ratios))
				fmt.Printf("%-38s %-14s %-36s %-36s %.2f×, %.2f×\n", sc.name, c.name, shares(plain, pairs), shares(seq, pairs), mean, ratios[len(ratios)*95/100])
			}
		}
	}
}

// shares reads "1.2 / 95.0 / 3.8 / 0.0 %": regressed, unchanged, inconclusive, improved.
func shares(v map[string]int, n int) string {
	p := func(k string) float64 { return 100 * float64(v[k]) / float64(n) }
	return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f %%", p(compare.Regressed), p(compare.Unchanged), p(compare.Inconclusive), p(compare.Improved))
}

// oneLevelLower is the scenario's server with its capacity one level lower: one slot fewer
// where slots bound it, else every cost raised by the smallest step of 1 % that lowers the
// noise-free capacity by one.
func oneLevelLower(b *testing.B, sc virtualScenario, k int) func(seed uint64) simengine.Model {
	capacityOf := func(m simengine.Model) int {
		m.TrialNoise, m.RequestNoise = 0, 0
		d, err := virtualRun(m, "w", sc.isl, sc.osl, sc.slo, 8, 64, k, 64)
		if err != nil || d.Workloads[0].MaximumPassingConcurrency == nil {
			b.Fatalf("%s: no noise-free capacity: %v", sc.name, err)
		}
		return *d.Workloads[0].MaximumPassingConcurrency
	}
	want := capacityOf(sc.model) - 1
	if sc.model.Slots <= 2 {
		return func(seed uint64) simengine.Model {
			m := slowerModel(sc.model, seed, 1)
			m.Slots--
			return m
		}
	}
	for f := 1.01; f < 3; f += 0.01 {
		if capacityOf(slowerModel(sc.model, 1, f)) == want {
			return func(seed uint64) simengine.Model { return slowerModel(sc.model, seed, f) }
		}
	}
	b.Fatalf("%s: no slow-down lowers the capacity by one", sc.name)
	return nil
}
