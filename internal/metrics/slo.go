package metrics

import (
	"errors"
	"fmt"
	"math"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// SLO metric names and comparisons, as users write them in the resource and results_json.
const (
	MetricTTFT           = "time_to_first_token"
	MetricITL            = "inter_token_latency"
	MetricRequestLatency = "request_latency"

	StrictlyLessThan = "strictly_less_than"
	LessThanOrEqual  = "less_than_or_equal"
)

// ErrUndecided is returned by Verdict when cancelled requests leave the verdict open: the
// trial was stopped before its outcome was certain, so it cannot be reported as either.
var ErrUndecided = errors.New("trial stopped before its SLO verdict was decided")

// SLO is the objective a trial is judged by: the Percentile-th percentile of Metric over the
// trial's successful measured requests must be below ThresholdMs (or at most, with
// Comparison LessThanOrEqual). An empty Comparison means StrictlyLessThan.
type SLO struct {
	Metric      string
	Percentile  float64
	ThresholdMs float64
	Comparison  string
}

// FromResults converts the results document's SLO block.
func FromResults(s results.SLO) SLO {
	return SLO{Metric: s.Metric, Percentile: s.Percentile, ThresholdMs: s.ThresholdMs, Comparison: s.Comparison}
}

// Validate reports what is wrong with s, naming the field, so a caller can surface it.
func (s SLO) Validate() error {
	switch s.Metric {
	case MetricTTFT, MetricITL, MetricRequestLatency:
	default:
		return fmt.Errorf("slo metric %q: want %s, %s or %s", s.Metric, MetricTTFT, MetricITL, MetricRequestLatency)
	}
	if math.IsNaN(s.Percentile) || s.Percentile <= 0 || s.Percentile > 100 {
		return fmt.Errorf("slo percentile %v: must be in (0, 100]", s.Percentile)
	}
	if math.IsNaN(s.ThresholdMs) || math.IsInf(s.ThresholdMs, 0) || s.ThresholdMs <= 0 {
		return fmt.Errorf("slo threshold_ms %v: must be a positive number", s.ThresholdMs)
	}
	switch s.Comparison {
	case "", StrictlyLessThan, LessThanOrEqual:
	default:
		return fmt.Errorf("slo comparison %q: want %s or %s", s.Comparison, StrictlyLessThan, LessThanOrEqual)
	}
	return nil
}

func (s SLO) inclusive() bool { return s.Comparison == LessThanOrEqual }

// Meets reports whether a percentile value satisfies the SLO's threshold.
func (s SLO) Meets(valueMs float64) bool {
	if s.inclusive() {
		return valueMs <= s.ThresholdMs
	}
	return valueMs < s.ThresholdMs
}

// RequestValueMs is the SLO metric of one successful request. ok is false when the request
// has no such value (ITL of a request with fewer than two output tokens or no usage).
func (s SLO) RequestValueMs(r load.Record) (v float64, ok bool) {
	switch s.Metric {
	case MetricTTFT:
		return TTFTMs(r), true
	case MetricRequestLatency:
		return RequestLatencyMs(r), true
	case MetricITL:
		return ITLMs(r)
	}
	return 0, false
}

// values are the SLO metric over the successful measured requests, the population AIPerf
// takes its percentiles over.
func (s SLO) values(records []load.Record) []float64 {
	var vs []float64
	for _, r := range records {
		if r.Warmup || !Succeeded(r) {
			continue
		}
		if v, ok := s.RequestValueMs(r); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// Value is the SLO's percentile of its metric over the successful measured requests.
func (s SLO) Value(records []load.Record) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	v, err := Percentile(s.values(records), s.Percentile)
	if err != nil {
		return 0, fmt.Errorf("%s over successful measured requests: %w", s.Metric, err)
	}
	return v, nil
}

// Verdict is a trial's outcome against the SLO.
type Verdict struct {
	Pass    bool
	ValueMs float64 // the SLO percentile over successful measured requests; 0 when there are none
	Errors  int     // measured requests that failed (not counting cancelled ones)
	Reason  string  // one line for logs and diagnostics
}

// Verdict judges a trial. Any failed measured request fails the trial whatever the
// percentile says: a user who got an error did not get the SLO, and a server that sheds
// load by erroring must not look faster for it. Otherwise the trial passes when the
// percentile over the successful measured requests meets the threshold.
//
// Records of a trial stopped early (cancelled requests) are judged by what they make
// certain, exactly as the Decider does; when that leaves the outcome open the error is
// ErrUndecided.
func (s SLO) Verdict(records []load.Record) (Verdict, error) {
	if err := s.Validate(); err != nil {
		return Verdict{}, err
	}
	measured := 0
	for _, r := range records {
		if !r.Warmup {
			measured++
		}
	}
	if measured == 0 {
		return Verdict{}, errors.New("verdict: the trial has no measured requests")
	}
	d, err := NewDecider(s, measured)
	if err != nil {
		return Verdict{}, err
	}
	for _, r := range records {
		d.Complete(r)
	}
	v := Verdict{Errors: d.failed}
	if vs := s.values(records); len(vs) > 0 {
		v.ValueMs = mustPercentile(vs, s.Percentile)
	}
	op := "<"
	if s.inclusive() {
		op = "≤"
	}
	switch {
	case d.Decision() == Undecided:
		return v, fmt.Errorf("%d of %d measured requests finished: %w", d.completed, measured, ErrUndecided)
	case v.Errors > 0:
		v.Reason = fmt.Sprintf("%d of %d measured requests failed", v.Errors, measured)
	case d.Decision() == DecidedPass:
		v.Pass = true
		v.Reason = fmt.Sprintf("p%g %s %.1f ms %s %g ms", s.Percentile, s.Metric, v.ValueMs, op, s.ThresholdMs)
	case d.known() == 0:
		v.Reason = fmt.Sprintf("no measured request has a %s value", s.Metric)
	default:
		lo, _ := d.Bounds()
		v.Reason = fmt.Sprintf("p%g %s at least %.1f ms, not %s %g ms", s.Percentile, s.Metric, lo, op, s.ThresholdMs)
	}
	return v, nil
}
