package provider

// How llmserve_capacity_benchmark plans and stores its results.

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// labelKeyedPlan is appended to the descriptions of the maps ModifyPlan plans by label.
const labelKeyedPlan = " Planned with one key per configured workload label (values known after apply), so a " +
	"misspelt label in a `postcondition` or `check` fails at plan, before any load is sent."

// ModifyPlan plans the per-label result maps with their keys, the configured labels, and
// unknown values: `self.maximum_passing_concurrency["typo"]` then fails at plan instead of
// after hours of load. Only a new measurement is planned this way; an in-place update keeps
// the stored result (UseStateForUnknown).
func (r *capacityBenchmarkResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.State.Raw.IsNull() {
		return
	}
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
	for name, elem := range map[string]attr.Type{
		"maximum_passing_concurrency": types.Int64Type,
		"first_failing_concurrency":   types.Int64Type,
		"capacity_bounded_by_search":  types.BoolType,
	} {
		values := make(map[string]attr.Value, len(labels))
		for _, l := range labels {
			values[l] = unknownOf(elem)
		}
		m, d := types.MapValue(elem, values)
		resp.Diagnostics.Append(d...)
		if d.HasError() {
			return
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(name), m)...)
	}
}

func unknownOf(t attr.Type) attr.Value {
	if t == types.BoolType {
		return types.BoolUnknown()
	}
	return types.Int64Unknown()
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
	m.WorkloadResults, d = workloadResultsValue(ctx, doc)
	diags.Append(d...)
	return diags
}
