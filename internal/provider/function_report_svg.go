package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// NewReportSVGFunction renders a results document as an SVG chart.
func NewReportSVGFunction() function.Function {
	return &reportFunction{
		name:    "report_svg",
		summary: "Render a capacity result as an SVG chart",
		description: "Renders a schema v1 results document as a standalone SVG image: per workload, the " +
			"SLO's metric and percentile (for example p95 TTFT) of every confirmation trial against the " +
			"concurrency it ran at, the SLO threshold as a dashed line, passing-side trials as green dots " +
			"and failing-side trials as red crosses, with labelled axes and a legend.",
		render: results.SVG,
	}
}
