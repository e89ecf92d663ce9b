package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// OpenMetrics renders the document as gauges in the text exposition format that both
// Prometheus (text 0.0.4) and OpenMetrics parsers read, ending with "# EOF". Latencies are
// in seconds, Prometheus' base unit; trial series carry workload, side and trial labels, and
// a percentile label ("95") where a gauge is one percentile of a distribution (Prometheus
// reserves "quantile" for summaries, and promtool check metrics says so).
func OpenMetrics(d *Document) string { return openMetrics(d, "") }

// OpenMetricsAt is OpenMetrics with every sample stamped at, in OpenMetrics' seconds since the
// epoch, so an archived result can be backfilled into Prometheus (promtool tsdb
// create-blocks-from openmetrics) at the time it was measured. Prometheus' own text format
// reads timestamps in milliseconds: serve the stamped text as OpenMetrics, or backfill it.
func OpenMetricsAt(d *Document, at time.Time) string {
	return openMetrics(d, strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', -1, 64))
}

func openMetrics(d *Document, stamp string) string {
	var b strings.Builder
	family := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	sample := func(name string, v float64, labels ...string) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i := 0; i+1 < len(labels); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `%s="%s"`, labels[i], escapeLabel(labels[i+1]))
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(promFloat(v))
		if stamp != "" {
			b.WriteByte(' ')
			b.WriteString(stamp)
		}
		b.WriteByte('\n')
	}

	e := d.Experiment
	family("llmserve_experiment_info", "What was measured; the value is always 1.")
	sample("llmserve_experiment_info", 1, "model", e.Model, "checkpoint", e.Checkpoint, "image_tag", e.ImageTag,
		"image_digest", e.ImageDigest, "hardware", e.Hardware, "tensor_parallelism", strconv.Itoa(e.TensorParallelism))

	// Latency thresholds in seconds, as Prometheus wants durations; the others (tokens/s,
	// percent) in their own unit, which the unit label names.
	var timed, untimed []SLO
	for _, s := range d.Objectives() {
		if s.Unit() == "ms" {
			timed = append(timed, s)
		} else {
			untimed = append(untimed, s)
		}
	}
	if len(timed) > 0 {
		family("llmserve_slo_threshold_seconds", "Threshold of a latency objective every trial is judged by.")
		for _, s := range timed {
			sample("llmserve_slo_threshold_seconds", s.ThresholdMs/1000, "metric", s.Metric,
				"percentile", formatFloat(s.Percentile), "comparison", s.Comparison)
		}
	}
	if len(untimed) > 0 {
		family("llmserve_slo_threshold", "Threshold of a throughput or goodput objective every trial is judged by, in the unit its label names.")
		for _, s := range untimed {
			l := []string{"metric", s.Metric, "unit", s.Unit(), "comparison", s.Comparison}
			if !s.Info().PerTrial {
				l = append(l, "percentile", formatFloat(s.Percentile))
			}
			sample("llmserve_slo_threshold", s.ThresholdMs, l...)
		}
	}

	type workloadGauge struct {
		name, help string
		value      func(Workload) (float64, bool)
	}
	boundary := func(c *int) (float64, bool) {
		if c == nil {
			return 0, false
		}
		return float64(*c), true
	}
	rate := func(r *float64) (float64, bool) {
		if r == nil {
			return 0, false
		}
		return *r, true
	}
	gauges := []workloadGauge{
		{"llmserve_maximum_passing_concurrency", "Highest concurrency at which every confirmation trial met the SLO; absent when even the lowest failed.",
			func(w Workload) (float64, bool) { return boundary(w.MaximumPassingConcurrency) }},
		{"llmserve_first_failing_concurrency", "Lowest concurrency above the maximum passing one at which a confirmation trial missed the SLO; absent when none failed within the bounds.",
			func(w Workload) (float64, bool) { return boundary(w.FirstFailingConcurrency) }},
		{"llmserve_configured_input_tokens", "Configured input sequence length of the workload.",
			func(w Workload) (float64, bool) { return float64(w.ConfiguredISL), true }},
		{"llmserve_configured_output_tokens", "Configured output sequence length of the workload.",
			func(w Workload) (float64, bool) { return float64(w.ConfiguredOSL), true }},
	}
	// The open-loop boundary, only in documents of a search by rate (or a replay by speedup),
	// so that a concurrency search's exposition is unchanged.
	byRate, bySpeedup, conversations := false, false, false
	for _, w := range d.Workloads {
		byRate, bySpeedup = byRate || w.byRate(), bySpeedup || w.bySpeedup()
		for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
			for _, t := range ts {
				conversations = conversations || t.Conversations != nil
			}
		}
	}
	users := false
	for _, w := range d.Workloads {
		users = users || w.byUsers()
	}
	if users {
		gauges = append(gauges,
			workloadGauge{"llmserve_maximum_passing_users", "Most users (each holding multi-turn conversations with think time) at which every confirmation trial met the SLO; absent when even the lowest failed.",
				func(w Workload) (float64, bool) { return boundary(w.MaximumPassingUsers) }},
			workloadGauge{"llmserve_first_failing_users", "Fewest users above the maximum passing ones at which a confirmation trial missed the SLO; absent when none failed within the bounds.",
				func(w Workload) (float64, bool) { return boundary(w.FirstFailingUsers) }})
	}
	if byRate {
		gauges = append(gauges,
			workloadGauge{"llmserve_maximum_passing_requests_per_second", "Highest request rate at which every confirmation trial met the SLO and kept up; absent when even the lowest failed.",
				func(w Workload) (float64, bool) { return rate(w.MaximumPassingRequestRate) }},
			workloadGauge{"llmserve_first_failing_requests_per_second", "Lowest request rate above the maximum passing one at which a confirmation trial failed; absent when none failed within the bounds.",
				func(w Workload) (float64, bool) { return rate(w.FirstFailingRequestRate) }})
	}
	if bySpeedup {
		gauges = append(gauges,
			workloadGauge{"llmserve_maximum_passing_speedup", "Highest speedup of the recorded trace at which every confirmation trial met the SLO and kept up: how many times the recorded traffic the deployment holds.",
				func(w Workload) (float64, bool) { return rate(w.MaximumPassingSpeedup) }},
			workloadGauge{"llmserve_first_failing_speedup", "Lowest speedup of the recorded trace above the maximum passing one at which a confirmation trial failed.",
				func(w Workload) (float64, bool) { return rate(w.FirstFailingSpeedup) }})
	}
	for _, g := range gauges {
		family(g.name, g.help)
		for _, w := range d.Workloads {
			if v, ok := g.value(w); ok {
				sample(g.name, v, "workload", w.Label)
			}
		}
	}

	// Every trial series; a family's samples must be contiguous in the text format.
	type trialRow struct {
		w  Workload
		st SideTrial
	}
	var rows []trialRow
	for _, w := range d.Workloads {
		for _, st := range w.Trials() {
			rows = append(rows, trialRow{w, st})
		}
	}
	each := func(name, help string, emit func(r trialRow, labels []string)) {
		family(name, help)
		for _, r := range rows {
			emit(r, []string{"workload", r.w.Label, "side", string(r.st.Side), "trial", strconv.Itoa(r.st.Trial.Trial)})
		}
	}
	quantiles := func(name string, p func(Trial) Stats) func(trialRow, []string) {
		return func(r trialRow, l []string) {
			ps := p(r.st.Trial)
			sample(name, ps.P50/1000, append(l, "percentile", "50")...)
			sample(name, ps.P95/1000, append(l, "percentile", "95")...)
			sample(name, ps.P99/1000, append(l, "percentile", "99")...)
		}
	}
	scalar := func(name string, v func(Trial) float64) func(trialRow, []string) {
		return func(r trialRow, l []string) { sample(name, v(r.st.Trial), l...) }
	}

	each("llmserve_trial_concurrency", "Concurrent requests the confirmation trial kept in flight.", func(r trialRow, l []string) {
		if r.st.Concurrency != 0 {
			sample("llmserve_trial_concurrency", float64(r.st.Concurrency), l...)
		}
	})
	if byRate {
		each("llmserve_trial_requests_per_second", "Request rate the open-loop trial was scheduled at.", func(r trialRow, l []string) {
			if v := r.st.Trial.RequestRate; v > 0 {
				sample("llmserve_trial_requests_per_second", v, l...)
			}
		})
	}
	if byRate {
		openLoop := func(name string, v func(*OpenLoopTrial) float64) func(trialRow, []string) {
			return func(r trialRow, l []string) {
				if o := r.st.Trial.OpenLoop; o != nil {
					sample(name, v(o), l...)
				}
			}
		}
		each("llmserve_trial_offered_requests_per_second", "Rate the open-loop trial's measured requests were due at on its schedule.",
			openLoop("llmserve_trial_offered_requests_per_second", func(o *OpenLoopTrial) float64 { return o.OfferedRate }))
		each("llmserve_trial_completed_requests_per_second", "Rate the server completed the open-loop trial's measured requests at; below the offered rate it did not keep up.",
			openLoop("llmserve_trial_completed_requests_per_second", func(o *OpenLoopTrial) float64 { return o.CompletionRate }))
		each("llmserve_trial_backlog_growth_requests", "Fitted rise of the requests in flight over the open-loop trial.",
			openLoop("llmserve_trial_backlog_growth_requests", func(o *OpenLoopTrial) float64 { return o.BacklogGrowth }))
		each("llmserve_trial_kept_up", "1 when the server kept up with the open-loop trial's rate (both guards held), 0 when it did not.",
			openLoop("llmserve_trial_kept_up", func(o *OpenLoopTrial) float64 { return float64(boolCount(o.KeptUp)) }))
	}
	if bySpeedup {
		each("llmserve_trial_speedup", "Speedup at which the trial replayed the recorded trace.", func(r trialRow, l []string) {
			if v := r.st.Trial.Speedup; v > 0 {
				sample("llmserve_trial_speedup", v, l...)
			}
		})
	}
	if conversations {
		conv := func(name string, v func(*ConversationTrial) (float64, bool)) func(trialRow, []string) {
			return func(r trialRow, l []string) {
				if c := r.st.Trial.Conversations; c != nil {
					if x, ok := v(c); ok {
						sample(name, x, l...)
					}
				}
			}
		}
		always := func(f func(*ConversationTrial) float64) func(*ConversationTrial) (float64, bool) {
			return func(c *ConversationTrial) (float64, bool) { return f(c), true }
		}
		each("llmserve_trial_users", "Virtual users the trial held, each in multi-turn conversations with think time.", func(r trialRow, l []string) {
			if r.st.Trial.Users > 0 {
				sample("llmserve_trial_users", float64(r.st.Trial.Users), l...)
			}
		})
		turns := func(name string, p50, p95 func(*ConversationTrial) float64) func(trialRow, []string) {
			return func(r trialRow, l []string) {
				if c := r.st.Trial.Conversations; c != nil {
					sample(name, p50(c)/1000, append(l, "percentile", "50")...)
					sample(name, p95(c)/1000, append(l, "percentile", "95")...)
				}
			}
		}
		each("llmserve_trial_first_turn_time_to_first_token_seconds", "Time to first token of the measured turns that opened a conversation.",
			turns("llmserve_trial_first_turn_time_to_first_token_seconds", func(c *ConversationTrial) float64 { return c.FirstTurnTTFTP50Ms }, func(c *ConversationTrial) float64 { return c.FirstTurnTTFTP95Ms }))
		each("llmserve_trial_later_turn_time_to_first_token_seconds", "Time to first token of the measured turns that sent a conversation's history back.",
			turns("llmserve_trial_later_turn_time_to_first_token_seconds", func(c *ConversationTrial) float64 { return c.LaterTurnTTFTP50Ms }, func(c *ConversationTrial) float64 { return c.LaterTurnTTFTP95Ms }))
		each("llmserve_trial_in_flight_requests_mean", "Time-weighted mean of the requests in flight over the users trial's measured window.",
			conv("llmserve_trial_in_flight_requests_mean", always(func(c *ConversationTrial) float64 { return c.InFlightMean })))
		each("llmserve_trial_in_flight_requests_peak", "Most requests in flight at once over the users trial's measured window.",
			conv("llmserve_trial_in_flight_requests_peak", always(func(c *ConversationTrial) float64 { return float64(c.InFlightPeak) })))
		each("llmserve_trial_context_tokens_max", "Longest context (prompt and output tokens) a measured turn reached.",
			conv("llmserve_trial_context_tokens_max", always(func(c *ConversationTrial) float64 { return float64(c.ContextTokensMax) })))
		each("llmserve_trial_later_turn_cached_ratio", "Share of the later turns' prompt tokens the server served from its prefix cache.",
			conv("llmserve_trial_later_turn_cached_ratio", func(c *ConversationTrial) (float64, bool) {
				if p := c.LaterTurnCachedPercent; p != nil {
					return *p / 100, true
				}
				return 0, false
			}))
		each("llmserve_trial_turns_cached_beyond_history", "Measured turns that found more cached prompt tokens than their own conversation could hold (a measurement fault).",
			conv("llmserve_trial_turns_cached_beyond_history", always(func(c *ConversationTrial) float64 { return float64(c.TurnsCachedBeyondHistory) })))
	}
	each("llmserve_trial_slo_met", "1 when the trial on its own met every objective, 0 when it missed one or measured requests failed.", func(r trialRow, l []string) {
		switch Verdict(d.Objectives(), r.st.Trial) {
		case "pass":
			sample("llmserve_trial_slo_met", 1, l...)
		case "fail", "error":
			sample("llmserve_trial_slo_met", 0, l...)
		}
	})
	each("llmserve_trial_time_to_first_token_seconds", "Time to first token of the trial's measured requests.",
		quantiles("llmserve_trial_time_to_first_token_seconds", func(t Trial) Stats { return t.TTFTMs }))
	each("llmserve_trial_inter_token_latency_seconds", "Inter-token latency of the trial's measured requests.",
		quantiles("llmserve_trial_inter_token_latency_seconds", func(t Trial) Stats { return t.ITLMs }))
	each("llmserve_trial_request_latency_seconds", "End-to-end latency of the trial's measured requests.",
		quantiles("llmserve_trial_request_latency_seconds", func(t Trial) Stats { return t.RequestLatencyMs }))
	each("llmserve_trial_output_throughput_tokens_per_second", "Output tokens of all measured requests over the trial's duration.",
		scalar("llmserve_trial_output_throughput_tokens_per_second", func(t Trial) float64 { return t.OutputThroughputTPS }))
	each("llmserve_trial_per_user_output_throughput_tokens_per_second", "Output rate one user sees (1/ITL per request): its average and percentiles.",
		func(r trialRow, l []string) {
			u := r.st.Trial.PerUserOutputThroughputTPS
			name := "llmserve_trial_per_user_output_throughput_tokens_per_second"
			sample(name, u.Avg, append(l, "stat", "avg")...)
			sample(name, u.P50, append(l, "stat", "p50")...)
			sample(name, u.P95, append(l, "stat", "p95")...)
		})
	each("llmserve_trial_request_throughput_requests_per_second", "Successful measured requests over the trial's duration.",
		scalar("llmserve_trial_request_throughput_requests_per_second", func(t Trial) float64 { return t.RequestThroughputRPS }))
	each("llmserve_trial_duration_seconds", "From the first measured request sent to the last response received.",
		scalar("llmserve_trial_duration_seconds", func(t Trial) float64 { return t.BenchmarkDurationS }))
	each("llmserve_trial_measured_requests", "Measured (profiling) requests of the trial.",
		scalar("llmserve_trial_measured_requests", func(t Trial) float64 { return float64(t.Correctness.ProfilingRecords) }))
	each("llmserve_trial_errors", "Measured requests that failed.",
		scalar("llmserve_trial_errors", func(t Trial) float64 { return float64(t.Correctness.Errors) }))
	each("llmserve_trial_output_length_mismatches", "Measured requests whose output length missed the configured one.",
		scalar("llmserve_trial_output_length_mismatches", func(t Trial) float64 { return t.Correctness.OutputLengthMismatches }))
	openMetricsCostAndEnergy(d, family, sample)
	b.WriteString("# EOF\n")
	return b.String()
}

func promFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// escapeLabel writes a label value as both text formats read it. They define escapes only
// for backslash, double quote and line feed, and require UTF-8, so the rest is neutralised
// rather than passed through: a carriage return (alone or before a line feed) is a line
// break and becomes \n, which line-oriented readers would otherwise split on or drop; a
// tab becomes a space; any other control character and any invalid UTF-8 becomes U+FFFD.
func escapeLabel(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			if !strings.HasPrefix(s[i+1:], "\n") {
				b.WriteString(`\n`)
			}
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r): // C0, DEL and C1 (range already reads invalid UTF-8 as U+FFFD)
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
