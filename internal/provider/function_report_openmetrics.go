package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// NewReportOpenMetricsFunction renders a results document as Prometheus/OpenMetrics text.
func NewReportOpenMetricsFunction() function.Function {
	return &reportFunction{
		name:    "report_openmetrics",
		summary: "Render a capacity result as OpenMetrics (Prometheus) text",
		description: "Renders a schema v1 results document as gauges in the text exposition format, " +
			"readable by Prometheus (for example through the node exporter's textfile collector) and by " +
			"OpenMetrics parsers. Gauges are named `llmserve_*`: the capacity boundaries per `workload`, " +
			"and per confirmation trial (labels `workload`, `side` = `passing`|`failing`, `trial`) its " +
			"concurrency, SLO verdict, latency percentiles in seconds (label `percentile`, e.g. `\"95\"`; " +
			"Prometheus reserves `quantile` for summaries), throughput and error counts. A search by rate adds " +
			"`llmserve_maximum_passing_requests_per_second`, `llmserve_first_failing_requests_per_second` and " +
			"each trial's `llmserve_trial_requests_per_second`, `llmserve_trial_offered_requests_per_second`, " +
			"`llmserve_trial_completed_requests_per_second`, `llmserve_trial_backlog_growth_requests` and " +
			"`llmserve_trial_kept_up`; a replay by speedup `llmserve_maximum_passing_speedup`, " +
			"`llmserve_first_failing_speedup` and `llmserve_trial_speedup`. `promtool check " +
			"metrics` reports nothing on it. With a second argument, an RFC 3339 time, every sample is " +
			"stamped with it, so an archived result can be backfilled: `promtool tsdb create-blocks-from " +
			"openmetrics` reads the stamped text.",
		render:   results.OpenMetrics,
		renderAt: results.OpenMetricsAt,
	}
}
