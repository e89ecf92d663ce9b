package capacity

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry"
)

// Validate reports every problem with the configuration, each naming the setting to fix and
// how. It is the one rule: the Terraform glue applies it at plan to the values known then,
// and again at apply, before anything is sent, when they are all known.
func (c Config) Validate() []problem.Problem {
	var v validation
	if _, err := endpoint.Parse(c.Endpoint); err != nil {
		v.fail(attrpath.Root("endpoint"), "Invalid endpoint URL", "%v", err)
	}
	v.replicaEndpoints(c.ReplicaEndpoints)
	if c.Model == "" {
		v.fail(attrpath.Root("model"), "Empty model name", "must not be empty; give the model name the server lists under /v1/models")
	}
	if c.API != APIChat && c.API != APICompletions {
		v.fail(attrpath.Root("api"), "Unknown API", "must be %q or %q, got %q", APIChat, APICompletions, c.API)
	}
	v.workloads(c.Workloads)
	for i, w := range c.Workloads {
		if w.TraceFile != "" {
			v.traceWorkload(c, i, w)
		}
	}
	v.slos(c.SLOs)
	v.measurable(c.SLOs, c.Workloads)
	v.search(c)
	v.conversations(c)
	v.openLoop(c)
	trial := attrpath.Root("trial")
	v.between(trial.At("warmup_requests"), c.WarmupRequests, 0, MaxRequests)
	v.between(trial.At("measured_requests"), c.MeasuredRequests, 1, MaxRequests)
	v.pods(c)
	v.between(trial.At("engine_warmup_requests"), c.EngineWarmupRequests, 0, MaxRequests)
	if c.EngineWarmupRequests > 0 {
		for i, w := range c.Workloads {
			if w.TraceFile != "" {
				v.fail(trial.At("engine_warmup_requests"), "Engine warm-up with a trace", "must be 0 when a workload replays a trace: the warm-up sends a workload's "+
					"synthetic prompts, and workloads[%d] has none (a replay's own warmups, trial.warmup_requests, are the trace's first requests)", i)
				break
			}
		}
	}
	v.between(trial.At("confirmation_trials"), c.ConfirmationTrials, 1, MaxConfirmationTrials)
	v.between(trial.At("comparison_budget"), c.ComparisonBudget, 0, MaxComparisonBudget)
	if c.Baseline != nil && c.OpenLoop != nil {
		v.add(problem.Problem{Path: attrpath.Root("baseline"), Summary: "Baseline with an open-loop search", Reads: []attrpath.Path{attrpath.Root("arrival")},
			Detail: "baseline: a benchmark measures against its baseline on closed-loop levels (concurrency, or users of conversation workloads), which it can add one at a time; " +
				"an open-loop search (arrival, search.rate or search.speedup) walks a ladder of rates that a comparison's levels need not lie on. Remove baseline here and compare the " +
				"finished results with provider::llmserve::compare(baseline, results_json), or the llmserve_capacity_report data source's baseline, which read any axis."})
	}
	if !slices.Contains(engine.FlushModes, c.CacheFlush) {
		v.fail(trial.At("cache_flush"), "Unknown cache flush", "must be one of %s, got %q", strings.Join(engine.FlushModes, ", "), c.CacheFlush)
	}
	for _, d := range []struct {
		name string
		got  fmt.Stringer
		ok   bool
	}{{"stall_timeout", c.StallTimeout, c.StallTimeout > 0}, {"request_timeout", c.RequestTimeout, c.RequestTimeout > 0}} {
		if !d.ok {
			v.fail(trial.At(d.name), "Invalid duration", "must be a positive Go duration such as \"90s\" or \"30m\", got %q", d.got)
		}
	}
	v.telemetry(c.TelemetryEndpoints)
	if c.RecordChunkTimes && c.RecordsDirectory == "" {
		v.add(problem.Problem{Path: attrpath.Root("record_chunk_times"), Summary: "Chunk times without records", Reads: []attrpath.Path{attrpath.Root("records_directory")},
			Detail: "record_chunk_times adds chunk arrival times to the per-request records, which are only written with records_directory; set records_directory or remove record_chunk_times."})
	}
	return v.problems
}

