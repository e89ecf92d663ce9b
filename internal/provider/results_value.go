package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Terraform views of a results document, shared by the capacity_benchmark resource and the
// capacity_report data source so both expose the same shape.

type percentilesValue struct {
	P50 float64 `tfsdk:"p50"`
	P95 float64 `tfsdk:"p95"`
	P99 float64 `tfsdk:"p99"`
}

type userThroughputValue struct {
	Avg float64 `tfsdk:"avg"`
	P50 float64 `tfsdk:"p50"`
	P95 float64 `tfsdk:"p95"`
}

type minMaxValue struct {
	Min float64 `tfsdk:"min"`
	Max float64 `tfsdk:"max"`
}

type correctnessValue struct {
	WarmupRecords              int64   `tfsdk:"warmup_records"`
	UniqueWarmupPrompts        int64   `tfsdk:"unique_warmup_prompts"`
	WarmupProfilePromptOverlap int64   `tfsdk:"warmup_profile_prompt_overlap"`
	ProfilingRecords           int64   `tfsdk:"profiling_records"`
	HTTP200                    int64   `tfsdk:"http_200"`
	UniquePrompts              int64   `tfsdk:"unique_prompts"`
	UniqueOutputs              int64   `tfsdk:"unique_outputs"`
	GeneratedChunks            int64   `tfsdk:"generated_chunks"`
	GeneratedUTF8Bytes         int64   `tfsdk:"generated_utf8_bytes"`
	CompletionTokensTotal      int64   `tfsdk:"completion_tokens_total"`
	FinishReasonLength         int64   `tfsdk:"finish_reason_length"`
	Errors                     int64   `tfsdk:"errors"`
	Cancelled                  bool    `tfsdk:"cancelled"`
	OutputLengthMismatches     float64 `tfsdk:"output_length_mismatches"`
}

type trialValue struct {
	Trial                      int64               `tfsdk:"trial"`
	Concurrency                int64               `tfsdk:"concurrency"`
	TTFTMs                     percentilesValue    `tfsdk:"ttft_ms"`
	RequestLatencyMs           percentilesValue    `tfsdk:"request_latency_ms"`
	ITLMs                      percentilesValue    `tfsdk:"itl_ms"`
	OutputThroughputTPS        float64             `tfsdk:"output_throughput_tps"`
	PerUserOutputThroughputTPS userThroughputValue `tfsdk:"per_user_output_throughput_tps"`
	RequestThroughputRPS       float64             `tfsdk:"request_throughput_rps"`
	BenchmarkDurationS         float64             `tfsdk:"benchmark_duration_s"`
	ServerPromptTokens         minMaxValue         `tfsdk:"server_prompt_tokens"`
	ServerCompletionTokens     minMaxValue         `tfsdk:"server_completion_tokens"`
	Correctness                correctnessValue    `tfsdk:"correctness"`
	ErrorSummary               []errorCountValue   `tfsdk:"error_summary"`
	RequestRate                *float64            `tfsdk:"request_rate"`
	Speedup                    *float64            `tfsdk:"speedup"`
	Users                      *int64              `tfsdk:"users"`
}

type errorCountValue struct {
	Kind       string `tfsdk:"kind"`
	HTTPStatus *int64 `tfsdk:"http_status"`
	Count      int64  `tfsdk:"count"`
	Example    string `tfsdk:"example"`
}

