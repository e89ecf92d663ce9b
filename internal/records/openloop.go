package records

import (
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// recomputeOpenLoop recomputes an open-loop trial's schedule fidelity and keep-up guards from
// its records (due, dispatched, cap wait and done times), as the benchmark computed them. A
// probe stopped early judged no guard; its verdict fields come from the document.
func recomputeOpenLoop(reported results.OpenLoopTrial, recs []load.RequestResult) *results.OpenLoopTrial {
	keep := metrics.DefaultOpenLoopRule().KeptUp(recs)
	fid := load.OpenResult{TrialResult: load.TrialResult{Requests: recs}}.Fidelity()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := &results.OpenLoopTrial{
		Arrival: reported.Arrival, OfferedRate: keep.OfferedRate, AchievedRate: fid.OfferedRate,
		CompletionRate: keep.CompletionRate, BacklogGrowth: keep.BacklogGrowth, BacklogAllowance: keep.BacklogAllowance,
		InFlightMean: keep.InFlightMean, SendLatenessP50Ms: ms(fid.LatenessP50), SendLatenessP99Ms: ms(fid.LatenessP99),
		SendLatenessMaxMs: ms(fid.LatenessMax), CapBound: fid.CapBound, KeptUp: keep.Pass(), Missed: keep.Missed,
	}
	if !reported.KeptUp && len(reported.Missed) == 0 { // a probe cut short
		out.KeptUp, out.Missed = false, nil
	}
	return out
}
