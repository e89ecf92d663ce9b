package provider

// llmserve_capacity_benchmark's open-loop axis: `arrival`, `search.rate` and the computed
// `maximum_passing_request_rate`. The rules are the domain's (capacity.OpenLoop); this file
// declares the attributes and reads them.

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// descOpenLoopRule is the pass rule of a trial at a rate, for the docs.
const descOpenLoopRule = "A trial at a rate passes only if every objective holds **and** the server kept up: " +
	"its completion rate (successful responses per second, first to last) is at least 95 % of the offered rate " +
	"(ε = 5 %), and its backlog did not grow (the in-flight count, sampled at each measured send from the first " +
	"response on and fitted against time, rises over the trial by no more than the largest of 2 requests, 25 % of " +
	"its mean and twice its scatter about the fitted line; with fewer than 8 such samples, as 8 measured requests without " +
	"warmups give, the backlog guard does not judge and the trial's notes say so). A rate above capacity therefore fails even when the " +
	"trial is too short for its latencies to blow up. A probe stops as soon as an objective or the completion rate " +
	"is certain to fail. A trial whose load generator missed its schedule (send lateness p99 over 10 ms or a " +
	"quarter of the mean gap, whichever is larger) measured the client, not the server: it is run once more, and a " +
	"second miss stops the run as the client's fault, never as the server's result. " +
	"The completion guard needs trials whose sends span many request latencies: when a boundary's confirmation trial " +
	"sent its measured requests over fewer than 10 median request latencies, the apply warns and says how many " +
	"`trial.measured_requests` (or, for a replay, how long a trace) would."

func arrivalAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "How an open-loop run (`search.rate`) spaces its requests: each is sent at its time on a " +
			"seeded schedule whatever is still in flight, warmups first on the same schedule. Default with `search.rate`: " +
			"`{ pattern = \"poisson\" }`. Needs `search.rate`.",
		PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		Attributes: map[string]schema.Attribute{
			"pattern": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "`constant` (one request every 1/rate s), `poisson` (exponential gaps of mean 1/rate) or " +
					"`gamma` (gaps of shape `burstiness` and scale 1/(rate × burstiness), as vLLM's `--burstiness`).",
				Validators: []validator.String{stringvalidator.OneOf(load.ArrivalPatterns...)},
			},
			"burstiness": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: "The gamma shape (`pattern = \"gamma\"` only): below 1 burstier than Poisson, above 1 more " +
					"regular; 1 is Poisson. Required with `gamma`, refused with another pattern.",
			},
			"max_in_flight": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Cap on the requests on the wire: a request due while the cap is reached waits for one to " +
					"finish. Each trial records how often it bound (`open_loop.cap_bound` in `results_json`); the waits " +
					"lower the completion rate, so a server that needs the cap fails the rate. Default: no cap.",
			},
		},
	}
}

func rateSearchAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Search the request rate instead of the concurrency (open loop): the highest rate, in requests " +
			"per second, at which every confirmation trial passes, found to `tolerance` over the rates `min`, " +
			"`min × (1 + tolerance)`, … up to `max`. " + descOpenLoopRule + " The answer is " +
			"`maximum_passing_request_rate`. Replaces the concurrency search (leave `concurrency_levels`, `min_concurrency` and `max_concurrency` unset).",
		Attributes: map[string]schema.Attribute{
			"min": schema.Float64Attribute{Required: true, MarkdownDescription: "Lowest rate tried, requests per second; at least 0.001 (one request every 1000 s)."},
			"max": schema.Float64Attribute{Required: true, MarkdownDescription: "Highest rate tried, requests per second."},
			"tolerance": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Relative step between neighbouring rates tried, so the boundary is found to it; "+
					"in (0, 1), default %g.", capacity.DefaultRateTolerance),
			},
		},
	}
}

const descMaximumPassingRate = "the highest request rate (requests per second) at which every confirmation trial met " +
	"the SLO and kept up with the rate, for a benchmark with `search.rate` (or, with `search.speedup`, the replayed " +
	"trace's mean rate at `maximum_passing_speedup`); null when no rate tried passed, or when the benchmark searched concurrency."

