package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// protocolDifferences sorts what differs between two documents' protocols into what makes
// their numbers different quantities (refused) and what changes the setup a reader should
// know about but leaves the numbers comparable (flagged).
func protocolDifferences(b, c *results.Document) (refused, flagged []string) {
	bo, co := b.Objectives(), c.Objectives()
	if keys(bo) != keys(co) {
		refused = append(refused, fmt.Sprintf("objectives differ: baseline judges %s, current %s; a percentile of another metric is another quantity", keys(bo), keys(co)))
	} else {
		for i := range bo {
			if bo[i].ThresholdMs != co[i].ThresholdMs || bo[i].Comparison != co[i].Comparison {
				flagged = append(flagged, fmt.Sprintf("objective %s: baseline %s, current %s; capacities answer different questions, the values at common levels are compared",
					bo[i].Key(), bo[i].String(), co[i].String()))
			}
		}
	}
	bp, cp := b.AIPerf, c.AIPerf
	if bp.MeasuredRequestsPerTrial != cp.MeasuredRequestsPerTrial {
		refused = append(refused, fmt.Sprintf("measured requests per trial differ: baseline %d, current %d; a percentile over another number of requests has another spread and bias",
			bp.MeasuredRequestsPerTrial, cp.MeasuredRequestsPerTrial))
	}
	if bp.ArrivalPattern != cp.ArrivalPattern {
		refused = append(refused, fmt.Sprintf("arrival pattern differs: baseline %q, current %q", bp.ArrivalPattern, cp.ArrivalPattern))
	}
	if bp.Streaming != cp.Streaming || bp.IgnoreEOS != cp.IgnoreEOS || bp.Temperature != cp.Temperature {
		refused = append(refused, fmt.Sprintf("request shape differs: baseline streaming=%v ignore_eos=%v temperature=%v, current streaming=%v ignore_eos=%v temperature=%v",
			bp.Streaming, bp.IgnoreEOS, bp.Temperature, cp.Streaming, cp.IgnoreEOS, cp.Temperature))
	}
	be, ce := b.Experiment, c.Experiment
	if be.Model != ce.Model || be.Checkpoint != ce.Checkpoint {
		refused = append(refused, fmt.Sprintf("model differs: baseline %s, current %s; compare a model with itself", model(be), model(ce)))
	}
	if bi, ci := imageRepository(be.ImageTag), imageRepository(ce.ImageTag); bi != ci && bi != "" && ci != "" {
		refused = append(refused, fmt.Sprintf("engine image differs: baseline %s, current %s; a new tag of the same image is compared, another engine is not", bi, ci))
	}
	if bp.WarmupsPerTrial != cp.WarmupsPerTrial {
		flagged = append(flagged, fmt.Sprintf("warmups per trial: baseline %d, current %d", bp.WarmupsPerTrial, cp.WarmupsPerTrial))
	}
	if bp.IndependentTrialsPerBoundarySide != cp.IndependentTrialsPerBoundarySide {
		flagged = append(flagged, fmt.Sprintf("confirmation trials per boundary side: baseline %d, current %d", bp.IndependentTrialsPerBoundarySide, cp.IndependentTrialsPerBoundarySide))
	}
	if bp.CachePolicy != cp.CachePolicy {
		flagged = append(flagged, fmt.Sprintf("cache policy: baseline %q, current %q", bp.CachePolicy, cp.CachePolicy))
	}
	for _, f := range []struct {
		name string
		b, c any
	}{
		{"hardware", be.Hardware, ce.Hardware},
		{"tensor parallelism", be.TensorParallelism, ce.TensorParallelism},
		{"replicas", max(be.Replicas, 1), max(ce.Replicas, 1)},
		{"context length", be.ContextLength, ce.ContextLength},
		{"speculative decoding", spec(be.SpeculativeMode), spec(ce.SpeculativeMode)},
	} {
		if f.b != f.c {
			flagged = append(flagged, fmt.Sprintf("%s: baseline %v, current %v", f.name, f.b, f.c))
		}
	}
	return refused, flagged
}

// shapeDifferences are the differences of one workload's lengths between two documents.
func shapeDifferences(b, c results.Workload) []string {
	var out []string
	for _, f := range []struct {
		name string
		b, c float64
	}{
		{"input tokens", float64(b.ConfiguredISL), float64(c.ConfiguredISL)},
		{"output tokens", float64(b.ConfiguredOSL), float64(c.ConfiguredOSL)},
		{"input tokens stddev", b.InputTokensStddev, c.InputTokensStddev},
		{"output tokens stddev", b.OutputTokensStddev, c.OutputTokensStddev},
		{"shared prefix tokens", float64(b.SharedPrefixTokens), float64(c.SharedPrefixTokens)},
	} {
		if f.b != f.c {
			out = append(out, fmt.Sprintf("%s: baseline %g, current %g", f.name, f.b, f.c))
		}
	}
	return out
}

func keys(slos []results.SLO) string {
	ks := make([]string, len(slos))
	for i, s := range slos {
		ks[i] = s.Key()
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

func model(e results.Experiment) string {
	if e.Checkpoint != "" {
		return fmt.Sprintf("%q (%s)", e.Model, e.Checkpoint)
	}
	return fmt.Sprintf("%q", e.Model)
}

// imageRepository is an image reference without its tag or digest: the engine, not its
// release.
func imageRepository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func spec(s *results.SpeculativeMode) string {
	if s == nil {
		return "off"
	}
	return fmt.Sprintf("%s steps=%d topk=%d draft_tokens=%d", s.Algorithm, s.Steps, s.TopK, s.DraftTokens)
}
