package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// metricsMarkdown lists the metric table for the docs: name, unit, direction, computation.
func metricsMarkdown() string {
	var b strings.Builder
	for _, m := range results.Metrics() {
		better := "lower is better"
		if m.HigherIsBetter {
			better = "higher is better"
		}
		fmt.Fprintf(&b, "`%s` (%s, %s: %s)", m.Name, m.Unit, better, m.Computed)
		b.WriteString("; ")
	}
	return strings.TrimSuffix(b.String(), "; ")
}

func sloListAttribute() schema.Attribute {
	return schema.ListNestedAttribute{
		Required: true,
		MarkdownDescription: "The objectives every confirmation trial must meet, all at once (AIPerf's goodput SLOs are " +
			"the same idea). The boundary is the highest concurrency where every objective holds in every confirmation trial; " +
			"`results_json` records each trial's value of each objective and, per workload, which objectives bound the boundary.",
		PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"metric": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(results.MetricTTFT),
				MarkdownDescription: "Default `" + results.MetricTTFT + "`. One of: " + metricsMarkdown() + ".",
			},
			"percentile": schema.Float64Attribute{
				Optional: true,
				MarkdownDescription: "Percentile of the metric over a trial's successful measured requests, in (0, 100]; required for every metric " +
					"but `goodput`, which is one number per trial and takes none. Always of the values in ascending order, as numpy and " +
					"AIPerf compute it, whichever way the metric is better: for a latency p95 is the slow tail, but for " +
					"`output_token_throughput_per_user` p95 is the *fast* tail (95 % of users are at or below it). To demand that " +
					"95 % of users get at least 20 tokens/s, write `percentile = 5` with `threshold_ms = 20` (`greater_than`).",
			},
			"threshold_ms": schema.Float64Attribute{
				Required: true,
				MarkdownDescription: "Threshold in the metric's unit: milliseconds for the latencies, tokens per second for " +
					"`output_token_throughput_per_user`, percent for `goodput`. Must be greater than 0.",
			},
			"comparison": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "`strictly_less_than` (default for latencies) or `less_than_or_equal` where lower is better; " +
					"`greater_than` (default for `output_token_throughput_per_user` and `goodput`) or `greater_than_or_equal` where higher is better.",
				PlanModifiers: []planmodifier.String{comparisonDefault{}},
			},
		}},
	}
}

// comparisonDefault plans an unset comparison as its metric's default: a static default
// cannot, because the right one depends on whether the metric is better low or high.
type comparisonDefault struct{}

func (comparisonDefault) Description(context.Context) string {
	return "defaults to strictly_less_than for latencies and greater_than where higher is better"
}
func (c comparisonDefault) MarkdownDescription(ctx context.Context) string { return c.Description(ctx) }

func (comparisonDefault) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var metric types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, req.Path.ParentPath().AtName("metric"), &metric)...)
	switch {
	case metric.IsUnknown():
		resp.PlanValue = types.StringUnknown()
	case metric.IsNull():
		resp.PlanValue = types.StringValue(results.StrictlyLessThan)
	default:
		if m, ok := results.LookupMetric(metric.ValueString()); ok {
			resp.PlanValue = types.StringValue(m.DefaultComparison())
		}
	}
}
