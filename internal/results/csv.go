package results

import (
	"encoding/csv"
	"strconv"
	"strings"
)

// CSVHeader is the header row of CSV. Columns are only ever appended, so spreadsheets and
// scripts that read by position keep working across versions.
var CSVHeader = []string{
	"workload", "configured_isl", "configured_osl", "side", "trial", "concurrency",
	"slo_value_ms", "verdict",
	"ttft_ms_p50", "ttft_ms_p95", "ttft_ms_p99",
	"request_latency_ms_p50", "request_latency_ms_p95", "request_latency_ms_p99",
	"itl_ms_p50", "itl_ms_p95", "itl_ms_p99",
	"output_throughput_tps",
	"per_user_output_throughput_tps_avg", "per_user_output_throughput_tps_p50", "per_user_output_throughput_tps_p95",
	"request_throughput_rps", "benchmark_duration_s",
	"server_prompt_tokens_min", "server_prompt_tokens_max",
	"server_completion_tokens_min", "server_completion_tokens_max",
	"warmup_records", "unique_warmup_prompts", "warmup_profile_prompt_overlap", "profiling_records",
	"http_200", "unique_prompts", "unique_outputs", "generated_chunks", "generated_utf8_bytes",
	"completion_tokens_total", "finish_reason_length", "errors", "cancelled", "output_length_mismatches",
	"kind", "stopped_early",
	"request_rate", "speedup",
	"offered_rate", "completion_rate", "backlog_growth", "backlog_allowance", "kept_up", "missed_guards",
	"users", "first_turn_ttft_ms_p50", "first_turn_ttft_ms_p95", "later_turn_ttft_ms_p50", "later_turn_ttft_ms_p95",
	"in_flight_mean", "in_flight_peak", "context_tokens_max", "later_turn_cached_percent", "turns_cached_beyond_history",
}

// CSV renders one row per trial, every number as recorded (unrounded): every entry of a
// workload's trials in the order they ran (probes, stopped early or not, and confirmation
// trials at every level), or for a document older than that list its confirmation trials
// on both sides. side is passing or failing for the confirmation trials at the boundary,
// empty for the others. Unknown values (no concurrency, an SLO the trial cannot be judged
// by) are empty cells. An open-loop trial states its request_rate (and a replay's trial its
// speedup) with the figures of its guards, and its side says whether that rate is the
// maximum passing or the first failing.
func CSV(d *Document) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	// Writes to a strings.Builder cannot fail, so the writer's errors need no handling.
	_ = w.Write(CSVHeader)
	for _, wl := range d.Workloads {
		for _, st := range everyTrial(wl) {
			t := st.Trial
			conc, sloValue := "", ""
			if st.Concurrency != 0 {
				conc = strconv.Itoa(st.Concurrency)
			}
			// slo_value_ms is the first objective's value, as the column always was.
			if objs := d.Objectives(); len(objs) > 0 {
				if v, err := objs[0].Value(t); err == nil {
					sloValue = formatFloat(v)
				}
			}
			c := t.Correctness
			f, i := formatFloat, strconv.Itoa
			_ = w.Write(append([]string{
				csvText(wl.Label), i(wl.ConfiguredISL), i(wl.ConfiguredOSL), string(st.Side), i(t.Trial), conc,
				sloValue, Verdict(d.Objectives(), t),
				f(t.TTFTMs.P50), f(t.TTFTMs.P95), f(t.TTFTMs.P99),
				f(t.RequestLatencyMs.P50), f(t.RequestLatencyMs.P95), f(t.RequestLatencyMs.P99),
				f(t.ITLMs.P50), f(t.ITLMs.P95), f(t.ITLMs.P99),
				f(t.OutputThroughputTPS),
				f(t.PerUserOutputThroughputTPS.Avg), f(t.PerUserOutputThroughputTPS.P50), f(t.PerUserOutputThroughputTPS.P95),
				f(t.RequestThroughputRPS), f(t.BenchmarkDurationS),
				f(t.ServerPromptTokens.Min), f(t.ServerPromptTokens.Max),
				f(t.ServerCompletionTokens.Min), f(t.ServerCompletionTokens.Max),
				i(c.WarmupRecords), i(c.UniqueWarmupPrompts), i(c.WarmupProfilePromptOverlap), i(c.ProfilingRecords),
				i(c.HTTP200), i(c.UniquePrompts), i(c.UniqueOutputs), i(c.GeneratedChunks), i(c.GeneratedUTF8Bytes),
				i(c.CompletionTokensTotal), i(c.FinishReasonLength), i(c.Errors), strconv.FormatBool(c.Cancelled), f(c.OutputLengthMismatches),
				kindOf(t), strconv.FormatBool(t.StoppedEarly),
				optional(t.RequestRate), optional(t.Speedup),
			}, append(openLoopCells(t.OpenLoop), conversationCells(t)...)...))
		}
	}
	w.Flush()
	return b.String()
}

