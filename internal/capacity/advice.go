package capacity

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// RunWarnings are the warnings a configuration earns once every value is known (at apply,
// when the experiment's replica count is read from the deployment): a cache flush by
// endpoint that reaches only one replica of several, because replica_endpoints is not set,
// or lists fewer replicas than the experiment says were deployed.
func (c Config) RunWarnings() []problem.Problem {
	exp := c.Experiment
	if exp == nil || exp.Replicas <= 1 || c.CacheFlush == engine.FlushNone || c.CacheFlush == engine.FlushLlamaCpp {
		return nil
	}
	if c.ReplicaEndpoints == nil {
		return []problem.Problem{{Path: attrpath.Root("trial").At("cache_flush"), Warning: true,
			Summary: "Cache flush reaches one replica",
			Detail: fmt.Sprintf("The endpoint serves %d replicas behind one Service. A flush by endpoint (SGLang /flush_cache, vLLM /reset_prefix_cache) "+
				"reaches only the replica the Service picks, so the others may keep warm prefix caches between trials. "+
				"Set replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints: the benchmark then waits for idle and flushes every replica before each trial, "+
				"and reads each one's prefix-cache counters. llama.cpp is unaffected (cache_prompt: false on every request).", exp.Replicas)}}
	}
	if n := len(c.ReplicaEndpoints); n < exp.Replicas {
		return []problem.Problem{{Path: attrpath.Root("replica_endpoints"), Warning: true, Reads: []attrpath.Path{attrpath.Root("experiment")},
			Summary: "Not every replica is listed",
			Detail: fmt.Sprintf("replica_endpoints lists %d endpoints, but the experiment says %d replicas serve the endpoint: the unlisted ones are not flushed and may keep warm prefix caches. "+
				"Feed it from the deployment (replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints, which lists every ready pod) and apply once all replicas are ready.", n, exp.Replicas)}}
	}
	return nil
}

// ResultWarnings are what a finished run's document asks the user to look at: a workload
// whose load generator was the bottleneck (no capacity of the server reported from there
// up: the fix for where the load ran), a workload whose numbers are the edge of the search
// rather than its capacity (at its capacity_bounded_by_search key), and trials served from a
// cache that should have been cold (the whole run: no single setting is to blame).
func (c Config) ResultWarnings(doc *results.Document) []problem.Problem {
	var out []problem.Problem
	if doc == nil {
		return nil
	}
	out = append(out, clientBoundWarnings(doc)...)
	for _, w := range doc.Workloads {
		if w.SearchBound() == results.BoundNone {
			if w.MaximumPassingConcurrency == nil && w.FirstFailingConcurrency != nil {
				out = append(out, problem.Problem{Path: attrpath.Root("maximum_passing_concurrency").Key(w.Label), Warning: true,
					Summary: fmt.Sprintf("Workload %q has no capacity: even %d concurrent request failed the SLO", w.Label, *w.FirstFailingConcurrency),
					Detail: fmt.Sprintf("Workload %q: at concurrency %d, %s. maximum_passing_concurrency[%q] is null (capacity 0). "+
						"The server cannot meet the objective for a single user with this workload: relax the objective, shorten the workload, or change the deployment.",
						w.Label, *w.FirstFailingConcurrency, missedText(doc.SLOs, w.FailingTrials), w.Label)})
			}
			continue
		}
		if len(c.ConcurrencyLevels) == 1 && w.SearchBound() == results.BoundCeiling && w.MaximumPassingConcurrency != nil {
			// A grid of one level asks whether that level holds, not for a boundary: it held.
			continue
		}
		names := "maximum_passing_concurrency and first_failing_concurrency"
		switch {
		case w.MaximumPassingUsers != nil || w.FirstFailingUsers != nil:
			names = "maximum_passing_users and first_failing_users"
		case w.MaximumPassingSpeedup != nil || w.FirstFailingSpeedup != nil:
			names = "maximum_passing_speedup and first_failing_speedup"
		case w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil:
			names = "maximum_passing_request_rate and first_failing_request_rate"
		}
		out = append(out, problem.Problem{Path: attrpath.Root("capacity_bounded_by_search").Key(w.Label), Warning: true,
			Summary: fmt.Sprintf("Capacity of workload %q is bounded by the search", w.Label),
			Detail: fmt.Sprintf("Workload %q: %s. %s are the edge of the search, not the capacity; capacity_bounded_by_search[%q] is true.",
				w.Label, BoundNote(w, len(c.ConcurrencyLevels) > 0), names, w.Label)})
	}
	out = append(out, c.shortRateTrials(doc)...)
	out = append(out, c.unjudgedRateTrials(doc)...)
	out = append(out, noiseWarnings(doc.Objectives(), doc)...)
	out = append(out, hostLoadWarnings(doc)...)
	if warm := WarmCacheTrials(doc); len(warm) > 0 {
		out = append(out, problem.Problem{Warning: true,
			Summary: "Prompts were served from a cache that should have been cold",
			Detail: fmt.Sprintf("With cache_flush = %q, the server reported cached prompt tokens beyond the prefix all prompts share in %s. "+
				"The flush did not take effect, so those trials' latencies are too low and the capacity may be too high; "+
				"each trial's note in results_json says more. Check that the server honours the flush (vLLM: VLLM_SERVER_DEV_MODE=1; SGLang: admin_api_key) and apply again.",
				c.CacheFlush, strings.Join(warm, "; "))})
	}
	if lines := telemetryWarnings(doc); len(lines) > 0 {
		out = append(out, problem.Problem{Path: attrpath.Root("telemetry_endpoints"), Warning: true,
			Summary: "Accelerator telemetry was incomplete",
			Detail: "The trials kept every figure measured; what could not be measured is null in their accelerators block, never 0:\n- " +
				strings.Join(lines, "\n- ")})
	}
	return out
}

