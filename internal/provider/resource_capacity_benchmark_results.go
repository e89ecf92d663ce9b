package provider

// How llmserve_capacity_benchmark plans and stores its results.

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

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
	for _, name := range []string{"maximum_passing_concurrency", "first_failing_concurrency", "capacity_bounded_by_search",
		"maximum_passing_request_rate", "first_failing_request_rate", "maximum_passing_speedup", "first_failing_speedup"} {
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
	m.WorkloadResults, d = workloadResultsValue(ctx, doc)
	diags.Append(d...)
	return diags
}
