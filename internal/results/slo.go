package results

import (
	"fmt"
	"strconv"
)

// Side says on which side of the boundary a confirmation trial ran.
type Side string

const (
	SidePassing Side = "passing"
	SideFailing Side = "failing"
)

// SideTrial is one confirmation trial with the context every rendering needs.
type SideTrial struct {
	Side Side
	// Concurrency the trial ran at; 0 when neither the trial nor its side's boundary says.
	Concurrency int
	Trial       Trial
}

// Trials lists the workload's confirmation trials, passing side first. Reference documents
// carry no per-trial concurrency: a side's trials all ran at that side's boundary.
func (w Workload) Trials() []SideTrial {
	out := make([]SideTrial, 0, len(w.PassingTrials)+len(w.FailingTrials))
	add := func(side Side, boundary *int, ts []Trial) {
		for _, t := range ts {
			c := t.Concurrency
			if c == 0 && boundary != nil {
				c = *boundary
			}
			out = append(out, SideTrial{Side: side, Concurrency: c, Trial: t})
		}
	}
	add(SidePassing, w.MaximumPassingConcurrency, w.PassingTrials)
	add(SideFailing, w.FirstFailingConcurrency, w.FailingTrials)
	return out
}

// Value returns the trial's value of the SLO's metric at the SLO's percentile, in ms.
func (s SLO) Value(t Trial) (float64, error) {
	var p Percentiles
	switch s.Metric {
	case "time_to_first_token":
		p = t.TTFTMs
	case "inter_token_latency":
		p = t.ITLMs
	case "request_latency":
		p = t.RequestLatencyMs
	default:
		return 0, fmt.Errorf("slo.metric %q is not one of time_to_first_token, inter_token_latency, request_latency", s.Metric)
	}
	switch s.Percentile {
	case 50:
		return p.P50, nil
	case 95:
		return p.P95, nil
	case 99:
		return p.P99, nil
	}
	return 0, fmt.Errorf("slo.percentile %v is not recorded per trial (only 50, 95 and 99 are)", s.Percentile)
}

// Met reports whether a value of the SLO's metric meets the objective.
func (s SLO) Met(v float64) (bool, error) {
	switch s.Comparison {
	case "strictly_less_than":
		return v < s.ThresholdMs, nil
	case "less_than_or_equal":
		return v <= s.ThresholdMs, nil
	}
	return false, fmt.Errorf("slo.comparison %q is not one of strictly_less_than, less_than_or_equal", s.Comparison)
}

// Verdict is "pass" or "fail" for one trial judged on its own, or "n/a" when the SLO cannot
// be evaluated from the recorded percentiles. A trial with failed requests fails whatever its
// percentiles say, as the benchmark judged it (the percentiles cover successful requests only).
func (s SLO) Verdict(t Trial) string {
	if t.Correctness.Errors > 0 {
		return "fail"
	}
	v, err := s.Value(t)
	if err != nil {
		return "n/a"
	}
	ok, err := s.Met(v)
	switch {
	case err != nil:
		return "n/a"
	case ok:
		return "pass"
	}
	return "fail"
}

// MetricShort is the metric's abbreviation for headings and axis labels.
func (s SLO) MetricShort() string {
	switch s.Metric {
	case "time_to_first_token":
		return "TTFT"
	case "inter_token_latency":
		return "ITL"
	case "request_latency":
		return "Request latency"
	}
	return s.Metric
}

// String reads like "p95 TTFT < 10000 ms".
func (s SLO) String() string {
	op := map[string]string{"strictly_less_than": "<", "less_than_or_equal": "≤"}[s.Comparison]
	if op == "" {
		op = s.Comparison
	}
	return fmt.Sprintf("p%s %s %s %s ms", formatFloat(s.Percentile), s.MetricShort(), op, formatFloat(s.ThresholdMs))
}

// formatFloat writes the shortest decimal that reads back as v, never in exponent form, so
// that exported numbers are unrounded and spreadsheet-friendly.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Sentence reads like "p95 TTFT under 10000 ms", for prose where "<" would need escaping.
func (s SLO) Sentence() string {
	op := map[string]string{"strictly_less_than": "under", "less_than_or_equal": "at most"}[s.Comparison]
	if op == "" {
		op = s.Comparison
	}
	return fmt.Sprintf("p%s %s %s %s ms", formatFloat(s.Percentile), s.MetricShort(), op, formatFloat(s.ThresholdMs))
}
