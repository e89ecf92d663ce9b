package metrics

import (
	"errors"
	"fmt"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// ErrUndecided is returned by Evaluate when cancelled requests leave the verdict open: the
// trial was stopped before its outcome was certain, so it cannot be reported as either.
var ErrUndecided = errors.New("trial stopped before its SLO verdict was decided")

// RequestValue is one successful request's value of a per-request metric of the metric
// table, in the metric's unit. ok is false when the request has no such value: ITL and
// per-user throughput need two output tokens and usage, TTST a second content chunk, and
// goodput is per trial.
func RequestValue(metric string, r load.RequestResult) (v float64, ok bool) {
	switch metric {
	case results.MetricTTFT:
		return TTFTMs(r), true
	case results.MetricRequestLatency:
		return RequestLatencyMs(r), true
	case results.MetricITL:
		return ITLMs(r)
	case results.MetricTTST:
		return TTSTMs(r)
	case results.MetricPerUserThroughput:
		itl, ok := ITLMs(r)
		if !ok || itl <= 0 {
			// Every token in one chunk has no finite rate; JSON cannot carry +Inf.
			return 0, false
		}
		return 1000 / itl, true
	}
	return 0, false
}

// values are an objective's metric over the successful measured requests, the population
// AIPerf takes its percentiles over.
func values(metric string, records []load.RequestResult) []float64 {
	var vs []float64
	for _, r := range records {
		if r.Warmup || !Succeeded(r) {
			continue
		}
		if v, ok := RequestValue(metric, r); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// good reports whether a measured request counts towards goodput: it succeeded and meets
// every per-request objective's threshold on its own (AIPerf's criterion; the percentile
// plays no part for one request). A request without a value of an objective's metric is
// not good: nothing shows it met that objective.
func good(slos []results.SLO, r load.RequestResult) bool {
	if !Succeeded(r) {
		return false
	}
	for _, s := range slos {
		if s.Info().PerTrial {
			continue
		}
		v, ok := RequestValue(s.Metric, r)
		if !ok || !s.Meets(v) {
			return false
		}
	}
	return true
}

// GoodputPercent is the share of the trial's measured requests, cancelled ones left out,
// that are good against slos; 0 when there are none.
func GoodputPercent(slos []results.SLO, records []load.RequestResult) float64 {
	n, g := 0, 0
	for _, r := range records {
		if r.Warmup || r.Cancelled {
			continue
		}
		n++
		if good(slos, r) {
			g++
		}
	}
	if n == 0 {
		return 0
	}
	return 100 * float64(g) / float64(n)
}

// Verdict is a trial's outcome against every objective.
type Verdict struct {
	Pass bool
	// Results holds each objective's value (0 when no request has one) and whether it was
	// met, in the order of the objectives.
	Results        []results.SLOResult
	GoodputPercent float64
	// Closeness is the largest of the objectives' results.SLO.Closeness: how near the trial
	// came to failing; at least 1 when it missed one.
	Closeness float64
}

// Evaluate judges a trial against every objective. Any failed measured request fails the
// trial whatever the objectives say: a user who got an error did not get the SLO, and a
// server that sheds load by erroring must not look faster for it. Otherwise the trial
// passes when every objective is met over the successful measured requests.
//
// Records of a trial stopped early (cancelled requests) are judged by what they make
// certain, exactly as the TrialDecider does; when that leaves the outcome open the error
// is ErrUndecided.
func Evaluate(slos []results.SLO, records []load.RequestResult) (Verdict, error) {
	slos = withDefaults(slos)
	if err := results.ValidateSLOs(slos); err != nil {
		return Verdict{}, err
	}
	measured := 0
	for _, r := range records {
		if !r.Warmup {
			measured++
		}
	}
	if measured == 0 {
		return Verdict{}, errors.New("verdict: the trial has no measured requests")
	}
	d, err := NewTrialDecider(slos, measured)
	if err != nil {
		return Verdict{}, err
	}
	for _, r := range records {
		d.Complete(r)
	}
	v := Verdict{GoodputPercent: GoodputPercent(slos, records)}
	for i, s := range slos {
		res := results.SLOResult{Metric: s.Metric, Percentile: s.Percentile}
		if s.Info().PerTrial {
			res.Value = v.GoodputPercent
		} else if vs := values(s.Metric, records); len(vs) > 0 {
			res.Value = mustPercentile(vs, s.Percentile)
		}
		res.Met = d.objectives[i].decision() == DecidedPass
		v.Closeness = max(v.Closeness, s.Closeness(res.Value))
		v.Results = append(v.Results, res)
	}
	switch d.Decision() {
	case Undecided:
		return v, fmt.Errorf("%d of %d measured requests finished: %w", d.completed, measured, ErrUndecided)
	case DecidedPass:
		v.Pass = true
	}
	return v, nil
}

// withDefaults fills empty comparisons (and metrics) as the resource does.
func withDefaults(slos []results.SLO) []results.SLO {
	out := make([]results.SLO, len(slos))
	for i, s := range slos {
		out[i] = s.WithDefaults()
	}
	return out
}