// Check loads the configuration's traces and applies Validate to it: the call of a caller
// that runs the configuration next (the provider at apply). A configuration in which Check
// found no error is run as it is; Run and Resume check one that was not (a caller alone,
// the runner's own process), so each path reads the traces and validates once.
func (c *Config) Check() []problem.Problem {
	c.LoadTraces()
	problems := c.Validate()
	c.checked, c.axis = Err(problems) == nil, nil
	if c.checked {
		c.axis = pickAxis(*c)
	}
	return problems
}

// check is Check for a run, which gives zero timeouts the load package's defaults first:
// nothing for a configuration checked already, else its errors.
func (c *Config) check() error {
	c.StallTimeout = cmp.Or(c.StallTimeout, load.DefaultStallTimeout)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, load.DefaultRequestTimeout)
	if c.checked {
		return nil
	}
	return Err(c.Check())
}

// Err is the problems that are errors as one error, each naming its setting; nil when there
// are none (warnings alone do not stop a run).
func Err(problems []problem.Problem) error {
	var errs []error
	for _, p := range problems {
		if !p.Warning {
			errs = append(errs, errors.New(p.Detail))
		}
	}
	return errors.Join(errs...)
}

func (v *validation) workloads(ws []Workload) {
	at := attrpath.Root("workloads")
	if len(ws) == 0 {
		v.fail(at, "No workloads", "must list at least one workload, the input/output shape to find the capacity for")
	}
	seen := map[string]int{}
	for i, w := range ws {
		p := at.Index(i)
		label := p.At("label")
		if w.Label == "" {
			v.fail(label, "Empty workload label", "must not be empty: labels key the result maps; name the shape, e.g. \"8K / 1K\"")
		} else if r, pos, ok := controlChar(w.Label); ok {
			v.fail(label, "Control character in value", "contains the control character %U at byte %d, which would reach terminals, CSV and Markdown renderings; use printable text", r, pos)
		}
		if first, dup := seen[w.Label]; dup && w.Label != "" {
			v.add(problem.Problem{Path: label, Summary: "Duplicate workload label", Reads: []attrpath.Path{at.Index(first).At("label")},
				Detail: fmt.Sprintf("%s: the label %q is already used by workloads[%d]. Labels key maximum_passing_concurrency and first_failing_concurrency, so each must be unique; rename one.", label, w.Label, first)})
		} else if !dup {
			seen[w.Label] = i
		}
		if w.TraceFile != "" {
			continue // traceWorkload
		}
		length := func(name string, n int) bool {
			if n == 0 {
				v.fail(p.At(name), "Value too small", "must be at least 1, got 0. It is required for a workload without trace: give the length in tokens, or replay recorded traffic with trace = { file = \"…\" }")
				return false
			}
			return v.between(p.At(name), n, 1, MaxTokens)
		}
		inOK := length("input_tokens", w.InputTokens)
		outOK := length("output_tokens", w.OutputTokens)
		for _, sd := range []struct {
			name string
			v    float64
			mean string
			n    int
			ok   bool
		}{{"input_tokens_stddev", w.InputTokensStddev, "input_tokens", w.InputTokens, inOK}, {"output_tokens_stddev", w.OutputTokensStddev, "output_tokens", w.OutputTokens, outOK}} {
			switch {
			case math.IsNaN(sd.v) || sd.v < 0:
				v.fail(p.At(sd.name), "Value too small", "must be at least 0, got %g", sd.v)
			case sd.ok && sd.v > float64(sd.n):
				v.add(problem.Problem{Path: p.At(sd.name), Summary: "Length spread wider than the length", Reads: []attrpath.Path{p.At(sd.mean)},
					Detail: fmt.Sprintf("%s (%g) is above the mean length (%d): most draws would be clipped at 1 token; give at most the mean.", p.At(sd.name), sd.v, sd.n)})
			}
		}
		pre := p.At("shared_prefix_tokens")
		switch {
		case w.SharedPrefixTokens < 0:
			v.fail(pre, "Value too small", "must be at least 0, got %d", w.SharedPrefixTokens)
		case inOK && w.SharedPrefixTokens >= w.InputTokens:
			v.add(problem.Problem{Path: pre, Summary: "Shared prefix as long as the prompt", Reads: []attrpath.Path{p.At("input_tokens")},
				Detail: fmt.Sprintf("%s (%d) counts within input_tokens (%d) and must be below it, leaving each prompt a part of its own; lower shared_prefix_tokens or raise input_tokens.", pre, w.SharedPrefixTokens, w.InputTokens)})
		}
	}
}

