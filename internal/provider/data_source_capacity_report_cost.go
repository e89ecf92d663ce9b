package provider

import (
	"context"
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The price is read with the result, not measured with it: a new price must not re-run
// hours of load, so it is an input of the report, not of the benchmark.

var costObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"accelerators":                             types.Int64Type,
	"output_tokens_per_second":                 types.Float64Type,
	"output_tokens_per_second_per_accelerator": types.Float64Type,
	"cost_per_million_output_tokens":           types.Float64Type,
	"cost_per_concurrent_user_hour":            types.Float64Type,
}}

type costValue struct {
	Accelerators                        *int64   `tfsdk:"accelerators"`
	OutputTokensPerSecond               *float64 `tfsdk:"output_tokens_per_second"`
	OutputTokensPerSecondPerAccelerator *float64 `tfsdk:"output_tokens_per_second_per_accelerator"`
	CostPerMillionOutputTokens          *float64 `tfsdk:"cost_per_million_output_tokens"`
	CostPerConcurrentUserHour           *float64 `tfsdk:"cost_per_concurrent_user_hour"`
}

func addCostAttributes(attrs map[string]schema.Attribute) {
	attrs["cost_per_hour"] = schema.Float64Attribute{
		Optional: true,
		MarkdownDescription: "What the measured deployment costs per hour, all its accelerators and replicas together, in " +
			"any currency; `cost` is then set. A price is read with the result, not measured: changing it re-runs nothing.",
		Validators: []validator.Float64{float64validator.AtLeast(0)},
	}
	attrs["accelerators"] = schema.Int64Attribute{
		Optional: true,
		MarkdownDescription: "Accelerators `cost_per_hour` pays for. Default: the document's `experiment.tensor_parallelism` " +
			"times its `replicas` (one accelerator per tensor-parallel rank).",
		Validators: []validator.Int64{int64validator.AtLeast(1), int64validator.AlsoRequires(path.MatchRoot("cost_per_hour"))},
	}
	attrs["results_json"] = schema.StringAttribute{
		Computed: true,
		MarkdownDescription: "The document as read, carrying the price when `cost_per_hour` is set (`price.per_hour`, `price.accelerators`: " +
			"additive schema v1 keys). Pass it to `provider::llmserve::report_markdown` or `report_openmetrics`, which render what " +
			"capacity costs (a Cost section; `llmserve_cost_per_million_output_tokens` and the like) whenever a document carries a price, " +
			"and the accelerators' energy figures whenever its trials carry them. Archive it to keep the price with the result.",
	}
	attrs["cost"] = schema.MapAttribute{
		Computed:    true,
		ElementType: costObjectType,
		MarkdownDescription: "Per workload label, what its capacity costs at the boundary (the confirmation trials at the " +
			"maximum passing concurrency); null without a price: `cost_per_hour`, else the document's own `price`. `accelerators`; `output_tokens_per_second` (mean " +
			"output throughput of those trials); `output_tokens_per_second_per_accelerator`; " +
			"`cost_per_million_output_tokens` = cost_per_hour / (output tokens per second × 3600) × 10⁶; " +
			"`cost_per_concurrent_user_hour` = cost_per_hour / maximum passing concurrency. A figure is null when its " +
			"inputs are unknown: no concurrency passed, no accelerator count.",
	}
}

// setCost sets m.Cost from the document and its price (m.CostPerHour, else the document's
// own), or null; and m.ResultsJSON, the document carrying that price, so that the report
// functions render what capacity costs.
func (m *capacityReportModel) setCost(ctx context.Context, doc *results.Document) diag.Diagnostics {
	var diags diag.Diagnostics
	m.Cost = types.MapNull(costObjectType)
	if !m.CostPerHour.IsNull() {
		doc.Price = &results.Price{PerHour: m.CostPerHour.ValueFloat64(), Accelerators: int(m.Accelerators.ValueInt64())}
	}
	raw, err := results.Marshal(doc)
	if err != nil {
		diags.AddError("Cannot write the results document", err.Error())
		return diags
	}
	m.ResultsJSON = types.StringValue(string(raw))
	if doc.Price == nil {
		return diags
	}
	out := map[string]costValue{}
	for _, c := range doc.Costs(*doc.Price) {
		if name, v := c.Overflow(); name != "" {
			// The figure is computed; the cause is the price it was computed from.
			at, price := path.Root("cost_per_hour"), fmt.Sprintf("cost_per_hour = %g", doc.Price.PerHour)
			if m.CostPerHour.IsNull() {
				at, price = path.Root("path"), fmt.Sprintf("the document's price.per_hour = %g", doc.Price.PerHour)
				if m.Path.IsNull() {
					at = path.Root("content")
				}
			}
			diags.AddAttributeError(at, "Price overflows",
				fmt.Sprintf("%s overflows: workload %q's %s (the price divided by its output throughput or its capacity) comes to %g, beyond the largest number a float64 holds (%g). "+
					"Give the price per hour in a unit that keeps it below that (for example thousands of the currency).", price, c.Label, name, v, math.MaxFloat64))
			return diags
		}
		v := costValue{OutputTokensPerSecond: c.OutputTokensPerSecond, OutputTokensPerSecondPerAccelerator: c.OutputTokensPerSecondPerAccelerator,
			CostPerMillionOutputTokens: c.CostPerMillionOutputTokens, CostPerConcurrentUserHour: c.CostPerConcurrentUserHour}
		if c.Accelerators > 0 {
			a := int64(c.Accelerators)
			v.Accelerators = &a
		}
		out[c.Label] = v
	}
	m.Cost, diags = types.MapValueFrom(ctx, costObjectType, out)
	return diags
}
