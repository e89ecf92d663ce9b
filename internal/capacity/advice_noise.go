package capacity

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The warnings that say noise where it happened: a capacity curve that goes up and down,
// confirmation trials at one level that disagree beyond their size, and trials during which
// the load generator's own machine got busy.

// Host load that makes a trial suspect: a hypervisor taking at least hostStealPercent of the
// CPUs' time, or the 1-minute load average rising during the trial by more than the
// machine's CPUs (a whole machine's worth of runnable work that was not there as it began).
const hostStealPercent = 5.0

// maxNoiseLines bounds the lines one warning lists.
const maxNoiseLines = 10

// boundaryPath is the workload's maximum passing attribute along its axis, where a warning
// about its result belongs.
func boundaryPath(w results.Workload) attrpath.Path {
	name := "maximum_passing_concurrency"
	switch w.Axis().Name() {
	case "speed-up":
		name = "maximum_passing_speedup"
	case "request rate":
		name = "maximum_passing_request_rate"
	}
	return attrpath.Root(name).Key(w.Label)
}

// noiseWarnings are the warnings of doc's noise, per workload: a non-monotone curve (on
// every axis), disagreeing confirmation trials, and trials on a busy host.
func noiseWarnings(objectives []results.SLO, doc *results.Document) []problem.Problem {
	var out []problem.Problem
	for _, w := range doc.Workloads {
		if nm := results.NonMonotone(objectives, w); len(nm) > 0 {
			out = append(out, problem.Problem{Path: boundaryPath(w), Warning: true,
				Summary: fmt.Sprintf("Capacity of workload %q goes up and down", w.Label),
				Detail: fmt.Sprintf("Workload %q: %s. A higher level passed where a lower one failed, so the trials disagree more than the boundary can tell: "+
					"noise (another job on the host, a throttled CPU, too few measured requests) or a server that really behaves so. "+
					"The boundary reported is the lowest failing level; raise trial.confirmation_trials or trial.measured_requests, or measure on a quieter host, to trust it.",
					w.Label, listed(nm))})
		}
		if ds := w.TrialDisagreements; len(ds) > 0 {
			lines := make([]string, len(ds))
			for i, d := range ds {
				unit := ""
				for _, s := range objectives {
					if s.Key() == d.Objective {
						unit = " " + s.Unit()
					}
				}
				v := func(x float64) string { return trimFloat(math.Round(x*10)/10) + unit }
				lines[i] = fmt.Sprintf("at %s, %s was %s in trial %d but %s in trial %d (+%.0f %%: beyond what their %d requests explain, the first below %s and the second above %s, and more than the %.0f %% that matters)",
					d.LevelTextOn(w.Axis()), d.Objective, v(d.Low), d.LowTrial, v(d.High), d.HighTrial, d.SpreadPercent(), d.Requests, v(d.LowUpper), v(d.HighLower), results.DefaultDisagreementRule.Band*100)
			}
			out = append(out, problem.Problem{Path: boundaryPath(w), Warning: true,
				Summary: fmt.Sprintf("Confirmation trials of workload %q disagree beyond their size", w.Label),
				Detail: fmt.Sprintf("Workload %q: %s. Trials of one server at one level differ this much only when something else changed between them "+
					"(another job on the host or the server's machine, CPU throttling, a cache); results_json records each under trial_disagreements. "+
					"The rule: the two trials' values differ beyond their own sampling noise (a two-sided test at %.0f %%, from each trial's requests and spread) "+
					"and by at least %.0f %%, the comparison's band. Measure again on a quieter host before gating on this result.",
					w.Label, listed(lines), results.DefaultDisagreementRule.Alpha*100, results.DefaultDisagreementRule.Band*100)})
		}
		var busy []string
		for _, st := range w.Trials() {
			if line := hostBusy(st.Trial.Host); line != "" {
				at := "?"
				if v, ok := w.Axis().Level(st); ok {
					at = w.Axis().Text(v)
				}
				busy = append(busy, fmt.Sprintf("%s trial %d at %s %s: %s", st.Side, st.Trial.Trial, w.Axis().Name(), at, line))
			}
		}
		if len(busy) > 0 {
			out = append(out, problem.Problem{Path: boundaryPath(w), Warning: true,
				Summary: fmt.Sprintf("The load generator's machine was busy during trials of workload %q", w.Label),
				Detail: fmt.Sprintf("Workload %q: %s. Work beside the benchmark competes with the load generator (and with the server, when it runs there), "+
					"so these trials' latencies may be too high; each trial's host block in results_json has the figures. A server on the same machine counts too. "+
					"Measure on a quieter host, or run the load next to the server.", w.Label, listed(busy))})
		}
	}
	return out
}

// hostBusy says how the machine was busy during a trial, "" when it was not.
func hostBusy(h *results.HostLoad) string {
	if h == nil {
		return ""
	}
	var why []string
	if h.StealPercent >= hostStealPercent {
		why = append(why, fmt.Sprintf("the hypervisor took %.1f %% of the CPUs' time (steal)", h.StealPercent))
	}
	if h.CPUs > 0 && h.LoadAvg1mEnd-h.LoadAvg1mStart > float64(h.CPUs) {
		why = append(why, fmt.Sprintf("the 1-minute load average rose from %.2f to %.2f on %d CPUs", h.LoadAvg1mStart, h.LoadAvg1mEnd, h.CPUs))
	}
	return strings.Join(why, ", and ")
}

// listed joins lines, a screenful at most.
func listed(lines []string) string {
	if len(lines) > maxNoiseLines {
		lines = append(lines[:maxNoiseLines:maxNoiseLines], fmt.Sprintf("and %d more", len(lines)-maxNoiseLines))
	}
	return strings.Join(lines, "; ")
}