type workloadResultValue struct {
	Label                     string       `tfsdk:"label"`
	InputTokens               int64        `tfsdk:"input_tokens"`
	OutputTokens              int64        `tfsdk:"output_tokens"`
	MaximumPassingConcurrency *int64       `tfsdk:"maximum_passing_concurrency"`
	FirstFailingConcurrency   *int64       `tfsdk:"first_failing_concurrency"`
	MaximumPassingRequestRate *float64     `tfsdk:"maximum_passing_request_rate"`
	FirstFailingRequestRate   *float64     `tfsdk:"first_failing_request_rate"`
	MaximumPassingSpeedup     *float64     `tfsdk:"maximum_passing_speedup"`
	FirstFailingSpeedup       *float64     `tfsdk:"first_failing_speedup"`
	MaximumPassingUsers       *int64       `tfsdk:"maximum_passing_users"`
	FirstFailingUsers         *int64       `tfsdk:"first_failing_users"`
	ServerPromptTokens        minMaxValue  `tfsdk:"server_prompt_tokens"`
	PassingTrials             []trialValue `tfsdk:"passing_trials"`
	FailingTrials             []trialValue `tfsdk:"failing_trials"`
	BoundBy                   []string     `tfsdk:"bound_by"`
	Notes                     []string     `tfsdk:"notes"`
}

func computedNumber(desc string) schema.Attribute {
	return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
}

func computedInt(desc string) schema.Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
}

func computedObject(desc string, attrs map[string]schema.Attribute) schema.Attribute {
	return schema.SingleNestedAttribute{Computed: true, MarkdownDescription: desc, Attributes: attrs}
}

func percentileAttributes(unit string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"p50": computedNumber("Median, " + unit + "."),
		"p95": computedNumber("95th percentile, " + unit + "."),
		"p99": computedNumber("99th percentile, " + unit + "."),
	}
}

func minMaxAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{"min": computedNumber("Minimum."), "max": computedNumber("Maximum.")}
}

func trialSchemaAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"trial":                 computedInt("1-based index among this side's confirmation trials."),
		"concurrency":           computedInt("Concurrent requests the trial ran at."),
		"ttft_ms":               computedObject("Time to first token, ms.", percentileAttributes("ms")),
		"request_latency_ms":    computedObject("Request latency (send to last content chunk), ms.", percentileAttributes("ms")),
		"itl_ms":                computedObject("Inter-token latency, (latency - TTFT) / (output tokens - 1), ms.", percentileAttributes("ms")),
		"output_throughput_tps": computedNumber("Output tokens per second over the trial duration."),
		"per_user_output_throughput_tps": computedObject("Per-request output rate 1/ITL, tokens/s.", map[string]schema.Attribute{
			"avg": computedNumber("Mean."), "p50": computedNumber("Median."), "p95": computedNumber("95th percentile."),
		}),
		"request_throughput_rps":   computedNumber("Successful requests per second over the trial duration."),
		"benchmark_duration_s":     computedNumber("First successful measured request sent to the last content chunk of a successful measured request (AIPerf's `benchmark_duration`), s."),
		"server_prompt_tokens":     computedObject("Prompt tokens the server counted (includes its chat template).", minMaxAttributes()),
		"server_completion_tokens": computedObject("Completion tokens the server counted.", minMaxAttributes()),
		"correctness": computedObject("Correctness counters of the trial.", map[string]schema.Attribute{
			"warmup_records":                computedInt("Warmup requests sent."),
			"unique_warmup_prompts":         computedInt("Distinct warmup prompts."),
			"warmup_profile_prompt_overlap": computedInt("Prompts used both as warmup and measured (must be 0)."),
			"profiling_records":             computedInt("Measured requests."),
			"http_200":                      computedInt("Measured requests answered with HTTP 200."),
			"unique_prompts":                computedInt("Distinct measured prompts."),
			"unique_outputs":                computedInt("Distinct measured outputs."),
			"generated_chunks":              computedInt("Streamed chunks with content."),
			"generated_utf8_bytes":          computedInt("UTF-8 bytes of generated content."),
			"completion_tokens_total":       computedInt("Sum of completion tokens."),
			"finish_reason_length":          computedInt("Requests that finished with reason `length`."),
			"errors":                        computedInt("Failed measured requests."),
			"cancelled":                     schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the trial was cut short."},
			"output_length_mismatches":      computedNumber("Requests whose output length differs from the requested by more than min(5 %, 50) tokens."),
		}),
		"error_summary": schema.ListNestedAttribute{Computed: true,
			MarkdownDescription: "Measured requests that failed or missed their output length, by kind, most frequent first; empty when there were none.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"kind": schema.StringAttribute{Computed: true, MarkdownDescription: "`http_status`, `stalled` (no byte for `trial.stall_timeout`), `request_timeout`, " +
					"`reset` (connection refused, reset or closed), `truncated_stream`, `malformed_stream` (not JSON, or an event over 1 MiB), " +
					"`server_error` (an error inside the stream), `no_content`, `length_mismatch` or `other`."},
				"http_status": computedInt("The status, for kind `http_status`; null otherwise."),
				"count":       computedInt("Requests of this kind."),
				"example":     schema.StringAttribute{Computed: true, MarkdownDescription: "The first such request's message, shortened, with the API key redacted."},
			}}},
		"request_rate": computedNumber("An open-loop trial's scheduled rate, requests per second; null for a closed-loop trial."),
		"speedup":      computedNumber("A replay trial's speedup of its trace; null otherwise."),
		"users":        computedInt("A conversation trial's users (each holding multi-turn conversations with think time); null otherwise."),
	}
}

