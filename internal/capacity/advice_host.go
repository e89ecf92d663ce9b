package capacity

import (
	"fmt"
	"math"

	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// loadedBeside says, for the trials that decided a workload's result (those that failed and
// those whose confirmation trials disagreed), which ran on a host more loaded than the
// workload's quietest trial: a 1-minute load average at least one per CPU above it. That is
// a whole machine's worth of other runnable work the quietest trial did not have; hostBusy
// already names a load that rose within one trial, so such trials are not repeated here.
func loadedBeside(w results.Workload) []string {
	trials := w.Trials()
	if len(w.AllTrials) > 0 {
		trials = trials[:0]
		for _, t := range w.AllTrials {
			trials = append(trials, results.SideTrial{Concurrency: t.Concurrency, Trial: t})
		}
	}
	quiet := math.Inf(1)
	var quietCPUs int
	for _, st := range trials {
		if h := st.Trial.Host; h != nil && h.CPUs > 0 {
			if l := max(h.LoadAvg1mStart, h.LoadAvg1mEnd); l < quiet {
				quiet, quietCPUs = l, h.CPUs
			}
		}
	}
	if math.IsInf(quiet, 1) {
		return nil
	}
	ax := w.Axis()
	disagreeing := map[string]bool{}
	for _, d := range w.TrialDisagreements {
		for _, n := range []int{d.LowTrial, d.HighTrial} {
			disagreeing[fmt.Sprintf("%s#%d", d.LevelTextOn(ax), n)] = true
		}
	}
	var out []string
	for _, st := range trials {
		h := st.Trial.Host
		if h == nil || h.CPUs != quietCPUs || hostBusy(h) != "" {
			continue
		}
		at := "?"
		if v, ok := ax.Level(st); ok {
			at = ax.Text(v)
		}
		why := ""
		switch {
		case st.Trial.Verdict == "fail" || st.Trial.Verdict == "error":
			why = "failed"
		case disagreeing[fmt.Sprintf("%s#%d", levelTextOf(ax, st), st.Trial.Trial)]:
			why = "disagreed with another trial at its level"
		default:
			continue
		}
		if l := max(h.LoadAvg1mStart, h.LoadAvg1mEnd); l-quiet >= float64(h.CPUs) {
			out = append(out, fmt.Sprintf("%s trial %d at %s %s %s with a 1-minute load average of %.2f to %.2f on %d CPUs (%.0f %% busy), where the quietest trial saw %.2f",
				st.Trial.Kind, st.Trial.Trial, ax.Name(), at, why, h.LoadAvg1mStart, h.LoadAvg1mEnd, h.CPUs, h.BusyPercent, quiet))
		}
	}
	return out
}

// levelTextOf names a trial's level the way TrialDisagreement.LevelTextOn names its own.
func levelTextOf(ax results.Axis, st results.SideTrial) string {
	d := results.TrialDisagreement{Concurrency: st.Concurrency, RequestRate: st.Trial.RequestRate, Speedup: st.Trial.Speedup}
	if ax.Name() == "users" {
		d.Concurrency = st.Trial.Users
	}
	if d.Speedup > 0 {
		d.RequestRate = 0
	}
	return d.LevelTextOn(ax)
}

// hostLoadWarnings are the warnings of loadedBeside, per workload.
func hostLoadWarnings(doc *results.Document) []problem.Problem {
	var out []problem.Problem
	for _, w := range doc.Workloads {
		if lines := loadedBeside(w); len(lines) > 0 {
			out = append(out, problem.Problem{Path: boundaryPath(w), Warning: true,
				Summary: fmt.Sprintf("Trials that decided workload %q ran on a more loaded host", w.Label),
				Detail: fmt.Sprintf("Workload %q: %s. Other work on the load generator's machine competes with the load (and with the server, when it runs there), "+
					"so the result may be the host's rather than the server's; each trial's host block in results_json has the figures. "+
					"Measure again on a quieter host, or run the load next to the server (runner).", w.Label, listed(lines))})
		}
	}
	return out
}
