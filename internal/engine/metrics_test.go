package engine

import (
	"math"
	"testing"
)

// vLLM-shaped exposition (vllm/v1/metrics/loggers.py names, prometheus_client text format):
// two engine indexes, a counter with its _total sample, a histogram in seconds.
const vllmScrapeBefore = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 32.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.8
`

const vllmScrapeAfter = `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} 8.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 14.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 14.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 12.8
`

func TestSnapshotReadsEngineSeries(t *testing.T) {
	t.Parallel()
	s, err := ParseMetrics([]byte(vllmScrapeBefore))
	if err != nil {
		t.Fatal(err)
	}
	names := Metrics(VLLM)
	if v, ok := s.Sum(names.Running); !ok || v != 3 {
		t.Errorf("running = %g %v, want 3 (2 + 1 over the engine indexes)", v, ok)
	}
	if _, ok := s.Sum(names.Queued); ok {
		t.Error("queued reported though the scrape has no waiting gauge")
	}
	if v, ok := s.Max(names.KVUsage); !ok || v != 0.5 {
		t.Errorf("peak KV usage = %g %v, want 0.5", v, ok)
	}
	if v, ok := s.Sum(names.PrefixHits); !ok || v != 32 {
		t.Errorf("prefix hits = %g %v, want 32", v, ok)
	}
	if _, err := ParseMetrics([]byte("not metrics {")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestHistogramDeltaAndQuantile(t *testing.T) {
	t.Parallel()
	before, _ := ParseMetrics([]byte(vllmScrapeBefore))
	after, _ := ParseMetrics([]byte(vllmScrapeAfter))
	names := Metrics(VLLM)
	hb, ok1 := before.Histogram(names.TTFT)
	ha, ok2 := after.Histogram(names.TTFT)
	if !ok1 || !ok2 {
		t.Fatal("histograms missing")
	}
	d, ok := ha.Sub(hb)
	if !ok {
		t.Fatal("delta refused")
	}
	// Between the scrapes: 10 observations summing to 12 s; 0 at ≤0.1 s, 4 in (0.1, 0.5],
	// 6 above 0.5 s.
	if d.Count != 10 || math.Abs(d.Sum-12) > 1e-9 {
		t.Fatalf("delta count %g sum %g, want 10 and 12", d.Count, d.Sum)
	}
	// p30: rank 3 falls in (0.1, 0.5] holding ranks 0..4: 0.1 + 0.4 × 3/4 = 0.4.
	if q := d.Quantile(0.3); math.Abs(q-0.4) > 1e-9 {
		t.Errorf("p30 = %g, want 0.4", q)
	}
	// p95 lies in the +Inf bucket: the highest finite bound, 0.5, is all that can be said.
	if q := d.Quantile(0.95); q != 0.5 {
		t.Errorf("p95 = %g, want 0.5", q)
	}
	if _, ok := hb.Sub(ha); ok {
		t.Error("a histogram that went backwards (server restart) gave a delta")
	}
	if q := (Histogram{}).Quantile(0.5); !math.IsNaN(q) {
		t.Errorf("empty histogram quantile %g, want NaN", q)
	}
}