func workloadResultSchemaAttributes() map[string]schema.Attribute {
	trials := func(desc string) schema.Attribute {
		return schema.ListNestedAttribute{Computed: true, MarkdownDescription: desc,
			NestedObject: schema.NestedAttributeObject{Attributes: trialSchemaAttributes()}}
	}
	return map[string]schema.Attribute{
		"label":                        schema.StringAttribute{Computed: true, MarkdownDescription: "Workload label."},
		"input_tokens":                 computedInt("Configured input tokens."),
		"output_tokens":                computedInt("Configured output tokens."),
		"maximum_passing_concurrency":  computedInt(capitalize(descMaximumPassing)),
		"first_failing_concurrency":    computedInt(capitalize(descFirstFailing)),
		"maximum_passing_request_rate": computedNumber(capitalize(descMaximumPassingRate)),
		"first_failing_request_rate":   computedNumber(capitalize(descFirstFailingRate)),
		"maximum_passing_speedup":      computedNumber(capitalize(descMaximumPassingSpeedup)),
		"first_failing_speedup":        computedNumber(capitalize(descFirstFailingSpeedup)),
		"maximum_passing_users":        computedInt("For a `conversation` workload, the most users at which every confirmation trial met the objectives; null otherwise or when none passed."),
		"first_failing_users":          computedInt("For a `conversation` workload, the fewest users above `maximum_passing_users` at which a confirmation trial failed; null otherwise or when every level tried passed."),
		"server_prompt_tokens":         computedObject("Prompt tokens the server counted across the reported trials.", minMaxAttributes()),
		"passing_trials":               trials("Confirmation trials at the maximum passing concurrency."),
		"failing_trials":               trials("Confirmation trials at the first failing concurrency."),
		"bound_by": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "What failed the first failing concurrency's confirmation trials: each missed objective as `p<percentile> <metric>` " +
				"(or `goodput`), and `errors` when requests failed. Empty when nothing failed within the bounds."},
		"notes": schema.ListAttribute{Computed: true, ElementType: types.StringType,
			MarkdownDescription: "What the search observed that a reader should know: a non-monotone capacity curve (a level passed although a lower one failed), " +
				"or a capacity bounded by the search (\"capacity is at least 64; raise search.max_concurrency to find the boundary\")."},
	}
}

// workloadResultObjectType is derived from the schema so the two cannot drift apart.
var workloadResultObjectType = schema.NestedAttributeObject{Attributes: workloadResultSchemaAttributes()}.Type().(types.ObjectType)

