package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ErrNoMetrics means the server exports no Prometheus metrics (SGLang without --enable-metrics,
// llama.cpp without --metrics).
var ErrNoMetrics = errors.New("the server exports no Prometheus metrics")

// MetricNames are the Prometheus series an engine exports for what the benchmark watches.
// Each list holds the current name first and older names after it; the first one present
// counts. Empty lists: the engine has no such series.
type MetricNames struct {
	Running []string // gauge: requests being decoded or prefilled
	Queued  []string // gauge: requests waiting for admission
	KVUsage []string // gauge: fraction of the KV cache in use, 0..1
	// Histograms in seconds.
	TTFT      []string
	E2E       []string
	QueueTime []string
	// Counters for the prefix cache: prompt tokens looked up and found.
	PrefixQueries []string
	PrefixHits    []string
}

// Metrics names the series of each engine:
//   - SGLang: python/sglang/srt/metrics/collector.py @00ae9c15 (num_running_reqs,
//     num_queue_reqs, token_usage, the latency histograms, cached_tokens/prompt_tokens
//     counters); exported only with --enable-metrics.
//   - vLLM: vllm/v1/metrics/loggers.py (num_requests_running/waiting, kv_cache_usage_perc,
//     which is a fraction despite its name, prefix_cache_queries/hits; gpu_* are the
//     deprecated names of 0.10 and earlier).
//   - llama.cpp: tools/server/README.md @00dc8057 (requests_processing/deferred with
//     --metrics; kv_cache_usage_ratio only in builds before 2025; no latency histograms);
//     prompt_tokens_cached_total as a real llama-server (Debian llama.cpp 0.7.0) exports it.
func Metrics(e Name) MetricNames {
	switch e {
	case SGLang:
		return MetricNames{
			Running: []string{"sglang:num_running_reqs"}, Queued: []string{"sglang:num_queue_reqs"},
			KVUsage:       []string{"sglang:token_usage"},
			TTFT:          []string{"sglang:time_to_first_token_seconds"},
			E2E:           []string{"sglang:e2e_request_latency_seconds"},
			QueueTime:     []string{"sglang:queue_time_seconds"},
			PrefixQueries: []string{"sglang:prompt_tokens_total"},
			PrefixHits:    []string{"sglang:cached_tokens_total"},
		}
	case VLLM:
		return MetricNames{
			Running: []string{"vllm:num_requests_running"}, Queued: []string{"vllm:num_requests_waiting"},
			KVUsage:       []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
			TTFT:          []string{"vllm:time_to_first_token_seconds"},
			E2E:           []string{"vllm:e2e_request_latency_seconds"},
			QueueTime:     []string{"vllm:request_queue_time_seconds"},
			PrefixQueries: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"},
			PrefixHits:    []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"},
		}
	case LlamaCpp:
		return MetricNames{
			Running: []string{"llamacpp:requests_processing"}, Queued: []string{"llamacpp:requests_deferred"},
			KVUsage:       []string{"llamacpp:kv_cache_usage_ratio"},
			PrefixQueries: []string{"llamacpp:prompt_tokens_total"},
			PrefixHits:    []string{"llamacpp:prompt_tokens_cached_total"},
		}
	}
	return MetricNames{}
}

// Snapshot is one scrape of an engine's /metrics, parsed with the Prometheus text parser.
type Snapshot struct {
	families map[string]*dto.MetricFamily
}

// Scrape reads GET /metrics. It returns ErrNoMetrics when the server has no such endpoint.
func (c *Client) Scrape(ctx context.Context) (Snapshot, error) {
	status, body, err := c.call(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape metrics: %w", err)
	}
	switch {
	case status == http.StatusNotFound || status == http.StatusNotImplemented:
		return Snapshot{}, fmt.Errorf("scrape metrics: GET %s/metrics: HTTP %d: %w", c.redacted, status, ErrNoMetrics)
	case status != http.StatusOK:
		return Snapshot{}, fmt.Errorf("scrape metrics: %w", c.statusErr(http.MethodGet, "/metrics", status, body))
	}
	s, err := ParseMetrics(body)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape metrics: GET %s/metrics: %w", c.redacted, err)
	}
	return s, nil
}

