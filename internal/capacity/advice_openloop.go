package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// shortTrialFactor is how many median request latencies the sends of an open-loop trial must
// span for its completion guard to mean something. The guard compares the completion rate,
// (k − 1) over the span from the first to the last response, with the offered rate over the
// span of the sends; the two spans differ by the last request's latency minus the first's,
// so a trial spanning 10 latencies has an error of up to about a tenth: already twice the
// guard's ε of 5 %.
const shortTrialFactor = 10

// shortRateTrials warns, per workload searched by rate (or replayed by speedup), when the
// confirmation trials at its boundary were too short for the completion guard: their
// measured requests sent over less than shortTrialFactor × their median request latency.
// It names what to raise: trial.measured_requests, or a replay's trace.
func (c Config) shortRateTrials(doc *results.Document) []problem.Problem {
	var out []problem.Problem
	for i, w := range doc.Workloads {
		var worst *results.Trial
		worstRatio := math.Inf(1)
		for _, side := range [][]results.Trial{w.PassingTrials, w.FailingTrials} {
			for j := range side {
				t := &side[j]
				if t.RequestRate <= 0 || t.OpenLoop == nil || t.StoppedEarly || t.RequestLatencyMs.P50 <= 0 || t.OpenLoop.OfferedRate <= 0 {
					continue
				}
				span := float64(t.Correctness.ProfilingRecords) / t.OpenLoop.OfferedRate // seconds of sends
				if r := span / (t.RequestLatencyMs.P50 / 1000); r < shortTrialFactor && r < worstRatio {
					worst, worstRatio = t, r
				}
			}
		}
		if worst == nil {
			continue
		}
		p50 := worst.RequestLatencyMs.P50 / 1000
		need := int(math.Ceil(shortTrialFactor * p50 * worst.OpenLoop.OfferedRate))
		at, fix, path := fmt.Sprintf("%.4g requests/s", worst.RequestRate), fmt.Sprintf("raise trial.measured_requests to at least %d", need), attrpath.Root("trial").At("measured_requests")
		if worst.Speedup > 0 {
			at = fmt.Sprintf("speedup %.4g (%.4g requests/s)", worst.Speedup, worst.RequestRate)
			fix = fmt.Sprintf("replay a longer trace: at least %d measured requests after the warmups at this speedup", need)
			path = attrpath.Root("workloads").Index(i).At("trace").At("file")
			if i >= len(c.Workloads) || c.Workloads[i].Label != w.Label {
				path = attrpath.Root("workloads")
			}
		}
		out = append(out, problem.Problem{Path: path, Warning: true,
			Summary: fmt.Sprintf("Open-loop trials of workload %q too short to judge keeping up", w.Label),
			Detail: fmt.Sprintf("Workload %q: the confirmation trial at %s sent its %d measured requests over %.3g s, only %.2g × their median request latency (%.3g s). "+
				"The completion guard compares the response rate with the send rate, whose spans differ by a request's latency, so below %d latencies its error "+
				"approaches the 5 %% it allows and the boundary is uncertain; %s.",
				w.Label, at, worst.Correctness.ProfilingRecords, float64(worst.Correctness.ProfilingRecords)/worst.OpenLoop.OfferedRate, worstRatio, p50, shortTrialFactor, fix)})
	}
	return out
}

// unjudgedRateTrials warns, per workload, about the open-loop trials the backlog guard did not
// judge (too few in-flight samples: backlogUnjudgedNote): whether the server kept up there
// rests on the completion rate alone, which the trial's notes say and the apply must too.
func (c Config) unjudgedRateTrials(doc *results.Document) []problem.Problem {
	var out []problem.Problem
	for i, w := range doc.Workloads {
		var at []string
		replay := false
		trials := w.AllTrials
		if len(trials) == 0 {
			trials = append(slices.Clone(w.PassingTrials), w.FailingTrials...)
		}
		for _, t := range trials {
			if t.OpenLoop == nil || !slices.ContainsFunc(t.Notes, func(n string) bool { return strings.HasPrefix(n, backlogUnjudged) }) {
				continue
			}
			level := fmt.Sprintf("%s trial %d at %.4g requests/s", cmp.Or(t.Kind, "confirmation"), t.Trial, t.RequestRate)
			if t.Speedup > 0 {
				level, replay = fmt.Sprintf("%s trial %d at speedup %.4g", cmp.Or(t.Kind, "confirmation"), t.Trial, t.Speedup), true
			}
			at = append(at, level)
		}
		if len(at) == 0 {
			continue
		}
		fix, path := "raise trial.measured_requests", attrpath.Root("trial").At("measured_requests")
		if replay {
			fix, path = "replay a longer trace", attrpath.Root("workloads").Index(i).At("trace").At("file")
			if i >= len(c.Workloads) || c.Workloads[i].Label != w.Label {
				path = attrpath.Root("workloads")
			}
		}
		out = append(out, problem.Problem{Path: path, Warning: true,
			Summary: fmt.Sprintf("The backlog guard could not judge %d %s of workload %q", len(at), plural(len(at), "trial", "trials"), w.Label),
			Detail: fmt.Sprintf("Workload %q: %s had fewer than %d in-flight samples after the first response, so the backlog guard did not judge %s and "+
				"whether the server kept up rests on the completion rate alone (each trial's notes in results_json say so). A server falling behind "+
				"by a growing queue can pass that way; %s for both guards to judge.",
				w.Label, strings.Join(at, ", "), metrics.MinBacklogSamples, plural(len(at), "it", "them"), fix)})
	}
	return out
}
