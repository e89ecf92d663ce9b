package results

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Metric names, as users write them in `slos` and as documents record them.
const (
	MetricTTFT              = "time_to_first_token"
	MetricITL               = "inter_token_latency"
	MetricRequestLatency    = "request_latency"
	MetricTTST              = "time_to_second_token"
	MetricPerUserThroughput = "output_token_throughput_per_user"
	MetricGoodput           = "goodput"
)

// Comparisons an objective can use. The first two are for metrics where lower is better,
// the last two for metrics where higher is better.
const (
	StrictlyLessThan   = "strictly_less_than"
	LessThanOrEqual    = "less_than_or_equal"
	GreaterThan        = "greater_than"
	GreaterThanOrEqual = "greater_than_or_equal"
)

// Metric is one row of the metric table: everything the schema, validation, measurement,
// rendering and the results document need to know about a metric an objective can use.
type Metric struct {
	Name  string // as written in `slos` and in documents
	Short string // for headings and axis labels
	Unit  string // unit of its values and of an objective's threshold_ms
	// HigherIsBetter decides which comparisons apply and how close to its threshold a
	// value is.
	HigherIsBetter bool
	// PerTrial metrics (goodput) are one number per trial and take no percentile.
	PerTrial bool
	// Computed says how the value is computed, for documentation.
	Computed string
	// stats is where a trial records the metric's distribution (nil when it does not);
	// nil for a per-trial metric.
	stats func(Trial) *Stats
}

// DefaultComparison is the comparison an objective on this metric gets when none is given.
func (m Metric) DefaultComparison() string {
	if m.HigherIsBetter {
		return GreaterThan
	}
	return StrictlyLessThan
}

// Comparisons are the comparisons that make sense for this metric.
func (m Metric) Comparisons() []string {
	if m.HigherIsBetter {
		return []string{GreaterThan, GreaterThanOrEqual}
	}
	return []string{StrictlyLessThan, LessThanOrEqual}
}

// metricTable is the one list of objective metrics. Order is the order docs list them in.
var metricTable = []Metric{
	{Name: MetricTTFT, Short: "TTFT", Unit: "ms",
		Computed: "time from sending the request to its first streamed chunk with non-empty content",
		stats:    func(t Trial) *Stats { return &t.TTFTMs }},
	{Name: MetricITL, Short: "ITL", Unit: "ms",
		Computed: "(request latency − TTFT) / (output tokens − 1), output tokens from the server's usage",
		stats:    func(t Trial) *Stats { return &t.ITLMs }},
	{Name: MetricRequestLatency, Short: "Request latency", Unit: "ms",
		Computed: "time from sending the request to its last streamed chunk with content",
		stats:    func(t Trial) *Stats { return &t.RequestLatencyMs }},
	{Name: MetricTTST, Short: "TTST", Unit: "ms",
		Computed: "time from the first to the second streamed chunk with content",
		stats:    func(t Trial) *Stats { return t.TTSTMs }},
	{Name: MetricPerUserThroughput, Short: "Per-user output throughput", Unit: "tokens/s", HigherIsBetter: true,
		Computed: "1000 / ITL: the output rate one user sees",
		stats:    func(t Trial) *Stats { return &t.PerUserOutputThroughputTPS }},
	{Name: MetricGoodput, Short: "Goodput", Unit: "%", HigherIsBetter: true, PerTrial: true,
		Computed: "percentage of measured requests that succeeded and met every other objective's threshold on their own (AIPerf's goodput criterion)"},
}

// Metrics returns the metric table.
func Metrics() []Metric { return append([]Metric(nil), metricTable...) }

// MetricNames are the names of the metric table, in order.
func MetricNames() []string {
	out := make([]string, len(metricTable))
	for i, m := range metricTable {
		out[i] = m.Name
	}
	return out
}

