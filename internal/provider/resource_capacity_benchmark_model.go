package provider

// llmserve_capacity_benchmark's model and its translation: its values into capacity.Config, and
// the results document back into state. The rules themselves are capacity.Config.Validate;
// capacityConfig only maps them onto Terraform's attribute paths and holds back those that
// read a value not known yet.

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

type capacityBenchmarkModel struct {
	ID           types.String   `tfsdk:"id"`
	Endpoint     types.String   `tfsdk:"endpoint"`
	Replicas     types.List     `tfsdk:"replica_endpoints"`
	Model        types.String   `tfsdk:"model"`
	API          types.String   `tfsdk:"api"`
	APIKey       types.String   `tfsdk:"api_key"`
	AdminAPIKey  types.String   `tfsdk:"admin_api_key"`
	Workloads    types.List     `tfsdk:"workloads"`
	SLOs         types.List     `tfsdk:"slos"`
	Search       types.Object   `tfsdk:"search"`
	Arrival      types.Object   `tfsdk:"arrival"`
	Trial        types.Object   `tfsdk:"trial"`
	Triggers     types.Map      `tfsdk:"triggers"`
	Experiment   types.Object   `tfsdk:"experiment"`
	ProgressFile types.String   `tfsdk:"progress_file"`
	ProgressLog  types.String   `tfsdk:"progress_log"`
	RecordsDir   types.String   `tfsdk:"records_directory"`
	ChunkTimes   types.Bool     `tfsdk:"record_chunk_times"`
	Telemetry    types.List     `tfsdk:"telemetry_endpoints"`
	Timeouts     timeouts.Value `tfsdk:"timeouts"`
	Runner       types.Object   `tfsdk:"runner"`
	Baseline     types.String   `tfsdk:"baseline"`
	Comparison   types.Object   `tfsdk:"comparison"`

	MaximumPassingConcurrency types.Map    `tfsdk:"maximum_passing_concurrency"`
	MaximumPassingUsers       types.Map    `tfsdk:"maximum_passing_users"`
	FirstFailingUsers         types.Map    `tfsdk:"first_failing_users"`
	MaximumPassingRequestRate types.Map    `tfsdk:"maximum_passing_request_rate"`
	FirstFailingRequestRate   types.Map    `tfsdk:"first_failing_request_rate"`
	MaximumPassingSpeedup     types.Map    `tfsdk:"maximum_passing_speedup"`
	FirstFailingSpeedup       types.Map    `tfsdk:"first_failing_speedup"`
	FirstFailingConcurrency   types.Map    `tfsdk:"first_failing_concurrency"`
	CapacityBoundedBySearch   types.Map    `tfsdk:"capacity_bounded_by_search"`
	WorkloadResults           types.List   `tfsdk:"workload_results"`
	ResultsJSON               types.String `tfsdk:"results_json"`
}

