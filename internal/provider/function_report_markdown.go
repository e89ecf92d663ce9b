package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// NewReportMarkdownFunction renders a results document as a Markdown report.
func NewReportMarkdownFunction() function.Function {
	return &reportFunction{
		name:    "report_markdown",
		summary: "Render a capacity result as a Markdown report",
		description: "Renders a schema v1 results document as Markdown: the setup (model, image, hardware, " +
			"load protocol), the SLO, a summary of the boundaries, and per workload a table of the " +
			"confirmation trials (TTFT p50/p95/p99, ITL p50, output and per-user throughput, verdict). " +
			"A search by rate or a replay by speed-up is told on its own axis: its boundary in requests/s " +
			"(a replay's speed-up with its rate), each trial's rate offered and completed, and a trial " +
			"that failed because the server did not keep up names the guard and its figures. " +
			"Numbers are rounded for reading (rates and speed-ups to 3 significant digits, more where two " +
			"levels would read the same); use `report_csv` for every digit.",
		render: results.Markdown,
	}
}
