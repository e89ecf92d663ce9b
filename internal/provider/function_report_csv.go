package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// NewReportCSVFunction renders a results document as CSV, one row per trial.
func NewReportCSVFunction() function.Function {
	return &reportFunction{
		name:    "report_csv",
		summary: "Render a capacity result as CSV, one row per trial",
		description: "Renders a schema v1 results document as CSV with a header row and one row per " +
			"trial, every trial the search ran in the order it ran them (probes, those stopped early " +
			"included, and confirmation trials at every level; a document older than the list of every " +
			"trial gives its confirmation trials on both sides): workload, side (`passing`/`failing` for " +
			"the confirmation trials at the boundary, empty for the others), trial, concurrency, the " +
			"first objective's value and the verdict, every latency percentile, throughput and " +
			"correctness counter, `kind` (`probe`/`confirmation`), `stopped_early`, and for an open-loop " +
			"trial its `request_rate` (a replay's also its `speedup`; empty otherwise) and its guards: " +
			"`offered_rate`, `completion_rate`, `backlog_growth`, `backlog_allowance`, `kept_up` and " +
			"`missed_guards` (space-separated), and for a users trial (multi-turn conversations with think " +
			"time) its `users` and what it measured of the turns: `first_turn_ttft_ms_p50`/`_p95`, " +
			"`later_turn_ttft_ms_p50`/`_p95`, `in_flight_mean`, `in_flight_peak`, `context_tokens_max`, " +
			"`later_turn_cached_percent` and `turns_cached_beyond_history`. Numbers are " +
			"unrounded; a probe stopped early has metrics over the requests that finished. Columns are " +
			"only ever appended, so reading by position is safe.",
		render: results.CSV,
	}
}
