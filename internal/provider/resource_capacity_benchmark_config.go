package provider

// Validation and the translation of llmserve_capacity_benchmark's values into capacity.Config.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// ValidateConfig catches what single-attribute validators cannot: duplicate labels and
// inverted search bounds. Unknown values (from other resources) are checked at apply.
func (r *capacityBenchmarkResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var workloads types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("workloads"), &workloads)...)
	if !workloads.IsNull() && !workloads.IsUnknown() {
		// Elements may be unknown objects (built from another resource's attributes).
		var items []types.Object
		resp.Diagnostics.Append(workloads.ElementsAs(ctx, &items, false)...)
		seen := map[string]int{}
		for i, obj := range items {
			if obj.IsNull() || obj.IsUnknown() {
				continue
			}
			var w workloadModel
			resp.Diagnostics.Append(obj.As(ctx, &w, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
			validateWorkloadShape(path.Root("workloads").AtListIndex(i), w, &resp.Diagnostics)
			if w.Label.IsNull() || w.Label.IsUnknown() {
				continue
			}
			if first, dup := seen[w.Label.ValueString()]; dup {
				resp.Diagnostics.AddAttributeError(path.Root("workloads").AtListIndex(i).AtName("label"), "Duplicate workload label",
					fmt.Sprintf("workloads[%d].label: the label %q is already used by workloads[%d]. Labels key maximum_passing_concurrency and first_failing_concurrency, so each must be unique; rename one.", i, w.Label.ValueString(), first))
				continue
			}
			seen[w.Label.ValueString()] = i
		}
	}

	var slos types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("slos"), &slos)...)
	if !slos.IsNull() && !slos.IsUnknown() {
		var items []types.Object
		resp.Diagnostics.Append(slos.ElementsAs(ctx, &items, false)...)
		for i, obj := range items {
			if obj.IsNull() || obj.IsUnknown() {
				continue
			}
			var o sloModel
			resp.Diagnostics.Append(obj.As(ctx, &o, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
			resp.Diagnostics.Append(sloUnitSlips(path.Root("slos").AtListIndex(i), o)...)
		}
	}

	var minC, maxC types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("search").AtName("min_concurrency"), &minC)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("search").AtName("max_concurrency"), &maxC)...)
	lo, hi := int64(1), int64(64)
	if !minC.IsNull() && !minC.IsUnknown() {
		lo = minC.ValueInt64()
	}
	if !maxC.IsNull() && !maxC.IsUnknown() {
		hi = maxC.ValueInt64()
	}
	validateSLOsConfig(ctx, req.Config, &resp.Diagnostics)
	var recordsDir types.String
	var chunkTimes types.Bool
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("records_directory"), &recordsDir)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("record_chunk_times"), &chunkTimes)...)
	if chunkTimes.ValueBool() && recordsDir.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("record_chunk_times"), "Chunk times without records",
			"record_chunk_times adds chunk arrival times to the per-request records, which are only written with records_directory; set records_directory or remove record_chunk_times.")
	}
	var levels types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("search").AtName("concurrency_levels"), &levels)...)
	if !levels.IsNull() && (!minC.IsNull() || !maxC.IsNull()) {
		resp.Diagnostics.AddAttributeError(path.Root("search").AtName("concurrency_levels"), "Grid and search bounds both set",
			"search.concurrency_levels runs exactly the listed levels, so search.min_concurrency and search.max_concurrency would be ignored; remove them, or remove concurrency_levels to search between them.")
		return
	}
	if minC.IsUnknown() || maxC.IsUnknown() {
		return
	}
	if lo > hi {
		resp.Diagnostics.AddAttributeError(path.Root("search").AtName("min_concurrency"), "Search bounds inverted",
			fmt.Sprintf("search.min_concurrency (%d) is greater than search.max_concurrency (%d); lower min_concurrency or raise max_concurrency.", lo, hi))
	}
}

// sloUnitSlips warns about values that are valid but almost certainly a slip of units, with
// the likely intent: a percentile written as a fraction, a latency threshold written in
// seconds. Both would otherwise measure for hours against an objective nobody meant.
func sloUnitSlips(p path.Path, o sloModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if pct := o.Percentile; !pct.IsNull() && !pct.IsUnknown() && pct.ValueFloat64() > 0 && pct.ValueFloat64() < 1 {
		v := pct.ValueFloat64()
		diags.AddAttributeWarning(p.AtName("percentile"), "Percentile below 1",
			fmt.Sprintf("percentile = %g asks for p%g, almost the fastest request of each trial: percentiles are on a 0-100 scale. Did you mean %g (p%g)?", v, v, v*100, v*100))
	}
	metric := o.Metric.ValueString()
	if o.Metric.IsNull() {
		metric = results.MetricTTFT // the attribute's default
	}
	if th := o.ThresholdMs; !th.IsNull() && !th.IsUnknown() && th.ValueFloat64() > 0 && th.ValueFloat64() < 50 &&
		(metric == results.MetricTTFT || metric == results.MetricRequestLatency) {
		v := th.ValueFloat64()
		diags.AddAttributeWarning(p.AtName("threshold_ms"), "Latency threshold below 50 ms",
			fmt.Sprintf("threshold_ms = %g demands a %s under %g ms: thresholds are in milliseconds. Did you mean %g s (threshold_ms = %g)?", v, strings.ReplaceAll(metric, "_", " "), v, v, v*1000))
	}
	return diags
}