// capacityConfig translates the benchmark's values (the configuration at validation, the
// plan at create) into the domain configuration. An unset value takes capacity.Defaults, as
// the schema's defaults do; an unknown one takes it too and is listed in unknown, so that
// no problem is reported about it.
func (m capacityBenchmarkModel) capacityConfig(ctx context.Context) (capacity.Config, []attrpath.Path, diag.Diagnostics) {
	r := valueReader{ctx: ctx}
	def := capacity.Defaults()
	cfg := capacity.Config{
		Endpoint:         r.str(attrpath.Root("endpoint"), m.Endpoint, ""),
		Model:            r.str(attrpath.Root("model"), m.Model, ""),
		API:              r.str(attrpath.Root("api"), m.API, def.API),
		RecordsDirectory: r.str(attrpath.Root("records_directory"), m.RecordsDir, ""),
		RecordChunkTimes: r.known(attrpath.Root("record_chunk_times"), m.ChunkTimes) && m.ChunkTimes.ValueBool(),
		Seed:             1,
	}

	for i, e := range r.elements(attrpath.Root("telemetry_endpoints"), m.Telemetry) {
		cfg.TelemetryEndpoints = append(cfg.TelemetryEndpoints, r.str(attrpath.Root("telemetry_endpoints").Index(i), e, ""))
	}

	at := attrpath.Root("replica_endpoints")
	if r.known(at, m.Replicas) {
		// Set, even when empty (which Validate refuses); an element not known yet holds back
		// every rule on the list: a duplicate or the count cannot be judged without it.
		cfg.ReplicaEndpoints = []string{}
		for i, e := range r.elements(at, m.Replicas) {
			if e.IsUnknown() {
				r.unknown = append(r.unknown, at)
			}
			cfg.ReplicaEndpoints = append(cfg.ReplicaEndpoints, r.str(at.Index(i), e, ""))
		}
	}

	for i, w := range r.elements(attrpath.Root("workloads"), m.Workloads) {
		p := attrpath.Root("workloads").Index(i)
		f := r.fields(p, w)
		cfg.Workloads = append(cfg.Workloads, capacity.Workload{
			Label:              r.str(p.At("label"), f["label"], ""),
			InputTokens:        r.int(p.At("input_tokens"), f["input_tokens"], 0),
			OutputTokens:       r.int(p.At("output_tokens"), f["output_tokens"], 0),
			InputTokensStddev:  r.float(p.At("input_tokens_stddev"), f["input_tokens_stddev"]),
			OutputTokensStddev: r.float(p.At("output_tokens_stddev"), f["output_tokens_stddev"]),
			SharedPrefixTokens: r.int(p.At("shared_prefix_tokens"), f["shared_prefix_tokens"], 0),
		})
		if cv, ok := f["conversation"]; ok && cv != nil && !cv.IsNull() {
			r.conversation(p.At("conversation"), cv, &cfg.Workloads[len(cfg.Workloads)-1])
		}
		if tv, ok := f["trace"]; ok && tv != nil && !tv.IsNull() {
			// A replay even when its path (or the whole trace) is not known yet at plan.
			w := &cfg.Workloads[len(cfg.Workloads)-1]
			w.TraceFile = capacity.UnknownTraceFile
			tf := r.fields(p.At("trace"), tv)
			if tf == nil {
				continue
			}
			w.TraceFile = r.str(p.At("trace").At("file"), tf["file"], capacity.UnknownTraceFile)
			w.TraceBlockTokens = r.int(p.At("trace").At("block_tokens"), tf["block_tokens"], 0)
			if v, ok := tf["block_tokens"]; ok && !v.IsNull() && !v.IsUnknown() && w.TraceBlockTokens == 0 {
				w.TraceBlockTokens = -1 // set to 0: Validate says so
			}
		}
	}
	for i, s := range r.elements(attrpath.Root("slos"), m.SLOs) {
		p := attrpath.Root("slos").Index(i)
		f := r.fields(p, s)
		cfg.SLOs = append(cfg.SLOs, results.SLO{
			Metric:      r.str(p.At("metric"), f["metric"], ""), // "" is the default, as WithDefaults fills it
			Percentile:  r.float(p.At("percentile"), f["percentile"]),
			ThresholdMs: r.float(p.At("threshold_ms"), f["threshold_ms"]),
			Comparison:  r.str(p.At("comparison"), f["comparison"], ""),
		})
	}

	at = attrpath.Root("search")
	f := r.fields(at, m.Search)
	cfg.MinConcurrency = r.int(at.At("min_concurrency"), f["min_concurrency"], def.MinConcurrency)
	cfg.MaxConcurrency = r.int(at.At("max_concurrency"), f["max_concurrency"], def.MaxConcurrency)
	if levels, ok := f["concurrency_levels"].(types.List); ok && r.known(at.At("concurrency_levels"), levels) {
		cfg.ConcurrencyLevels = []int{} // set, even when empty
		for i, l := range r.elements(at.At("concurrency_levels"), levels) {
			cfg.ConcurrencyLevels = append(cfg.ConcurrencyLevels, r.int(at.At("concurrency_levels").Index(i), l, 0))
		}
	}

	cfg.OpenLoop = r.openLoopConfig(m.Arrival, m.Search)

	at = attrpath.Root("trial")
	f = r.fields(at, m.Trial)
	cfg.WarmupRequests = r.int(at.At("warmup_requests"), f["warmup_requests"], def.WarmupRequests)
	cfg.MeasuredRequests = r.int(at.At("measured_requests"), f["measured_requests"], def.MeasuredRequests)
	cfg.ConfirmationTrials = r.int(at.At("confirmation_trials"), f["confirmation_trials"], def.ConfirmationTrials)
	cfg.ComparisonBudget = r.int(at.At("comparison_budget"), f["comparison_budget"], def.ComparisonBudget)
	cfg.CacheFlush = r.str(at.At("cache_flush"), f["cache_flush"], def.CacheFlush)
	cfg.StallTimeout = r.duration(at.At("stall_timeout"), f["stall_timeout"], def.StallTimeout)
	cfg.RequestTimeout = r.duration(at.At("request_timeout"), f["request_timeout"], def.RequestTimeout)

	exp, d := experimentFromObject(ctx, m.Experiment)
	r.diags.Append(d...)
	cfg.Experiment = exp
	// Its default reads the experiment and the workloads (capacity.DefaultEngineWarmupRequests).
	cfg.EngineWarmupRequests = r.int(at.At("engine_warmup_requests"), f["engine_warmup_requests"], capacity.DefaultEngineWarmupRequests(cfg))
	if r.known(attrpath.Root("triggers"), m.Triggers) {
		// A changed trigger is a new measurement, never a replay (capacity keys the journal by
		// it). At plan a trigger is often another resource's id, not known yet.
		cfg.Triggers = make(map[string]string, len(m.Triggers.Elements()))
		for k, v := range m.Triggers.Elements() {
			cfg.Triggers[k] = r.str(attrpath.Root("triggers"), v, "")
		}
	}
	if b := r.str(attrpath.Root("baseline"), m.Baseline, ""); b != "" {
		doc, err := results.Parse([]byte(b))
		if err != nil {
			r.diags.AddAttributeError(path.Root("baseline"), "Invalid baseline document",
				fmt.Sprintf("baseline is not a schema v1 results document:\n%v\nGive an earlier run's results_json: file(\"baseline.json\"), the llmserve_capacity_report data source's results_json, or another benchmark's.", err))
		} else {
			cfg.Baseline = &capacity.Document{Document: doc}
		}
	}
	if k := r.fields(attrpath.Root("runner"), m.Runner)["kubernetes"]; k != nil {
		p := attrpath.Root("runner").At("kubernetes")
		pods := r.fields(p, k)["pods"]
		cfg.Pods, cfg.PodsSet = r.int(p.At("pods"), pods, 0), pods != nil && !pods.IsNull() && !pods.IsUnknown()
	}
	cfg.LoadTraces() // every line checked at plan; Validate reports a file that cannot be replayed
	return cfg, r.unknown, r.diags
}

