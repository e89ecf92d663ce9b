package capacity

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// validConfig is a configuration Validate accepts, for the cases to break one thing each.
func validConfig() Config {
	c := Defaults()
	c.Endpoint, c.Model = "http://gpu-host.example.com:30000", "m"
	c.Workloads = []Workload{{Label: "8K / 1K", InputTokens: 8192, OutputTokens: 1024}}
	c.SLOs = []results.SLO{{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 10000}}
	return c
}

func TestValidate(t *testing.T) {
	t.Parallel()
	type want struct {
		path, summary, detail string
		reads                 []string
		warning               bool
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   []want
	}{
		{name: "valid", change: func(*Config) {}},
		{name: "endpoint with credentials", change: func(c *Config) { c.Endpoint = "http://admin:hunter2@gpu-host.example.com" },
			want: []want{{path: "endpoint", summary: "Invalid endpoint URL", detail: `endpoint "http://REDACTED@gpu-host.example.com" carries credentials`}}},
		{name: "replica endpoints empty", change: func(c *Config) { c.ReplicaEndpoints = []string{} },
			want: []want{{path: "replica_endpoints", summary: "No replica endpoints", detail: "replica_endpoints lists no endpoint, so no replica would be flushed; set replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints"}}},
		{name: "replica endpoints valid", change: func(c *Config) { c.ReplicaEndpoints = []string{"http://10.0.0.7:30000", "http://10.0.0.8:30000"} }},
		{name: "replica endpoint with a path, another listed twice", change: func(c *Config) {
			c.ReplicaEndpoints = []string{"http://10.0.0.7:30000", "http://10.0.0.8:30000/v1", "http://10.0.0.7:30000/"}
		},
			want: []want{
				{path: "replica_endpoints[1]", summary: "Invalid replica endpoint URL", detail: "/v1"},
				{path: "replica_endpoints[2]", summary: "Replica endpoint listed twice", detail: `replica_endpoints[2] "http://10.0.0.7:30000/" is also replica_endpoints[0]: each replica must be listed once; set replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints`},
			}},
		{name: "pods", change: func(c *Config) { c.Pods = 4 }},
		{name: "more pods than measured requests or in-flight slots", change: func(c *Config) {
			c.Pods, c.MeasuredRequests = 8, 6
			c.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 1, MaxRate: 4, Tolerance: 0.25, MaxInFlight: 4}
		},
			want: []want{
				{path: "runner.kubernetes.pods", summary: "More pods than measured requests", detail: "8 pods share each trial's 6 measured requests (trial.measured_requests), so some pod would measure none: set runner.kubernetes.pods to at most 6, or raise trial.measured_requests to 8 or more.", reads: []string{"trial.measured_requests"}},
				{path: "runner.kubernetes.pods", summary: "More pods than in-flight slots", detail: "the 8 pods split arrival.max_in_flight (4) between them", reads: []string{"arrival.max_in_flight"}},
			}},
		{name: "pods above the bound", change: func(c *Config) { c.Pods = MaxPods + 1 },
			want: []want{{path: "runner.kubernetes.pods", summary: "Value too large", detail: "runner.kubernetes.pods must be at most 64, got 65."}}},
		{name: "no model", change: func(c *Config) { c.Model = "" },
			want: []want{{path: "model", summary: "Empty model name", detail: "model must not be empty; give the model name the server lists under /v1/models."}}},
		{name: "unknown api", change: func(c *Config) { c.API = "responses" },
			want: []want{{path: "api", summary: "Unknown API", detail: `api must be "chat" or "completions", got "responses".`}}},
		{name: "no workloads", change: func(c *Config) { c.Workloads = nil },
			want: []want{{path: "workloads", summary: "No workloads", detail: "workloads must list at least one workload"}}},
		{name: "label with an escape", change: func(c *Config) { c.Workloads[0].Label = "a\x1b[31m" },
			want: []want{{path: "workloads[0].label", summary: "Control character in value", detail: "workloads[0].label contains the control character U+001B at byte 1"}}},
		{name: "label used twice", change: func(c *Config) { c.Workloads = append(c.Workloads, c.Workloads[0]) },
			want: []want{{path: "workloads[1].label", summary: "Duplicate workload label", detail: `workloads[1].label: the label "8K / 1K" is already used by workloads[0].`, reads: []string{"workloads[0].label"}}}},
		{name: "input tokens zero and output above the bound", change: func(c *Config) { c.Workloads[0].InputTokens, c.Workloads[0].OutputTokens = 0, MaxTokens+1 },
			want: []want{
				{path: "workloads[0].input_tokens", summary: "Value too small", detail: "workloads[0].input_tokens must be at least 1, got 0."},
				{path: "workloads[0].output_tokens", summary: "Value too large", detail: "workloads[0].output_tokens must be at most 1048576, got 1048577."},
			}},
		{name: "spread wider than the length", change: func(c *Config) { c.Workloads[0].OutputTokensStddev = 1025 },
			want: []want{{path: "workloads[0].output_tokens_stddev", summary: "Length spread wider than the length", detail: "workloads[0].output_tokens_stddev (1025) is above the mean length (1024)", reads: []string{"workloads[0].output_tokens"}}}},
		{name: "shared prefix as long as the prompt", change: func(c *Config) { c.Workloads[0].SharedPrefixTokens = 8192 },
			want: []want{{path: "workloads[0].shared_prefix_tokens", summary: "Shared prefix as long as the prompt", detail: "workloads[0].shared_prefix_tokens (8192) counts within input_tokens (8192)", reads: []string{"workloads[0].input_tokens"}}}},
		{name: "no objectives", change: func(c *Config) { c.SLOs = nil },
			want: []want{{path: "slos", summary: "No objectives", detail: "slos must list at least one objective"}}},
		{name: "percentile zero", change: func(c *Config) { c.SLOs[0].Percentile = 0 },
			want: []want{{path: "slos[0].percentile", summary: "Invalid objective", detail: "slos[0].percentile must be in (0, 100], got 0", reads: []string{"slos[0].metric"}}}},
		{name: "objective repeated", change: func(c *Config) {
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 5000})
		},
			want: []want{{path: "slos[1]", summary: "Repeated objective", detail: "slos[1] repeats p95 time_to_first_token of slos[0]; keep the stricter one.", reads: []string{"slos[0]"}}}},
		// A percentile below 1 is refused, not warned about: 0.95 planned and then reported a
		// capacity twice the truth (p0.95 is the fastest request of a trial).
		{name: "percentile as a fraction is an error", change: func(c *Config) { c.SLOs[0].Percentile = 0.95 },
			want: []want{{path: "slos[0].percentile", summary: "Percentile below 1", reads: []string{"slos[0].metric"},
				detail: "slos[0].percentile = 0.95 asks for p0.95, the most extreme request of each trial rather than a share of users: percentiles are on a 0-100 scale. Write 95 for p95; for the fastest requests use percentile = 1 or more."}}},
		{name: "p0.5 on ITL is an error too", change: func(c *Config) {
			c.SLOs = []results.SLO{{Metric: results.MetricITL, Percentile: 0.5, ThresholdMs: 50}}
		},
			want: []want{{path: "slos[0].percentile", summary: "Percentile below 1", detail: "asks for p0.5", reads: []string{"slos[0].metric"}}}},
		{name: "percentile 1 is accepted", change: func(c *Config) { c.SLOs[0].Percentile = 1 }},
		{name: "TTFT in seconds warns", change: func(c *Config) { c.SLOs[0].ThresholdMs = 10 },
			want: []want{{path: "slos[0].threshold_ms", summary: "Latency threshold below 50 ms", detail: "Did you mean 10 s (threshold_ms = 10000)?", warning: true, reads: []string{"slos[0].metric"}}}},
		{name: "ITL with one output token", change: func(c *Config) {
			c.Workloads = append(c.Workloads, Workload{Label: "short", InputTokens: 8, OutputTokens: 1}, Workload{Label: "shorter", InputTokens: 4, OutputTokens: 1})
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricITL, Percentile: 95, ThresholdMs: 50})
		},
			want: []want{{path: "slos[1].metric", summary: "Objective that cannot be measured", reads: []string{"workloads[1].output_tokens"},
				detail: `slos[1].metric is inter_token_latency, which needs at least two output tokens per request, but workloads[1].output_tokens ("short") (and 1 more workloads) has output_tokens = 1, so no request would have a value to judge. Raise output_tokens to 2 or more`}}},
		{name: "time to second token with one output token", change: func(c *Config) {
			c.Workloads[0].OutputTokens = 1
			c.SLOs = []results.SLO{{Metric: results.MetricTTST, Percentile: 95, ThresholdMs: 200}}
		},
			want: []want{{path: "slos[0].metric", summary: "Objective that cannot be measured", detail: "slos[0].metric is time_to_second_token, which needs at least two output tokens", reads: []string{"workloads[0].output_tokens"}}}},
		{name: "per-user throughput with one output token", change: func(c *Config) {
			c.Workloads[0].OutputTokens = 1
			c.SLOs = []results.SLO{{Metric: results.MetricPerUserThroughput, Percentile: 5, ThresholdMs: 20}}
		},
			want: []want{{path: "slos[0].metric", summary: "Objective that cannot be measured", detail: "output_token_throughput_per_user, which needs at least two", reads: []string{"workloads[0].output_tokens"}}}},
		{name: "TTFT with one output token is fine", change: func(c *Config) { c.Workloads[0].OutputTokens = 1 }},
		{name: "goodput greater than 100", change: func(c *Config) {
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricGoodput, ThresholdMs: 100})
		},
			want: []want{{path: "slos[1].threshold_ms", summary: "Objective that cannot be met", reads: []string{"slos[1].metric", "slos[1].comparison"},
				detail: `slos[1].threshold_ms = 100 with comparison greater_than can never be met: goodput is a percentage of requests, at most 100. To demand that every request meets the other objectives, set comparison = "greater_than_or_equal"; otherwise lower threshold_ms.`}}},
		{name: "goodput at least 100 is fine", change: func(c *Config) {
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricGoodput, ThresholdMs: 100, Comparison: results.GreaterThanOrEqual})
		}},
		{name: "p50 stricter than p95 is fine", change: func(c *Config) {
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 2000})
		}},
		{name: "thresholds swapped between percentiles", change: func(c *Config) {
			c.SLOs = []results.SLO{{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 10000}, {Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 2000}}
		},
			want: []want{{path: "slos[0]", summary: "Objective that can never fail", reads: []string{"slos[1]"},
				detail: "slos[0] (p50 TTFT < 10000 ms) can never be the objective that fails: slos[1] (p95 TTFT < 2000 ms) is at least as strict and a trial's p95 is never below its p50, so their thresholds contradict each other. They look swapped: give the higher percentile the higher threshold, or remove slos[0]."}}},
		{name: "same threshold at two percentiles", change: func(c *Config) {
			c.SLOs = []results.SLO{{Metric: results.MetricITL, Percentile: 99, ThresholdMs: 40}, {Metric: results.MetricITL, Percentile: 50, ThresholdMs: 40}}
		},
			want: []want{{path: "slos[1]", summary: "Objective that can never fail", reads: []string{"slos[0]"}, detail: "a trial's p99 is never below its p50, so slos[1] adds nothing; remove it."}}},
		{name: "at most at p99, strictly under at p50, same threshold is fine", change: func(c *Config) {
			c.SLOs = []results.SLO{{Metric: results.MetricITL, Percentile: 99, ThresholdMs: 40, Comparison: results.LessThanOrEqual}, {Metric: results.MetricITL, Percentile: 50, ThresholdMs: 40}}
		}},
		{name: "per-user throughput swapped", change: func(c *Config) {
			c.SLOs = []results.SLO{{Metric: results.MetricPerUserThroughput, Percentile: 50, ThresholdMs: 10}, {Metric: results.MetricPerUserThroughput, Percentile: 5, ThresholdMs: 20}}
		},
			want: []want{{path: "slos[0]", summary: "Objective that can never fail", reads: []string{"slos[1]"},
				detail: "a trial's p5 is never above its p50, so their thresholds contradict each other. They look swapped: give the lower percentile the lower threshold, or remove slos[0]."}}},
		{name: "request latency below TTFT", change: func(c *Config) {
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricRequestLatency, Percentile: 95, ThresholdMs: 5000})
		},
			want: []want{{path: "slos[0]", summary: "Objective that can never fail", reads: []string{"slos[1]"},
				detail: "slos[0] (p95 TTFT < 10000 ms) can never be the objective that fails: slos[1] (p95 Request latency < 5000 ms) is at least as strict and a request's latency is never below its time to first token"}}},
		{name: "request latency above TTFT is fine", change: func(c *Config) {
			c.SLOs = append(c.SLOs, results.SLO{Metric: results.MetricRequestLatency, Percentile: 95, ThresholdMs: 60000})
		}},
		{name: "search bounds inverted", change: func(c *Config) { c.MinConcurrency, c.MaxConcurrency = 8, 4 },
			want: []want{{path: "search.min_concurrency", summary: "Search bounds inverted", detail: "search.min_concurrency (8) is greater than search.max_concurrency (4)", reads: []string{"search.max_concurrency"}}}},
		{name: "levels out of range and repeated", change: func(c *Config) { c.ConcurrencyLevels = []int{4, 0, 4} },
			want: []want{
				{path: "search.concurrency_levels[1]", summary: "Value too small", detail: "search.concurrency_levels[1] must be at least 1, got 0."},
				{path: "search.concurrency_levels[2]", summary: "Repeated concurrency level", detail: "4 is already search.concurrency_levels[0]", reads: []string{"search.concurrency_levels[0]"}},
			}},
		{name: "thousands of repeated levels are one problem", change: func(c *Config) {
			c.ConcurrencyLevels = make([]int, 5000)
			for i := range c.ConcurrencyLevels {
				c.ConcurrencyLevels[i] = 2
			}
		},
			want: []want{{path: "search.concurrency_levels[1]", summary: "Repeated concurrency level", reads: []string{"search.concurrency_levels[0]"},
				detail: "4999 of the 5000 levels in search.concurrency_levels repeat an earlier one. The first: search.concurrency_levels[1]: 2 is already search.concurrency_levels[0]; list each level once."}}},
		{name: "thousands of levels out of range are one problem each way", change: func(c *Config) {
			c.ConcurrencyLevels = []int{1}
			for i := range 3000 {
				c.ConcurrencyLevels = append(c.ConcurrencyLevels, -i, MaxConcurrency+1+i)
			}
		},
			want: []want{
				{path: "search.concurrency_levels[1]", summary: "Value too small", detail: "3000 of the 6001 levels in search.concurrency_levels are below 1. The first: search.concurrency_levels[1] must be at least 1, got 0."},
				{path: "search.concurrency_levels[2]", summary: "Value too large", detail: "3000 of the 6001 levels in search.concurrency_levels are above 100000. The first: search.concurrency_levels[2] must be at most 100000, got 100001."},
			}},
		{name: "levels empty", change: func(c *Config) { c.ConcurrencyLevels = []int{} },
			want: []want{{path: "search.concurrency_levels", summary: "No concurrency levels", detail: "must list at least one level"}}},
		{name: "trial counts", change: func(c *Config) {
			c.WarmupRequests, c.MeasuredRequests, c.ConfirmationTrials = -1, 0, MaxConfirmationTrials+1
		},
			want: []want{
				{path: "trial.warmup_requests", summary: "Value too small", detail: "trial.warmup_requests must be at least 0, got -1."},
				{path: "trial.measured_requests", summary: "Value too small", detail: "trial.measured_requests must be at least 1, got 0."},
				{path: "trial.confirmation_trials", summary: "Value too large", detail: "trial.confirmation_trials must be at most 100, got 101."},
			}},
		{name: "engine warm-up negative", change: func(c *Config) { c.EngineWarmupRequests = -1 },
			want: []want{{path: "trial.engine_warmup_requests", summary: "Value too small", detail: "trial.engine_warmup_requests must be at least 0, got -1."}}},
		{name: "unknown cache flush", change: func(c *Config) { c.CacheFlush = "always" },
			want: []want{{path: "trial.cache_flush", summary: "Unknown cache flush", detail: `trial.cache_flush must be one of auto, none, sglang, vllm, llamacpp, got "always".`}}},
		{name: "durations not positive", change: func(c *Config) { c.StallTimeout, c.RequestTimeout = 0, -5*time.Minute },
			want: []want{
				{path: "trial.stall_timeout", summary: "Invalid duration", detail: `trial.stall_timeout must be a positive Go duration such as "90s" or "30m", got "0s".`},
				{path: "trial.request_timeout", summary: "Invalid duration", detail: `got "-5m0s"`},
			}},
		{name: "chunk times without records", change: func(c *Config) { c.RecordChunkTimes = true },
			want: []want{{path: "record_chunk_times", summary: "Chunk times without records", detail: "set records_directory or remove record_chunk_times", reads: []string{"records_directory"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := validConfig()
			tc.change(&c)
			got := c.Validate()
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				var reads []string
				for _, r := range g.Reads {
					reads = append(reads, r.String())
				}
				if g.Path.String() != w.path || g.Summary != w.summary || !strings.Contains(g.Detail, w.detail) || g.Warning != w.warning || !reflect.DeepEqual(reads, w.reads) {
					t.Errorf("problem %d = {%s %q %q warning=%v reads=%v}, want {%s %q …%q… warning=%v reads=%v}",
						i, g.Path, g.Summary, g.Detail, g.Warning, reads, w.path, w.summary, w.detail, w.warning, w.reads)
				}
			}
			if err := Err(got); (err != nil) != (len(tc.want) > 0 && !tc.want[0].warning) {
				t.Errorf("Err = %v", err)
			}
		})
	}
}
