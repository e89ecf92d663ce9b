package provider

// How llmserve_capacity_benchmark checks its configuration and plans its results.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
)

// ValidateConfig applies capacity.Config.Validate to the values known at plan. A problem
// that reads a value known only at apply (built from another resource) waits: Terraform
// validates again once it is known, and Create checks the same rule before sending anything.
func (r *capacityBenchmarkResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m capacityBenchmarkModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg, unknown, diags := m.capacityConfig(ctx)
	resp.Diagnostics.Append(diags...)
	problems := cfg.Validate()
	resp.Diagnostics.Append(problemDiagnostics(problems, benchmarkProblem, unknown, true)...)
	if limit, ok := createTimeout(ctx, m.Timeouts); ok && capacity.Err(problems) == nil && !resp.Diagnostics.HasError() && !shapeUnknown(unknown) {
		budget := capacity.Budget{Limit: limit, Detached: !m.Runner.IsNull()}
		resp.Diagnostics.Append(problemDiagnostics(cfg.CheckTime(budget), benchmarkProblem, nil, true)...)
	}

	if !m.ProgressFile.IsUnknown() && !m.ProgressLog.IsUnknown() {
		var fileErr *capacity.FileError
		if err := (capacity.Files{ProgressFile: m.ProgressFile.ValueString(), ProgressLog: m.ProgressLog.ValueString()}).Check(); errors.As(err, &fileErr) {
			resp.Diagnostics.AddAttributeError(attributePath(fileErr.Path), "Progress log and journal in one file", err.Error())
		}
	}
	if !m.Runner.IsNull() && !m.Runner.IsUnknown() {
		checkRunnerPlace(m.Runner, resp)
		checkRunnerSettings(m.Runner, resp)
		checkRunnerEndpoints(m.Runner, cfg, resp)
		checkRunnerPlacement(ctx, m.Runner, resp)
		for i, w := range cfg.Workloads {
			if w.TraceFile != "" {
				resp.Diagnostics.AddAttributeError(path.Root("workloads").AtListIndex(i).AtName("trace").AtName("file"), "Trace replay with a runner",
					"A runner does not carry trace files to the engine host yet; replay this trace from where Terraform runs (remove runner) or measure synthetic workloads with the runner.")
			}
		}
	}
	if msg, bad := arrivalWithoutRate(m.Arrival, m.Search); bad {
		resp.Diagnostics.AddAttributeError(path.Root("arrival"), "Arrival without a rate search", msg)
	}
	// Whether an attribute was written at all is Terraform's to know, not the domain's: the
	// planned bounds always hold their defaults.
	if !m.Search.IsNull() && !m.Search.IsUnknown() {
		f := m.Search.Attributes()
		if rate, speedup := f["rate"], f["speedup"]; rate != nil && speedup != nil && !rate.IsNull() && !speedup.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("search").AtName("speedup"), "Two searches",
				"search.speedup replays recorded traces and search.rate drives synthetic prompts at a rate; a benchmark searches one: remove one of them.")
		}
		for _, axis := range []string{"rate", "speedup"} {
			if v := f[axis]; v == nil || v.IsNull() {
				continue
			}
			for _, bound := range []string{"min_concurrency", "max_concurrency"} {
				if v := f[bound]; v != nil && !v.IsNull() {
					resp.Diagnostics.AddAttributeError(path.Root("search").AtName(bound), "Concurrency bound beside a "+axis+" search",
						fmt.Sprintf("search.%s bounds a concurrency search, and search.%s searches %s instead, so it would be ignored: remove search.%s, or remove search.%s to search concurrency.",
							bound, axis, map[string]string{"rate": "the request rate", "speedup": "a trace's speedup"}[axis], bound, axis))
				}
			}
		}
		if !f["concurrency_levels"].IsNull() && (!f["min_concurrency"].IsNull() || !f["max_concurrency"].IsNull()) {
			resp.Diagnostics.AddAttributeError(path.Root("search").AtName("concurrency_levels"), "Grid and search bounds both set",
				"search.concurrency_levels runs exactly the listed levels, so search.min_concurrency and search.max_concurrency would be ignored; remove them, or remove concurrency_levels to search between them.")
		}
	}
}