// comparisonBudget is the planned trial.comparison_budget, null when unset.
func (m capacityBenchmarkModel) comparisonBudget() types.Int64 {
	if m.Trial.IsNull() || m.Trial.IsUnknown() {
		return types.Int64Null()
	}
	if v, ok := m.Trial.Attributes()["comparison_budget"].(types.Int64); ok {
		return v
	}
	return types.Int64Null()
}

// setComparison sets comparison: results_json compared with the baseline, exactly as
// provider::llmserve::compare(baseline, results_json) reads them; null without a baseline.
func (m *capacityBenchmarkModel) setComparison(ctx context.Context) diag.Diagnostics {
	m.Comparison = types.ObjectNull(comparisonAttrTypes)
	if m.Baseline.IsNull() {
		return nil
	}
	var diags diag.Diagnostics
	base, err := results.Parse([]byte(m.Baseline.ValueString()))
	if err != nil {
		diags.AddAttributeError(path.Root("baseline"), "Invalid baseline document", err.Error())
		return diags
	}
	doc, err := results.Parse([]byte(m.ResultsJSON.ValueString()))
	if err != nil {
		diags.AddError("Cannot read results_json back", err.Error())
		return diags
	}
	m.Comparison, diags = types.ObjectValueFrom(ctx, comparisonAttrTypes, comparisonValue(compare.Compare(base, doc, compare.Options{})))
	return diags
}

// valueReader reads Terraform values into domain values, noting the path of each value not
// known yet. It reads objects as their attribute values rather than into model structs:
// reflection into a struct would run a custom type's validation again, reporting it at a
// path relative to the object, and fill nothing at all when it fails.
type valueReader struct {
	ctx     context.Context
	unknown []attrpath.Path
	diags   diag.Diagnostics
}