// ParseMetrics parses the Prometheus text exposition format.
func ParseMetrics(text []byte) (Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return Snapshot{}, fmt.Errorf("not Prometheus text: %w", err)
	}
	return Snapshot{families: fams}, nil
}

// family finds the first of names that the scrape holds. The text format names a counter
// family with its _total suffix or without it, depending on the exporter; both are tried.
func (s Snapshot) family(names []string) *dto.MetricFamily {
	for _, n := range names {
		if f := s.families[n]; f != nil {
			return f
		}
		if base, ok := cutSuffix(n, "_total"); ok {
			if f := s.families[base]; f != nil {
				return f
			}
		}
	}
	return nil
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// Sum adds the values of every series of the first present name (one per model, DP rank or
// engine index); ok is false when none is exported.
func (s Snapshot) Sum(names []string) (sum float64, ok bool) {
	f := s.family(names)
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		switch {
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, true
}

// Max is the largest value among the series of the first present name.
func (s Snapshot) Max(names []string) (float64, bool) {
	f := s.family(names)
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	out := math.Inf(-1)
	for _, m := range f.GetMetric() {
		v := m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		out = max(out, v)
	}
	return out, true
}

// Histogram is a cumulative histogram merged over the series of one metric.
type Histogram struct {
	Count   float64
	Sum     float64
	Buckets []Bucket // ascending upper bounds, cumulative counts, +Inf last
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram merges every series of the first present name; ok is false when none is
// exported.
func (s Snapshot) Histogram(names []string) (Histogram, bool) {
	f := s.family(names)
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		return Histogram{}, false
	}
	byBound := map[float64]float64{}
	var h Histogram
	for _, m := range f.GetMetric() {
		mh := m.GetHistogram()
		h.Count += float64(mh.GetSampleCount())
		h.Sum += mh.GetSampleSum()
		for _, b := range mh.GetBucket() {
			byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	for ub, c := range byBound {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: ub, Count: c})
	}
	sort.Slice(h.Buckets, func(i, j int) bool { return h.Buckets[i].UpperBound < h.Buckets[j].UpperBound })
	if n := len(h.Buckets); n == 0 || !math.IsInf(h.Buckets[n-1].UpperBound, 1) {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: math.Inf(1), Count: h.Count})
	}
	return h, true
}

// Sub is the histogram of the observations between an earlier scrape and this one. A counter
// that went down (the server restarted) gives ok false: the difference means nothing.
func (h Histogram) Sub(before Histogram) (Histogram, bool) {
	if h.Count < before.Count {
		return Histogram{}, false
	}
	prev := map[float64]float64{}
	for _, b := range before.Buckets {
		prev[b.UpperBound] = b.Count
	}
	d := Histogram{Count: h.Count - before.Count, Sum: h.Sum - before.Sum}
	for _, b := range h.Buckets {
		c := b.Count - prev[b.UpperBound]
		if c < 0 {
			return Histogram{}, false
		}
		d.Buckets = append(d.Buckets, Bucket{UpperBound: b.UpperBound, Count: c})
	}
	return d, true
}

// Quantile estimates the q-quantile (0..1) by linear interpolation inside the bucket that
// holds it, as Prometheus' histogram_quantile does; NaN when the histogram is empty. A
// quantile in the +Inf bucket is reported as the highest finite bound.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Buckets) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for _, b := range h.Buckets {
		if b.Count >= rank {
			if math.IsInf(b.UpperBound, 1) {
				return lower
			}
			if b.Count == below {
				return b.UpperBound
			}
			return lower + (b.UpperBound-lower)*(rank-below)/(b.Count-below)
		}
		lower, below = b.UpperBound, b.Count
	}
	return lower
}