// slos checks each objective as a whole (the percentile its metric needs, a comparison in
// its direction, goodput in percent), repeats, and values that are valid but almost
// certainly a slip of units: a percentile written as a fraction, a latency in seconds.
// Both would otherwise measure for hours against an objective nobody meant.
func (v *validation) slos(slos []results.SLO) {
	at := attrpath.Root("slos")
	if len(slos) == 0 {
		v.fail(at, "No objectives", "must list at least one objective, e.g. { percentile = 95, threshold_ms = 10000 } for p95 TTFT under 10 s")
	}
	stated := make([]results.SLO, len(slos))
	for i, s := range slos {
		stated[i] = s.WithDefaults() // an empty metric or comparison is the default
	}
	repeats := results.Repeats(stated)
	for i, s := range stated {
		p := at.Index(i)
		for _, f := range s.Problems() {
			v.add(problem.Problem{Path: p.At(f.Field), Summary: "Invalid objective", Detail: fmt.Sprintf("%s %s.", p.At(f.Field), f.Detail),
				Reads: []attrpath.Path{p.At("metric")}}) // every rule of an objective reads its metric
		}
		if j := repeats[i]; j >= 0 {
			v.add(problem.Problem{Path: p, Summary: "Repeated objective", Reads: []attrpath.Path{at.Index(j)},
				Detail: fmt.Sprintf("%s repeats %s of slos[%d]; keep the stricter one.", p, s.Key(), j)})
		}
		if pct := s.Percentile; pct > 0 && pct < 1 && !s.Info().PerTrial {
			v.add(problem.Problem{Path: p.At("percentile"), Summary: "Percentile below 1", Reads: []attrpath.Path{p.At("metric")},
				Detail: fmt.Sprintf("%s = %g asks for p%g, the most extreme request of each trial rather than a share of users: percentiles are on a 0-100 scale. Write %g for p%g; for the fastest requests use percentile = 1 or more.", p.At("percentile"), pct, pct, pct*100, pct*100)})
		}
		if s.Metric == results.MetricGoodput && s.Comparison == results.GreaterThan && s.ThresholdMs == 100 {
			v.add(problem.Problem{Path: p.At("threshold_ms"), Summary: "Objective that cannot be met", Reads: []attrpath.Path{p.At("metric"), p.At("comparison")},
				Detail: fmt.Sprintf("%s = 100 with comparison greater_than can never be met: goodput is a percentage of requests, at most 100. To demand that every request meets the other objectives, set comparison = %q; otherwise lower threshold_ms.", p.At("threshold_ms"), results.GreaterThanOrEqual)})
		}
		if th := s.ThresholdMs; th > 0 && th < 50 && (s.Metric == results.MetricTTFT || s.Metric == results.MetricRequestLatency) {
			v.add(problem.Problem{Path: p.At("threshold_ms"), Summary: "Latency threshold below 50 ms", Warning: true, Reads: []attrpath.Path{p.At("metric")},
				Detail: fmt.Sprintf("threshold_ms = %g demands a %s under %g ms: thresholds are in milliseconds. Did you mean %g s (threshold_ms = %g)?", th, strings.ReplaceAll(s.Metric, "_", " "), th, th, th*1000)})
		}
	}
	v.undecided(stated, repeats)
}