// telemetryWarnings are the reported trials' accelerator telemetry warnings, one line each,
// a screenful at most.
func telemetryWarnings(doc *results.Document) []string {
	const shown = 10
	var out []string
	n := 0
	for _, w := range doc.Workloads {
		for _, st := range w.Trials() {
			if a := st.Trial.Accelerators; a != nil {
				for _, m := range a.Warnings {
					if n < shown {
						out = append(out, fmt.Sprintf("workload %q, %s trial %d at concurrency %d: %s", w.Label, st.Side, st.Trial.Trial, st.Concurrency, m))
					}
					n++
				}
			}
		}
	}
	if n > shown {
		out = append(out, fmt.Sprintf("... and %d more", n-shown))
	}
	return out
}

// missedText says what failed at a level and by how much: "p95 TTFT was 1234.5 ms against
// a limit of < 300 ms (4.1× the limit) in 2 of 3 trials", or the failed requests.
func missedText(slos []results.SLO, failing []results.Trial) string {
	var parts []string
	for _, o := range slos {
		worst, missed, n := 0.0, 0, 0
		for _, t := range failing {
			for _, r := range t.SLOs {
				if r.Metric != o.Metric || r.Percentile != o.Percentile {
					continue
				}
				n++
				if !r.Met {
					missed++
					if missed == 1 || o.Closeness(r.Value) > o.Closeness(worst) {
						worst = r.Value
					}
				}
			}
		}
		if missed == 0 {
			continue
		}
		m := o.Info()
		by := fmt.Sprintf("%.1f× the limit", o.Closeness(worst))
		if m.HigherIsBetter && o.ThresholdMs > 0 {
			by = fmt.Sprintf("%.0f%% of the limit", 100*worst/o.ThresholdMs)
		}
		parts = append(parts, fmt.Sprintf("%s was %s %s against a limit of %s %s %s (%s) in %d of %d trials",
			objectiveName(o), trimFloat(math.Round(worst*10)/10), m.Unit, comparisonSymbol(o.Comparison), trimFloat(o.ThresholdMs), m.Unit,
			by, missed, n))
	}
	errs := 0
	for _, t := range failing {
		errs += t.Correctness.Errors
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("%d measured requests failed (see the trials' error_summary)", errs))
	}
	if len(parts) == 0 {
		return "the trials failed"
	}
	return strings.Join(parts, "; ")
}

// objectiveName reads "p95 TTFT" or "Goodput".
func objectiveName(o results.SLO) string {
	m := o.Info()
	name := cmp.Or(m.Short, o.Metric)
	if !m.PerTrial && o.Percentile != 0 {
		name = "p" + trimFloat(o.Percentile) + " " + name
	}
	return name
}

// BoundNote says, in the words of the configuration, when a workload's numbers are the edge
// of the search rather than its capacity, and what to change; "" when the boundary was found.
// A reader would otherwise take max_concurrency for the capacity. grid says the levels came
// from search.concurrency_levels, whose fix is another level rather than another bound.
func BoundNote(w results.Workload, grid bool) string {
	if w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil {
		return rateBoundNote(w)
	}
	raise, lower := "raise search.max_concurrency", "lower search.min_concurrency"
	if grid {
		raise, lower = "add a higher level to search.concurrency_levels", "add a lower level to search.concurrency_levels"
	}
	if w.MaximumPassingUsers != nil || w.FirstFailingUsers != nil {
		switch w.SearchBound() {
		case results.BoundCeiling:
			return fmt.Sprintf("every number of users tried passed, up to %d: capacity is at least %d users; %s to find the boundary", *w.MaximumPassingUsers, *w.MaximumPassingUsers, raise)
		case results.BoundFloor:
			return fmt.Sprintf("even the fewest users tried, %d, failed: capacity is below %d users; %s to find the boundary", *w.FirstFailingUsers, *w.FirstFailingUsers, lower)
		}
		if w.MaximumPassingUsers == nil {
			return "even 1 user missed the SLO: capacity is 0 users"
		}
		return ""
	}
	switch w.SearchBound() {
	case results.BoundCeiling:
		c := *w.MaximumPassingConcurrency
		return fmt.Sprintf("every concurrency tried passed, up to %d: capacity is at least %d; %s to find the boundary", c, c, raise)
	case results.BoundFloor:
		c := *w.FirstFailingConcurrency
		return fmt.Sprintf("even the lowest concurrency tried, %d, failed: capacity is below %d; %s to find the boundary", c, c, lower)
	}
	if w.MaximumPassingConcurrency == nil && w.FirstFailingConcurrency != nil {
		return "even 1 concurrent request missed the SLO: capacity is 0"
	}
	return ""
}