// One definition of each boundary attribute, shared by the resource, the data source and
// workload_results, so the three cannot drift apart.
const (
	descMaximumPassing = "the highest concurrency at which every confirmation trial met the SLO; " +
		"null when no concurrency tried passed."
	descFirstFailing = "the first concurrency tried above the maximum passing one (the lowest tried when none passed) " +
		"at which at least one confirmation trial missed the SLO; with `search` bounds that is the maximum passing " +
		"concurrency + 1. Null when every concurrency tried passed. A lower concurrency that failed in a non-monotone " +
		"curve is reported in `notes`, not here."
	descBoundedBySearch = "whether the numbers are the edge of the search rather than the capacity: `true` when every " +
		"concurrency tried passed (capacity is at least the maximum passing one; raise `search.max_concurrency`) or when " +
		"even the lowest concurrency tried, above 1, failed (capacity is below it; lower `search.min_concurrency`). " +
		"`false` when the boundary was found, or when even 1 concurrent request failed (capacity 0)."
)

func boundaryMaps(doc *results.Document) (passing, failing, bounded types.Map, diags diag.Diagnostics) {
	pass := map[string]attr.Value{}
	fail := map[string]attr.Value{}
	bound := map[string]attr.Value{}
	for _, w := range doc.Workloads {
		pass[w.Label] = optionalInt(w.MaximumPassingConcurrency)
		fail[w.Label] = optionalInt(w.FirstFailingConcurrency)
		bound[w.Label] = types.BoolValue(w.SearchBound() != results.BoundNone)
	}
	passing, d := types.MapValue(types.Int64Type, pass)
	diags.Append(d...)
	failing, d = types.MapValue(types.Int64Type, fail)
	diags.Append(d...)
	bounded, d = types.MapValue(types.BoolType, bound)
	diags.Append(d...)
	return passing, failing, bounded, diags
}

// usersMaps are the users boundary per workload label; null for a workload searched on
// another axis or a side the search did not find.
func usersMaps(doc *results.Document) (passing, failing types.Map, diags diag.Diagnostics) {
	pass := map[string]attr.Value{}
	fail := map[string]attr.Value{}
	for _, w := range doc.Workloads {
		pass[w.Label] = optionalInt(w.MaximumPassingUsers)
		fail[w.Label] = optionalInt(w.FirstFailingUsers)
	}
	passing, d := types.MapValue(types.Int64Type, pass)
	diags.Append(d...)
	failing, d = types.MapValue(types.Int64Type, fail)
	diags.Append(d...)
	return passing, failing, diags
}

func workloadResultsValue(ctx context.Context, doc *results.Document) (types.List, diag.Diagnostics) {
	values := make([]workloadResultValue, 0, len(doc.Workloads))
	for _, w := range doc.Workloads {
		v := workloadResultValue{
			Label:                     w.Label,
			InputTokens:               int64(w.ConfiguredISL),
			OutputTokens:              int64(w.ConfiguredOSL),
			MaximumPassingConcurrency: optionalInt64(w.MaximumPassingConcurrency),
			FirstFailingConcurrency:   optionalInt64(w.FirstFailingConcurrency),
			MaximumPassingRequestRate: w.MaximumPassingRequestRate,
			FirstFailingRequestRate:   w.FirstFailingRequestRate,
			MaximumPassingSpeedup:     w.MaximumPassingSpeedup,
			FirstFailingSpeedup:       w.FirstFailingSpeedup,
			MaximumPassingUsers:       optionalInt64(w.MaximumPassingUsers),
			FirstFailingUsers:         optionalInt64(w.FirstFailingUsers),
			ServerPromptTokens:        minMaxValue(w.ServerPromptTokens),
			PassingTrials:             []trialValue{},
			FailingTrials:             []trialValue{},
			BoundBy:                   append([]string{}, w.BoundBy...),
			Notes:                     append([]string{}, w.Notes...),
		}
		for _, st := range w.Trials() {
			if st.Side == results.SidePassing {
				v.PassingTrials = append(v.PassingTrials, newTrialValue(st))
			} else {
				v.FailingTrials = append(v.FailingTrials, newTrialValue(st))
			}
		}
		values = append(values, v)
	}
	return types.ListValueFrom(ctx, workloadResultObjectType, values)
}