// createTimeout is timeouts.create as configured, or the default; ok is false while it is
// unknown or does not parse (its own validator says so).
func createTimeout(ctx context.Context, t timeouts.Value) (time.Duration, bool) {
	if t.IsUnknown() {
		return 0, false
	}
	if !t.IsNull() {
		if v, ok := t.Attributes()["create"]; ok && v.IsUnknown() {
			return 0, false
		}
	}
	limit, diags := t.Create(ctx, defaultBenchmarkTimeout)
	return limit, !diags.HasError()
}

// shapeUnknown says whether a setting that decides how long a trial waits (workloads, search,
// trial) is not known yet.
func shapeUnknown(unknown []attrpath.Path) bool {
	for _, u := range unknown {
		for _, root := range []string{"workloads", "search", "trial", "arrival"} {
			if u.Within(attrpath.Root(root)) || attrpath.Root(root).Within(u) {
				return true
			}
		}
	}
	return false
}

// labelKeyedPlan is appended to the descriptions of the maps ModifyPlan plans by label.
const labelKeyedPlan = " Planned with one key per configured workload label (values known after apply), so a " +
	"misspelt label in a `postcondition` or `check` fails at plan, before any load is sent."

// ModifyPlan plans the per-label result maps with their keys, the configured labels, and
// unknown values: `self.maximum_passing_concurrency["typo"]` then fails at plan instead of
// after hours of load. Only a new measurement is planned this way; an in-place update keeps
// the stored result (UseStateForUnknown).
func (r *capacityBenchmarkResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	r.planComparison(ctx, req, resp)
	if !req.State.Raw.IsNull() {
		return
	}
	var runnerValue types.Object
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("runner"), &runnerValue)...)
	r.checkRunnerImage(ctx, capacityBenchmarkModel{Runner: runnerValue}, resp)
	var workloads types.List
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("workloads"), &workloads)...)
	if resp.Diagnostics.HasError() || workloads.IsNull() || workloads.IsUnknown() {
		return
	}
	var items []types.Object
	resp.Diagnostics.Append(workloads.ElementsAs(ctx, &items, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	labels := make([]string, 0, len(items))
	for _, obj := range items {
		if obj.IsNull() || obj.IsUnknown() {
			return
		}
		label, ok := obj.Attributes()["label"].(types.String)
		if !ok || label.IsNull() || label.IsUnknown() {
			return // a label known only at apply: the maps stay wholly unknown
		}
		labels = append(labels, label.ValueString())
	}
	for _, name := range []string{"maximum_passing_concurrency", "first_failing_concurrency", "capacity_bounded_by_search",
		"maximum_passing_request_rate", "first_failing_request_rate", "maximum_passing_speedup", "first_failing_speedup",
		"maximum_passing_users", "first_failing_users"} {
		// The element type is the schema's; an unknown of it is what the map holds per label.
		elem := req.Plan.Schema.GetAttributes()[name].GetType().(attr.TypeWithElementType).ElementType()
		unknown, err := elem.ValueFromTerraform(ctx, tftypes.NewValue(elem.TerraformType(ctx), tftypes.UnknownValue))
		if err != nil {
			resp.Diagnostics.AddError("Cannot plan "+name, err.Error())
			return
		}
		values := make(map[string]attr.Value, len(labels))
		for _, l := range labels {
			values[l] = unknown
		}
		m, d := types.MapValue(elem, values)
		resp.Diagnostics.Append(d...)
		if d.HasError() {
			return
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(name), m)...)
	}
}

// planComparison plans comparison: null without a baseline; unknown when the comparison will
// be measured (a new benchmark, or another baseline or comparison_budget, which also adds
// trials to results_json and workload_results); else the stored one.
func (r *capacityBenchmarkResource) planComparison(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var plan capacityBenchmarkModel
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("baseline"), &plan.Baseline)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("trial"), &plan.Trial)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Baseline.IsNull() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("comparison"), types.ObjectNull(comparisonAttrTypes))...)
	}
	if req.State.Raw.IsNull() {
		return
	}
	var state capacityBenchmarkModel
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("baseline"), &state.Baseline)...)
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("trial"), &state.Trial)...)
	if resp.Diagnostics.HasError() || !comparisonChanged(plan, state) {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("results_json"), types.StringUnknown())...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("workload_results"), types.ListUnknown(req.Plan.Schema.GetAttributes()["workload_results"].GetType().(attr.TypeWithElementType).ElementType()))...)
	if !plan.Baseline.IsNull() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("comparison"), types.ObjectUnknown(comparisonAttrTypes))...)
	}
}