// LookupMetric finds a metric by name.
func LookupMetric(name string) (Metric, bool) {
	for _, m := range metricTable {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// SLO is one objective: the Percentile-th percentile of Metric over a trial's successful
// measured requests compared with ThresholdMs (for goodput: the trial's goodput percentage,
// no percentile). The threshold is in the metric's unit, which is milliseconds for the
// latencies, tokens per second for per-user throughput and percent for goodput.
type SLO struct {
	Metric      string  `json:"metric"`
	Percentile  float64 `json:"percentile,omitempty"` // absent for goodput
	ThresholdMs float64 `json:"threshold_ms"`
	Comparison  string  `json:"comparison"`
	// AllConfirmationTrialsMustPass is only written in the legacy single `slo` block, where
	// the reference states it; it is always the rule.
	AllConfirmationTrialsMustPass bool `json:"all_confirmation_trials_must_pass,omitempty"`
}

// Info is the objective's row in the metric table; zero when the metric is unknown.
func (s SLO) Info() Metric {
	m, _ := LookupMetric(s.Metric)
	return m
}

// WithDefaults fills an empty metric and comparison with the defaults users get.
func (s SLO) WithDefaults() SLO {
	if s.Metric == "" {
		s.Metric = MetricTTFT
	}
	if s.Comparison == "" {
		if m, ok := LookupMetric(s.Metric); ok {
			s.Comparison = m.DefaultComparison()
		}
	}
	return s
}

// FieldProblem is one thing wrong with an objective: the field to fix, as `slos` names it
// (metric, percentile, threshold_ms, comparison), and what is wrong with its value and what
// to do, without the field's name, so a caller can put its own path in front.
type FieldProblem struct {
	Field  string
	Detail string
}

// Problems lists every problem with s, in field order; none when s is valid.
func (s SLO) Problems() []FieldProblem {
	var out []FieldProblem
	m, ok := LookupMetric(s.Metric)
	if !ok {
		out = append(out, FieldProblem{"metric", fmt.Sprintf("must be one of %s, got %q", strings.Join(MetricNames(), ", "), s.Metric)})
	}
	switch {
	case ok && m.PerTrial && s.Percentile != 0:
		out = append(out, FieldProblem{"percentile", fmt.Sprintf("must be left out: %s is one number per trial and takes no percentile; remove it", s.Metric)})
	case ok && m.PerTrial:
	case math.IsNaN(s.Percentile) || s.Percentile <= 0 || s.Percentile > 100:
		out = append(out, FieldProblem{"percentile", fmt.Sprintf("must be in (0, 100], got %v; every metric but goodput needs one, e.g. 95 for p95", s.Percentile)})
	}
	switch {
	case math.IsNaN(s.ThresholdMs) || math.IsInf(s.ThresholdMs, 0) || s.ThresholdMs <= 0:
		out = append(out, FieldProblem{"threshold_ms", fmt.Sprintf("must be greater than 0, got %v; give the limit in the metric's unit, e.g. 10000 (ms) for 10 s", s.ThresholdMs)})
	case ok && m.Name == MetricGoodput && s.ThresholdMs > 100:
		out = append(out, FieldProblem{"threshold_ms", fmt.Sprintf("must be at most 100, got %v: goodput is a percentage", s.ThresholdMs)})
	}
	if ok {
		valid := m.Comparisons()
		if s.Comparison != valid[0] && s.Comparison != valid[1] {
			out = append(out, FieldProblem{"comparison", fmt.Sprintf("%q does not fit %s, where %s; use %s or %s",
				s.Comparison, s.Metric, direction(m), valid[0], valid[1])})
		}
	}
	return out
}

// Validate is Problems as one error, each naming its field after prefix (e.g. "slos[1]").
func (s SLO) Validate(prefix string) error {
	var errs []error
	for _, p := range s.Problems() {
		errs = append(errs, fmt.Errorf("%s.%s %s", prefix, p.Field, p.Detail))
	}
	return errors.Join(errs...)
}

func direction(m Metric) string {
	if m.HigherIsBetter {
		return "higher is better"
	}
	return "lower is better"
}

// Repeats says which earlier objective each objective repeats (the same metric at the same
// percentile, whatever the threshold): by index, -1 where it repeats none.
func Repeats(slos []SLO) []int {
	out := make([]int, len(slos))
	seen := map[string]int{}
	for i, s := range slos {
		out[i] = -1
		key := s.Metric + "/" + formatFloat(s.Percentile)
		if j, dup := seen[key]; dup {
			out[i] = j
			continue
		}
		seen[key] = i
	}
	return out
}

// ValidateSLOs checks a list of objectives: at least one, each valid, none repeated.
func ValidateSLOs(slos []SLO) error {
	if len(slos) == 0 {
		return errors.New("slos: at least one objective is required")
	}
	var errs []error
	repeats := Repeats(slos)
	for i, s := range slos {
		if err := s.Validate("slos[" + strconv.Itoa(i) + "]"); err != nil {
			errs = append(errs, err)
		}
		if j := repeats[i]; j >= 0 {
			errs = append(errs, fmt.Errorf("slos[%d] repeats the metric and percentile of slos[%d]; keep the stricter one", i, j))
		}
	}
	return errors.Join(errs...)
}

// Meets reports whether a value of the objective's metric satisfies its threshold.
func (s SLO) Meets(v float64) bool {
	switch s.Comparison {
	case LessThanOrEqual:
		return v <= s.ThresholdMs
	case GreaterThan:
		return v > s.ThresholdMs
	case GreaterThanOrEqual:
		return v >= s.ThresholdMs
	}
	return v < s.ThresholdMs
}

// Closeness is how near v is to failing the objective: value over threshold for metrics
// where lower is better, threshold over value where higher is better. Below 1 the objective
// is met with room to spare; 1 or more is at or past the threshold.
func (s SLO) Closeness(v float64) float64 {
	if s.Info().HigherIsBetter {
		if v <= 0 {
			return math.Inf(1)
		}
		return s.ThresholdMs / v
	}
	return v / s.ThresholdMs
}

// Key names the objective among others: "p95 time_to_first_token", or "goodput".
func (s SLO) Key() string {
	if s.Info().PerTrial || s.Percentile == 0 {
		return s.Metric
	}
	return "p" + formatFloat(s.Percentile) + " " + s.Metric
}

// Value returns the trial's value of the objective: what the trial recorded for it, or
// else the matching statistic of the metric's distribution.
func (s SLO) Value(t Trial) (float64, error) {
	for _, o := range t.SLOs {
		if o.Metric == s.Metric && o.Percentile == s.Percentile {
			return o.Value, nil
		}
	}
	m, ok := LookupMetric(s.Metric)
	if !ok {
		return 0, fmt.Errorf("slo metric %q is not one of %s", s.Metric, strings.Join(MetricNames(), ", "))
	}
	if m.PerTrial {
		if t.GoodputPercent == nil {
			return 0, fmt.Errorf("the trial records no %s", s.Metric)
		}
		return *t.GoodputPercent, nil
	}
	var st *Stats
	if m.stats != nil {
		st = m.stats(t)
	}
	if st == nil {
		return 0, fmt.Errorf("the trial records no %s", s.Metric)
	}
	v, ok := st.Percentile(s.Percentile)
	if !ok {
		return 0, fmt.Errorf("slo percentile %v of %s is not recorded in the trial", s.Percentile, s.Metric)
	}
	return v, nil
}

// MetricShort is the metric's abbreviation for headings and axis labels.
func (s SLO) MetricShort() string {
	if m, ok := LookupMetric(s.Metric); ok {
		return m.Short
	}
	return s.Metric
}

// Unit is the unit of the objective's values and threshold.
func (s SLO) Unit() string {
	if m, ok := LookupMetric(s.Metric); ok {
		return m.Unit
	}
	return "ms"
}

var (
	symbols = map[string]string{StrictlyLessThan: "<", LessThanOrEqual: "≤", GreaterThan: ">", GreaterThanOrEqual: "≥"}
	words   = map[string]string{StrictlyLessThan: "under", LessThanOrEqual: "at most", GreaterThan: "over", GreaterThanOrEqual: "at least"}
)

func (s SLO) phrase(ops map[string]string) string {
	op := ops[s.Comparison]
	if op == "" {
		op = s.Comparison
	}
	lead := s.MetricShort()
	if !s.Info().PerTrial {
		lead = "p" + formatFloat(s.Percentile) + " " + lead
	}
	return fmt.Sprintf("%s %s %s %s", lead, op, formatFloat(s.ThresholdMs), s.Unit())
}

// String reads like "p95 TTFT < 10000 ms".
func (s SLO) String() string { return s.phrase(symbols) }

// Sentence reads like "p95 TTFT under 10000 ms", for prose where "<" would need escaping.
func (s SLO) Sentence() string { return s.phrase(words) }

// SLOsSentence joins objectives for prose: "p95 TTFT under 10000 ms and p50 ITL under 50 ms".
func SLOsSentence(slos []SLO) string {
	parts := make([]string, len(slos))
	for i, s := range slos {
		parts[i] = s.Sentence()
	}
	return strings.Join(parts, " and ")
}

// formatFloat writes the shortest decimal that reads back as v, never in exponent form, so
// that exported numbers are unrounded and spreadsheet-friendly.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}