// everyTrial is every trial of the workload with its side: the list of every trial when the
// document has one (side set for the confirmation trials at the boundary), else the two
// sides' confirmation trials.
func everyTrial(w Workload) []SideTrial {
	if len(w.AllTrials) == 0 {
		return w.Trials()
	}
	out := make([]SideTrial, 0, len(w.AllTrials))
	for _, t := range w.AllTrials {
		st := SideTrial{Concurrency: t.Concurrency, Trial: t}
		if t.Kind != "probe" {
			switch {
			case t.RequestRate > 0 && w.MaximumPassingRequestRate != nil && t.RequestRate == *w.MaximumPassingRequestRate:
				st.Side = SidePassing
			case t.RequestRate > 0 && w.FirstFailingRequestRate != nil && t.RequestRate == *w.FirstFailingRequestRate:
				st.Side = SideFailing
			case t.RequestRate > 0:
			case t.Users > 0 && w.MaximumPassingUsers != nil && t.Users == *w.MaximumPassingUsers:
				st.Side = SidePassing
			case t.Users > 0 && w.FirstFailingUsers != nil && t.Users == *w.FirstFailingUsers:
				st.Side = SideFailing
			case t.Users > 0:
			case w.MaximumPassingConcurrency != nil && t.Concurrency == *w.MaximumPassingConcurrency:
				st.Side = SidePassing
			case w.FirstFailingConcurrency != nil && t.Concurrency == *w.FirstFailingConcurrency:
				st.Side = SideFailing
			}
		}
		out = append(out, st)
	}
	return out
}

// openLoopCells are an open-loop trial's guards: the rate it offered and the rate the server
// completed, the backlog's growth and its allowance, whether it kept up and the guards it
// missed (space-separated); empty cells for a closed-loop trial.
func openLoopCells(o *OpenLoopTrial) []string {
	if o == nil {
		return []string{"", "", "", "", "", ""}
	}
	return []string{formatFloat(o.OfferedRate), formatFloat(o.CompletionRate), formatFloat(o.BacklogGrowth), formatFloat(o.BacklogAllowance),
		strconv.FormatBool(o.KeptUp), strings.Join(o.Missed, " ")}
}

// conversationCells are a users trial's users and what it measured of its conversations'
// turns; empty cells for other trials (and for a cached share the server did not report).
func conversationCells(t Trial) []string {
	c := t.Conversations
	if c == nil {
		return []string{optional(float64(t.Users)), "", "", "", "", "", "", "", "", ""}
	}
	f, i := formatFloat, strconv.Itoa
	cached := ""
	if p := c.LaterTurnCachedPercent; p != nil {
		cached = f(*p)
	}
	return []string{optional(float64(t.Users)), f(c.FirstTurnTTFTP50Ms), f(c.FirstTurnTTFTP95Ms), f(c.LaterTurnTTFTP50Ms), f(c.LaterTurnTTFTP95Ms),
		f(c.InFlightMean), i(c.InFlightPeak), i(c.ContextTokensMax), cached, i(c.TurnsCachedBeyondHistory)}
}

// optional is a number that is 0 when absent, as an empty cell then.
func optional(v float64) string {
	if v == 0 {
		return ""
	}
	return formatFloat(v)
}

// kindOf is the trial's kind; a confirmation trial of a document that does not say.
func kindOf(t Trial) string {
	if t.Kind == "" {
		return "confirmation"
	}
	return t.Kind
}

// csvText neutralises a text cell a spreadsheet would run as a formula (=, +, -, @, or a
// tab or carriage return first) with a leading apostrophe, as OWASP advises for CSV export.
// Numbers are written by the renderer and never start that way: Parse refuses negative ones.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
