package compare_test

import (
	"context"
	"fmt"
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
	base := time.Unix(1_700_000_000, 0)
	slos := []results.SLO{slo}
	runner := search.RunnerFunc(func(_ context.Context, q search.Request) (search.Outcome, error) {
		index := q.Index
		if q.Kind == search.Probe {
			index += 1000 // probes draw their own noise
		}
		reqs, err := m.Run(simengine.Trial{Concurrency: q.Concurrency, Warmups: warmups, Measured: measured, InputTokens: isl, OutputTokens: osl, Index: index})
		if err != nil {
			return search.Outcome{}, err
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
			return search.Outcome{}, err
		}
		tr, err := metrics.Summarize(recs, osl)
		if err != nil {
			return search.Outcome{}, err
		}
		tr.Trial, tr.Concurrency, tr.SLOs = q.Index, q.Concurrency, v.Results
		return search.Outcome{Request: q, Pass: v.Pass, Value: v.Closeness, DecidedEarly: q.Kind == search.Probe, Detail: &tr}, nil
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