// undecided refuses an objective that another one always decides first, which means their
// thresholds contradict the order of percentiles: a trial's p95 of a metric is never below
// its p50, and its request latency never below its time to first token. "p50 TTFT < 100 ms"
// beside "p95 TTFT < 50 ms" can never be the objective that fails; written so, the two
// thresholds were almost certainly swapped. (Comparisons follow each metric's direction, so
// no two objectives can demand opposite things outright: this is how they contradict.)
func (v *validation) undecided(slos []results.SLO, repeats []int) {
	at := attrpath.Root("slos")
	for i, loose := range slos {
		if repeats[i] >= 0 || len(loose.Problems()) > 0 || loose.Info().PerTrial {
			continue
		}
		for j, tight := range slos {
			if i == j || repeats[j] >= 0 || len(tight.Problems()) > 0 || !decides(tight, loose) {
				continue
			}
			why := fmt.Sprintf("a trial's p%s is never below its p%s", formatPct(tight.Percentile), formatPct(loose.Percentile))
			fix := "give the higher percentile the higher threshold"
			switch {
			case tight.Metric != loose.Metric:
				why = "a request's latency is never below its time to first token"
				fix = "give request_latency the higher threshold"
			case tight.Info().HigherIsBetter:
				why = fmt.Sprintf("a trial's p%s is never above its p%s", formatPct(tight.Percentile), formatPct(loose.Percentile))
				fix = "give the lower percentile the lower threshold"
			}
			verdict := fmt.Sprintf("so their thresholds contradict each other. They look swapped: %s, or remove %s", fix, at.Index(i))
			if tight.ThresholdMs == loose.ThresholdMs {
				verdict = fmt.Sprintf("so %s adds nothing; remove it", at.Index(i))
			}
			v.add(problem.Problem{Path: at.Index(i), Summary: "Objective that can never fail", Reads: []attrpath.Path{at.Index(j)},
				Detail: fmt.Sprintf("%s (%s) can never be the objective that fails: %s (%s) is at least as strict and %s, %s.",
					at.Index(i), loose, at.Index(j), tight, why, verdict)})
			break
		}
	}
}

// decides says whether meeting tight always meets loose: both bound one metric, or TTFT
// (loose) and request latency (tight), tight at a percentile at least as bad and with a
// threshold at least as strict.
func decides(tight, loose results.SLO) bool {
	m := loose.Info()
	switch {
	case tight.Metric == loose.Metric && tight.Percentile == loose.Percentile:
		return false // a repeat, reported as such
	case tight.Metric == loose.Metric:
	case tight.Metric == results.MetricRequestLatency && loose.Metric == results.MetricTTFT:
	default:
		return false
	}
	strictTight := tight.Comparison == results.StrictlyLessThan || tight.Comparison == results.GreaterThan
	strictLoose := loose.Comparison == results.StrictlyLessThan || loose.Comparison == results.GreaterThan
	if tight.ThresholdMs == loose.ThresholdMs && strictLoose && !strictTight {
		return false // "≤ t" at the worse percentile still lets "< t" fail at the better one
	}
	if m.HigherIsBetter {
		return tight.Percentile <= loose.Percentile && tight.ThresholdMs >= loose.ThresholdMs
	}
	return tight.Percentile >= loose.Percentile && tight.ThresholdMs <= loose.ThresholdMs
}

// measurable refuses an objective on a metric a workload cannot produce: inter-token
// latency, and so per-user throughput, needs two output tokens, as does the time to the
// second token. With output_tokens = 1 every request would lack the value, and the trial
// would have nothing to judge.
func (v *validation) measurable(slos []results.SLO, ws []Workload) {
	for i, s := range slos {
		s = s.WithDefaults()
		switch s.Metric {
		case results.MetricITL, results.MetricTTST, results.MetricPerUserThroughput:
		default:
			continue
		}
		var one []int
		for j, w := range ws {
			if w.OutputTokens == 1 {
				one = append(one, j)
			}
		}
		if len(one) == 0 {
			continue
		}
		p := attrpath.Root("slos").Index(i)
		w := attrpath.Root("workloads").Index(one[0])
		others := ""
		if len(one) > 1 {
			others = fmt.Sprintf(" (and %d more workloads)", len(one)-1)
		}
		v.add(problem.Problem{Path: p.At("metric"), Summary: "Objective that cannot be measured", Reads: []attrpath.Path{w.At("output_tokens")},
			Detail: fmt.Sprintf("%s is %s, which needs at least two output tokens per request, but %s (%q)%s has output_tokens = 1, so no request would have a value to judge. Raise output_tokens to 2 or more, or measure that workload against time_to_first_token or request_latency.",
				p.At("metric"), s.Metric, w.At("output_tokens"), ws[one[0]].Label, others)})
	}
}