// known says whether v has a value, noting p when it is unknown. A missing attribute (nil)
// is null.
func (r *valueReader) known(p attrpath.Path, v attr.Value) bool {
	if v == nil {
		return false
	}
	if v.IsUnknown() {
		r.unknown = append(r.unknown, p)
		return false
	}
	return !v.IsNull()
}

// fields are an object's attribute values; none when it is null or unknown, so that every
// attribute takes its default.
func (r *valueReader) fields(p attrpath.Path, o attr.Value) map[string]attr.Value {
	if obj, ok := o.(basetypes.ObjectValuable); ok && r.known(p, o) {
		v, d := obj.ToObjectValue(r.ctx)
		r.diags.Append(d...)
		return v.Attributes()
	}
	return nil
}

// elements are a list's elements, each of which may be unknown; none when it is null or
// unknown.
func (r *valueReader) elements(p attrpath.Path, l attr.Value) []attr.Value {
	if list, ok := l.(basetypes.ListValuable); ok && r.known(p, l) {
		v, d := list.ToListValue(r.ctx)
		r.diags.Append(d...)
		return v.Elements()
	}
	return nil
}

func (r *valueReader) str(p attrpath.Path, v attr.Value, def string) string {
	if s, ok := v.(basetypes.StringValuable); ok && r.known(p, v) {
		sv, d := s.ToStringValue(r.ctx)
		r.diags.Append(d...)
		return sv.ValueString()
	}
	return def
}

func (r *valueReader) int(p attrpath.Path, v attr.Value, def int) int {
	if i, ok := v.(basetypes.Int64Valuable); ok && r.known(p, v) {
		iv, d := i.ToInt64Value(r.ctx)
		r.diags.Append(d...)
		return int(iv.ValueInt64())
	}
	return def
}

func (r *valueReader) float(p attrpath.Path, v attr.Value) float64 { return r.floatOr(p, v, 0) }

// floatOr reads a number, or def when it is unset (or unknown): an attribute written as 0
// reaches the domain as 0, which its rules honour or refuse, never as the default.
func (r *valueReader) floatOr(p attrpath.Path, v attr.Value, def float64) float64 {
	if f, ok := v.(basetypes.Float64Valuable); ok && r.known(p, v) {
		fv, d := f.ToFloat64Value(r.ctx)
		r.diags.Append(d...)
		return fv.ValueFloat64()
	}
	return def
}

// duration reads a Go duration. One that does not parse is the attribute type's error,
// already reported at the attribute; the domain's rule is held back from it as from an
// unknown value, so the bad value gets one error, not two.
func (r *valueReader) duration(p attrpath.Path, v attr.Value, def time.Duration) time.Duration {
	d, ok := v.(durationValue)
	if !ok || !r.known(p, v) {
		return def
	}
	got, diags := d.ValueGoDuration()
	if diags.HasError() {
		r.unknown = append(r.unknown, p)
		return def
	}
	return got
}

// setResults fills the computed attributes from the results document.
func (m *capacityBenchmarkModel) setResults(ctx context.Context, doc *results.Document) diag.Diagnostics {
	var diags diag.Diagnostics
	raw, err := results.Marshal(doc)
	if err != nil {
		diags.AddError("Cannot encode results", err.Error())
		return diags
	}
	m.ResultsJSON = types.StringValue(string(raw))
	var d diag.Diagnostics
	m.MaximumPassingConcurrency, m.FirstFailingConcurrency, m.CapacityBoundedBySearch, d = boundaryMaps(doc)
	diags.Append(d...)
	open, d := openLoopMapValues(doc)
	diags.Append(d...)
	m.MaximumPassingRequestRate, m.FirstFailingRequestRate = open["maximum_passing_request_rate"], open["first_failing_request_rate"]
	m.MaximumPassingSpeedup, m.FirstFailingSpeedup = open["maximum_passing_speedup"], open["first_failing_speedup"]
	m.MaximumPassingUsers, m.FirstFailingUsers, d = usersMaps(doc)
	diags.Append(d...)
	m.WorkloadResults, d = workloadResultsValue(ctx, doc)
	diags.Append(d...)
	return diags
}