// positiveOrNull is v, or null for the 0 an absent value reads as.
func positiveOrNull(v float64) *float64 {
	if v <= 0 {
		return nil
	}
	return &v
}

// newTrialValue takes the trial's concurrency from results.Workload.Trials, which fills it
// from the side's boundary where the document leaves it out (the reference does).
func newTrialValue(st results.SideTrial) trialValue {
	t := st.Trial
	return trialValue{
		Trial:                      int64(t.Trial),
		Concurrency:                int64(st.Concurrency),
		TTFTMs:                     newPercentilesValue(t.TTFTMs),
		RequestLatencyMs:           newPercentilesValue(t.RequestLatencyMs),
		ITLMs:                      newPercentilesValue(t.ITLMs),
		OutputThroughputTPS:        t.OutputThroughputTPS,
		PerUserOutputThroughputTPS: userThroughputValue{Avg: t.PerUserOutputThroughputTPS.Avg, P50: t.PerUserOutputThroughputTPS.P50, P95: t.PerUserOutputThroughputTPS.P95},
		RequestThroughputRPS:       t.RequestThroughputRPS,
		BenchmarkDurationS:         t.BenchmarkDurationS,
		ServerPromptTokens:         minMaxValue(t.ServerPromptTokens),
		ServerCompletionTokens:     minMaxValue(t.ServerCompletionTokens),
		Correctness: correctnessValue{
			WarmupRecords:              int64(t.Correctness.WarmupRecords),
			UniqueWarmupPrompts:        int64(t.Correctness.UniqueWarmupPrompts),
			WarmupProfilePromptOverlap: int64(t.Correctness.WarmupProfilePromptOverlap),
			ProfilingRecords:           int64(t.Correctness.ProfilingRecords),
			HTTP200:                    int64(t.Correctness.HTTP200),
			UniquePrompts:              int64(t.Correctness.UniquePrompts),
			UniqueOutputs:              int64(t.Correctness.UniqueOutputs),
			GeneratedChunks:            int64(t.Correctness.GeneratedChunks),
			GeneratedUTF8Bytes:         int64(t.Correctness.GeneratedUTF8Bytes),
			CompletionTokensTotal:      int64(t.Correctness.CompletionTokensTotal),
			FinishReasonLength:         int64(t.Correctness.FinishReasonLength),
			Errors:                     int64(t.Correctness.Errors),
			Cancelled:                  t.Correctness.Cancelled,
			OutputLengthMismatches:     t.Correctness.OutputLengthMismatches,
		},
		ErrorSummary: errorSummaryValue(t.ErrorSummary),
		RequestRate:  positiveOrNull(t.RequestRate),
		Speedup:      positiveOrNull(t.Speedup),
		Users:        positiveIntOrNull(t.Users),
	}
}

func newPercentilesValue(s results.Stats) percentilesValue {
	return percentilesValue{P50: s.P50, P95: s.P95, P99: s.P99}
}

func errorSummaryValue(summary []results.ErrorCount) []errorCountValue {
	out := make([]errorCountValue, 0, len(summary))
	for _, e := range summary {
		v := errorCountValue{Kind: e.Kind, Count: int64(e.Count), Example: e.Example}
		if e.HTTPStatus != 0 {
			v.HTTPStatus = new(int64)
			*v.HTTPStatus = int64(e.HTTPStatus)
		}
		out = append(out, v)
	}
	return out
}

func optionalInt(v *int) types.Int64 {
	if v == nil {
		return types.Int64Null()
	}
	return types.Int64Value(int64(*v))
}

func optionalInt64(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// positiveIntOrNull is n, or null for the 0 an absent count reads as.
func positiveIntOrNull(n int) *int64 {
	if n <= 0 {
		return nil
	}
	v := int64(n)
	return &v
}