func formatPct(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

func (v *validation) search(c Config) {
	at := attrpath.Root("search")
	levels := at.At("concurrency_levels")
	if c.ConcurrencyLevels != nil && len(c.ConcurrencyLevels) == 0 {
		v.fail(levels, "No concurrency levels", "must list at least one level; remove it to search between search.min_concurrency and search.max_concurrency")
	}
	v.levels(levels, c.ConcurrencyLevels)
	minOK := v.between(at.At("min_concurrency"), c.MinConcurrency, 1, MaxConcurrency)
	maxOK := v.between(at.At("max_concurrency"), c.MaxConcurrency, 1, MaxConcurrency)
	if minOK && maxOK && c.MinConcurrency > c.MaxConcurrency {
		v.add(problem.Problem{Path: at.At("min_concurrency"), Summary: "Search bounds inverted", Reads: []attrpath.Path{at.At("max_concurrency")},
			Detail: fmt.Sprintf("search.min_concurrency (%d) is greater than search.max_concurrency (%d); lower min_concurrency or raise max_concurrency.", c.MinConcurrency, c.MaxConcurrency)})
	}
}

// levels checks a grid's levels: each in range and listed once. A list of thousands of
// repeats is one problem per rule, the first instance in full with a count of the others:
// one diagnostic each would take Terraform minutes to print and bury the message.
func (v *validation) levels(at attrpath.Path, levels []int) {
	type first struct {
		i, n int
		p    problem.Problem
	}
	var low, high, repeat first
	note := func(f *first, i int, p problem.Problem) {
		if f.n == 0 {
			f.i, f.p = i, p
		}
		f.n++
	}
	seen := map[int]int{}
	for i, l := range levels {
		p := at.Index(i)
		switch {
		case l < 1:
			note(&low, i, problem.Problem{Path: p, Summary: "Value too small", Detail: fmt.Sprintf("%s must be at least 1, got %d.", p, l)})
		case l > MaxConcurrency:
			note(&high, i, problem.Problem{Path: p, Summary: "Value too large", Detail: fmt.Sprintf("%s must be at most %d, got %d. The bound keeps a run's memory and time finite; no real server needs more.", p, MaxConcurrency, l)})
		default:
			if j, dup := seen[l]; dup {
				note(&repeat, i, problem.Problem{Path: p, Summary: "Repeated concurrency level", Reads: []attrpath.Path{at.Index(j)},
					Detail: fmt.Sprintf("%s: %d is already %s; list each level once.", p, l, at.Index(j))})
				continue
			}
			seen[l] = i
		}
	}
	for _, f := range []first{low, high, repeat} {
		if f.n == 0 {
			continue
		}
		if f.n > 1 {
			what := "repeat an earlier one"
			switch f.p.Summary {
			case "Value too small":
				what = "are below 1"
			case "Value too large":
				what = fmt.Sprintf("are above %d", MaxConcurrency)
			}
			f.p.Detail = fmt.Sprintf("%d of the %d levels in %s %s. The first: %s", f.n, len(levels), at, what, f.p.Detail)
		}
		v.add(f.p)
	}
}

// validation collects problems.
type validation struct{ problems []problem.Problem }

// replicaFix is how every replica_endpoints problem ends: where the list comes from.
const replicaFix = "set replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints (one base URL per ready pod)"

// replicaEndpoints checks the replicas' base URLs: each a valid endpoint, each listed once
// (a replica listed twice would be flushed twice and another not at all), at least one.
func (v *validation) replicaEndpoints(urls []string) {
	at := attrpath.Root("replica_endpoints")
	if urls == nil {
		return
	}
	if len(urls) == 0 {
		v.fail(at, "No replica endpoints", "lists no endpoint, so no replica would be flushed; %s, or remove it to flush through endpoint alone", replicaFix)
		return
	}
	seen := map[string]int{}
	for i, raw := range urls {
		u, err := endpoint.Parse(raw)
		if err != nil {
			v.fail(at.Index(i), "Invalid replica endpoint URL", "%v; %s", err, replicaFix)
			continue
		}
		if j, dup := seen[u.String()]; dup {
			v.fail(at.Index(i), "Replica endpoint listed twice", "%q is also replica_endpoints[%d]: each replica must be listed once; %s", endpoint.Redact(raw), j, replicaFix)
			continue
		}
		seen[u.String()] = i
	}
}

// pods checks the spread of every trial over the runner's pods (runner.kubernetes.pods):
// each pod that holds concurrency or users measures at least one request, and each holds
// at least one of max_in_flight's slots.
func (v *validation) pods(c Config) {
	at := attrpath.Root("runner").At("kubernetes").At("pods")
	if c.Pods == 0 && !c.PodsSet || !v.between(at, c.Pods, 1, MaxPods) || c.Pods == 1 {
		return
	}
	if c.MeasuredRequests < c.Pods {
		v.add(problem.Problem{Path: at, Summary: "More pods than measured requests", Reads: []attrpath.Path{attrpath.Root("trial").At("measured_requests")},
			Detail: fmt.Sprintf("%d pods share each trial's %d measured requests (trial.measured_requests), so some pod would measure none: "+
				"set runner.kubernetes.pods to at most %d, or raise trial.measured_requests to %d or more.", c.Pods, c.MeasuredRequests, c.MeasuredRequests, c.Pods)})
	}
	if o := c.OpenLoop; o != nil && o.MaxInFlight > 0 && o.MaxInFlight < c.Pods {
		v.add(problem.Problem{Path: at, Summary: "More pods than in-flight slots", Reads: []attrpath.Path{attrpath.Root("arrival").At("max_in_flight")},
			Detail: fmt.Sprintf("the %d pods split arrival.max_in_flight (%d) between them, and a pod with no slot could send nothing: "+
				"set runner.kubernetes.pods to at most %d, or raise arrival.max_in_flight to %d or more.", c.Pods, o.MaxInFlight, o.MaxInFlight, c.Pods)})
	}
}

func (v *validation) add(p problem.Problem) { v.problems = append(v.problems, p) }

// fail adds an error whose detail is the path followed by the formatted text.
func (v *validation) fail(p attrpath.Path, summary, format string, args ...any) {
	v.add(problem.Problem{Path: p, Summary: summary, Detail: p.String() + " " + fmt.Sprintf(format, args...) + "."})
}

// between checks lo ≤ got ≤ hi and says whether it holds. The upper bounds keep a run's
// memory and time finite (see MaxTokens).
func (v *validation) between(p attrpath.Path, got, lo, hi int) bool {
	switch {
	case got < lo:
		v.fail(p, "Value too small", "must be at least %d, got %d", lo, got)
	case got > hi:
		v.fail(p, "Value too large", "must be at most %d, got %d. The bound keeps a run's memory and time finite; no real server needs more", hi, got)
	default:
		return true
	}
	return false
}

// controlChar finds the first C0 or C1 control character (DEL included) in s: none belongs
// in a label that ends up on a terminal or in a rendering.
func controlChar(s string) (rune, int, bool) {
	i := strings.IndexFunc(s, unicode.IsControl)
	if i < 0 {
		return 0, 0, false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r, i, true
}

// telemetry checks each exporter URL and refuses the same exporter twice, whose devices
// would be counted twice in every total.
func (v *validation) telemetry(urls []string) {
	at := attrpath.Root("telemetry_endpoints")
	seen := map[string]int{}
	for i, raw := range urls {
		p := at.Index(i)
		u, err := telemetry.ParseEndpoint(raw)
		if err != nil {
			v.fail(p, "Invalid telemetry endpoint", "%v", err)
			continue
		}
		k := telemetry.Key(u)
		if j, dup := seen[k]; dup {
			v.add(problem.Problem{Path: p, Summary: "Repeated telemetry endpoint", Reads: []attrpath.Path{at.Index(j)},
				Detail: fmt.Sprintf("%s is the same exporter as %s (%s); its devices would be counted twice in every total. Remove one.", p, at.Index(j), endpoint.Redact(raw))})
			continue
		}
		seen[k] = i
	}
}