const descFirstFailingRate = "the lowest request rate (requests per second) at which a confirmation trial failed, the " +
	"neighbour of `maximum_passing_request_rate` on the ladder of rates tried, so capacity lies between the two; null when " +
	"every rate tried passed (capacity is above the search's maximum), or when the benchmark searched concurrency."

const descMaximumPassingSpeedup = "for a benchmark with `search.speedup`, the highest speedup of the workload's recorded " +
	"trace at which every confirmation trial met the SLO and kept up: how many times the recorded traffic the deployment " +
	"holds; null when no speedup tried passed, or when the benchmark searched something else."

const descFirstFailingSpeedup = "for a benchmark with `search.speedup`, the lowest speedup of the workload's trace at " +
	"which a confirmation trial failed; null when every speedup tried passed, or when the benchmark searched something else."

// float64MapAttribute is a computed map of numbers by workload label, planned by label.
func float64MapAttribute(desc string) schema.MapAttribute {
	return schema.MapAttribute{
		Computed:            true,
		ElementType:         types.Float64Type,
		MarkdownDescription: "Per workload label, " + desc + labelKeyedPlan,
		PlanModifiers:       []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
	}
}

// openLoopMaps are the computed open-loop maps and what each reads of a workload.
var openLoopMaps = []struct {
	name string
	desc string
	get  func(results.Workload) *float64
}{
	{"maximum_passing_request_rate", descMaximumPassingRate, func(w results.Workload) *float64 { return w.MaximumPassingRequestRate }},
	{"first_failing_request_rate", descFirstFailingRate, func(w results.Workload) *float64 { return w.FirstFailingRequestRate }},
	{"maximum_passing_speedup", descMaximumPassingSpeedup, func(w results.Workload) *float64 { return w.MaximumPassingSpeedup }},
	{"first_failing_speedup", descFirstFailingSpeedup, func(w results.Workload) *float64 { return w.FirstFailingSpeedup }},
}

// openLoopMapValues are the open-loop maps of a document, by attribute name.
func openLoopMapValues(doc *results.Document) (map[string]types.Map, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := map[string]types.Map{}
	for _, m := range openLoopMaps {
		values := map[string]attr.Value{}
		for _, w := range doc.Workloads {
			if v := m.get(w); v == nil {
				values[w.Label] = types.Float64Null()
			} else {
				values[w.Label] = types.Float64Value(*v)
			}
		}
		mv, d := types.MapValue(types.Float64Type, values)
		diags.Append(d...)
		out[m.name] = mv
	}
	return out, diags
}

// traceAttribute is a workload's `trace`.
func traceAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Replay recorded traffic instead of synthetic prompts: a trace file in the Mooncake JSONL shape " +
			"(FAST'25; what AIPerf reads with `--custom-dataset-type mooncake_trace`), one request per line: `timestamp` (ms), " +
			"`input_length` and `output_length` (tokens) and optional `hash_ids`, the ids of the prompt's blocks of " +
			"`block_tokens` tokens. Requests are sent at their recorded offsets from the first, divided by the speedup " +
			"`search.speedup` tries, each with its lengths; prompts are generated to those lengths, and a `hash_ids` block " +
			"is the same text wherever it appears, so requests whose `hash_ids` begin alike share that prefix. The trace's " +
			"first `trial.warmup_requests` requests are the warmups, the rest are measured (`trial.measured_requests` does " +
			"not apply). Timestamps must not go back in time (the file is refused, not sorted, naming the line). Needs " +
			"`search.speedup`; leave `input_tokens`, `output_tokens`, the spreads and `shared_prefix_tokens` unset.",
		Attributes: map[string]schema.Attribute{
			"file": schema.StringAttribute{
				Required:   true,
				Validators: []validator.String{stringvalidator.LengthAtLeast(1), printableValidator{}},
				MarkdownDescription: "Path of the trace file, read at plan (every line checked) and again at apply; relative to " +
					"the directory Terraform runs in, so write `${path.module}/trace.jsonl` in quotes. Its SHA-256 is kept in " +
					"`results_json` (`trace_sha256`), and a changed file is a new measurement for `progress_file`. " + fileRule(trace.File),
			},
			"block_tokens": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: fmt.Sprintf("Tokens of one `hash_ids` block. Default %d, Mooncake's.", trace.MooncakeBlockTokens),
			},
		},
	}
}

func speedupSearchAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Search the speedup of every workload's recorded `trace`: the highest factor by which its " +
			"arrival offsets can be divided while every confirmation trial passes, found to `tolerance` over `min`, " +
			"`min × (1 + tolerance)`, … up to `max`. It answers how many times today's recorded traffic the deployment holds. " +
			"A trial at a speedup is judged as one at a rate (`search.rate`). " + descOpenLoopRule + " The answer is " +
			"`maximum_passing_speedup`; `maximum_passing_request_rate` is the trace's mean rate at it. `min = max = 1` replays " +
			"the trace once as recorded, with its confirmation trials. Every workload needs a `trace`; leave `arrival`, " +
			"`search.rate` and `concurrency_levels` unset.",
		Attributes: map[string]schema.Attribute{
			"min": schema.Float64Attribute{Required: true, MarkdownDescription: "Lowest speedup tried (1 is the trace as recorded, 0.5 half as fast); at least 0.001."},
			"max": schema.Float64Attribute{Required: true, MarkdownDescription: "Highest speedup tried."},
			"tolerance": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Relative step between neighbouring speedups tried, so the boundary is found to it; "+
					"in (0, 1), default %g.", capacity.DefaultRateTolerance),
			},
		},
	}
}

// openLoopConfig reads `arrival` and `search.rate` into cfg.OpenLoop: nil without
// search.rate. An arrival without search.rate is a problem of its own (openLoopProblems).
func (r *valueReader) openLoopConfig(arrival, search attr.Value) *capacity.OpenLoop {
	sp := attrpath.Root("search")
	fields := r.fields(sp, search)
	if speedup := r.fields(sp.At("speedup"), fields["speedup"]); speedup != nil {
		p := sp.At("speedup")
		o := &capacity.OpenLoop{
			Speedup:   true,
			MinRate:   r.float(p.At("min"), speedup["min"]),
			MaxRate:   r.float(p.At("max"), speedup["max"]),
			Tolerance: r.floatOr(p.At("tolerance"), speedup["tolerance"], capacity.DefaultRateTolerance),
		}
		return o // search.rate beside it: ValidateConfig refuses both
	}
	rate := r.fields(sp.At("rate"), fields["rate"])
	if rate == nil {
		return nil
	}
	p := sp.At("rate")
	o := &capacity.OpenLoop{
		MinRate:   r.float(p.At("min"), rate["min"]),
		MaxRate:   r.float(p.At("max"), rate["max"]),
		Tolerance: r.floatOr(p.At("tolerance"), rate["tolerance"], capacity.DefaultRateTolerance),
		Arrival:   load.Arrival{Pattern: load.ArrivalPoisson},
	}
	ap := attrpath.Root("arrival")
	if a := r.fields(ap, arrival); a != nil {
		o.Arrival = load.Arrival{
			Pattern:    r.str(ap.At("pattern"), a["pattern"], load.ArrivalPoisson),
			Burstiness: r.float(ap.At("burstiness"), a["burstiness"]),
		}
		o.MaxInFlight = r.int(ap.At("max_in_flight"), a["max_in_flight"], 0)
		v, ok := a["max_in_flight"]
		o.MaxInFlightSet = ok && !v.IsNull() && !v.IsUnknown() // 0 written is refused by Validate as 0

	}
	return o
}

// arrivalWithoutRate is the error of an `arrival` that nothing uses.
func arrivalWithoutRate(arrival, search types.Object) (string, bool) {
	if arrival.IsNull() || arrival.IsUnknown() || search.IsUnknown() {
		return "", false
	}
	if !search.IsNull() {
		if speedup, ok := search.Attributes()["speedup"]; ok && !speedup.IsNull() {
			return "search.speedup replays each trace's own arrivals: remove arrival.", true
		}
		if rate, ok := search.Attributes()["rate"]; ok && !rate.IsNull() {
			return "", false
		}
	}
	return strings.Join([]string{"arrival spaces the requests of an open-loop run, which searches the request rate:",
		"add search = { rate = { min = …, max = … } }, or remove arrival to search concurrency."}, " "), true
}