// capacityConfig translates the planned values into the domain configuration.
func (m capacityBenchmarkModel) capacityConfig(ctx context.Context) (capacity.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	var workloads []workloadModel
	var slos []sloModel
	var search searchModel
	var trial trialModel
	diags.Append(m.Workloads.ElementsAs(ctx, &workloads, false)...)
	diags.Append(m.SLOs.ElementsAs(ctx, &slos, false)...)
	diags.Append(m.Search.As(ctx, &search, basetypes.ObjectAsOptions{})...)
	diags.Append(m.Trial.As(ctx, &trial, basetypes.ObjectAsOptions{})...)
	if diags.HasError() {
		return capacity.Config{}, diags
	}
	// Validated at plan time; unknown or null values fall back to the defaults (zero).
	stall, _ := time.ParseDuration(trial.StallTimeout.ValueString())
	total, _ := time.ParseDuration(trial.RequestTimeout.ValueString())
	cfg := capacity.Config{
		StallTimeout:       stall,
		RequestTimeout:     total,
		Endpoint:           m.Endpoint.ValueString(),
		Model:              m.Model.ValueString(),
		API:                m.API.ValueString(),
		MinConcurrency:     int(search.MinConcurrency.ValueInt64()),
		MaxConcurrency:     int(search.MaxConcurrency.ValueInt64()),
		ConcurrencyLevels:  levelsOf(ctx, search.ConcurrencyLevels, &diags),
		WarmupRequests:     int(trial.WarmupRequests.ValueInt64()),
		MeasuredRequests:   int(trial.MeasuredRequests.ValueInt64()),
		ConfirmationTrials: int(trial.ConfirmationTrials.ValueInt64()),
		CacheFlush:         trial.CacheFlush.ValueString(),
		RecordsDirectory:   m.RecordsDir.ValueString(),
		RecordChunkTimes:   m.ChunkTimes.ValueBool(),
		Seed:               1,
	}
	for _, s := range slos {
		cfg.SLOs = append(cfg.SLOs, s.domain())
	}
	for _, w := range workloads {
		cfg.Workloads = append(cfg.Workloads, capacity.Workload{
			Label:              w.Label.ValueString(),
			InputTokens:        int(w.InputTokens.ValueInt64()),
			OutputTokens:       int(w.OutputTokens.ValueInt64()),
			InputTokensStddev:  w.InputTokensStddev.ValueFloat64(),
			OutputTokensStddev: w.OutputTokensStddev.ValueFloat64(),
			SharedPrefixTokens: int(w.SharedPrefixTokens.ValueInt64()),
		})
	}
	exp, d := experimentFromObject(ctx, m.Experiment)
	diags.Append(d...)
	cfg.Experiment = exp
	if !m.Triggers.IsNull() && !m.Triggers.IsUnknown() {
		// A changed trigger is a new measurement, never a replay (capacity keys the journal by it).
		diags.Append(m.Triggers.ElementsAs(ctx, &cfg.Triggers, false)...)
	}
	if err := cfg.Validate(); err != nil {
		diags.AddError("Invalid capacity benchmark configuration", err.Error())
	}
	return cfg, diags
}

// validateWorkloadShape checks what one attribute cannot: a shared prefix is part of the
// prompt, so it must be shorter than input_tokens, and a spread wider than its mean length
// would clip most draws at 1.
func validateWorkloadShape(p path.Path, w workloadModel, diags *diag.Diagnostics) {
	in, out := w.InputTokens, w.OutputTokens
	if pre := w.SharedPrefixTokens; !pre.IsNull() && !pre.IsUnknown() && !in.IsNull() && !in.IsUnknown() && pre.ValueInt64() >= in.ValueInt64() {
		diags.AddAttributeError(p.AtName("shared_prefix_tokens"), "Shared prefix as long as the prompt",
			fmt.Sprintf("shared_prefix_tokens (%d) counts within input_tokens (%d) and must be below it, leaving each prompt a part of its own; lower shared_prefix_tokens or raise input_tokens.",
				pre.ValueInt64(), in.ValueInt64()))
	}
	for _, sd := range []struct {
		name string
		v    types.Float64
		mean types.Int64
	}{{"input_tokens_stddev", w.InputTokensStddev, in}, {"output_tokens_stddev", w.OutputTokensStddev, out}} {
		if sd.v.IsNull() || sd.v.IsUnknown() || sd.mean.IsNull() || sd.mean.IsUnknown() {
			continue
		}
		if sd.v.ValueFloat64() > float64(sd.mean.ValueInt64()) {
			diags.AddAttributeError(p.AtName(sd.name), "Length spread wider than the length",
				fmt.Sprintf("%s (%g) is above the mean length (%d): most draws would be clipped at 1 token; give at most the mean.", sd.name, sd.v.ValueFloat64(), sd.mean.ValueInt64()))
		}
	}
}

// levelsOf reads search.concurrency_levels; nil when unset.
func levelsOf(ctx context.Context, l types.List, diags *diag.Diagnostics) []int {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var vs []int64
	diags.Append(l.ElementsAs(ctx, &vs, false)...)
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out
}
