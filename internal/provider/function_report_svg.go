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
		description: "Renders a schema v1 results document as a standalone SVG image: per workload and per " +
			"objective (one panel each, a row per workload when there are several objectives), the " +
			"objective's value (for example p95 TTFT) in every trial against the level it ran at (its " +
			"concurrency; for a search by rate the offered request rate, for a replay the trace's " +
			"speed-up), the objective's threshold as a dashed line, trials that met it as green dots and " +
			"those that missed it as red crosses, an open-loop trial that met it while the server did not " +
			"keep up with the rate as a red diamond, probes as rings, and a probe stopped early as a lower " +
			"bound (an arrow up from its value). Every trial sits at its own level, without horizontal " +
			"spread; the image is as wide as its longest line of text, so nothing is cut.",
		render: results.SVG,
	}
}
