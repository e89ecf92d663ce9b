package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// NewReportCSVFunction renders a results document as CSV, one row per confirmation trial.
func NewReportCSVFunction() function.Function {
	return &reportFunction{
		name:    "report_csv",
		summary: "Render a capacity result as CSV, one row per trial",
		description: "Renders a schema v1 results document as CSV with a header row and one row per " +
			"confirmation trial: workload, side (`passing`/`failing`), trial, concurrency, the SLO value " +
			"and verdict, every latency percentile, throughput and correctness counter. Numbers are " +
			"unrounded. Columns are only ever appended, so reading by position is safe.",
		render: results.CSV,
	}
}
