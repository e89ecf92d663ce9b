package capacity

import (
	"reflect"
	"strings"
	"testing"
	"time"

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
			want: []want{{path: "endpoint", summary: "Invalid endpoint URL", detail: `endpoint "http://admin:xxxxx@gpu-host.example.com" carries credentials`}}},
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
		{name: "percentile as a fraction and TTFT in seconds warn", change: func(c *Config) { c.SLOs[0].Percentile, c.SLOs[0].ThresholdMs = 0.95, 10 },
			want: []want{
				{path: "slos[0].percentile", summary: "Percentile below 1", detail: "Did you mean 95 (p95)?", warning: true},
				{path: "slos[0].threshold_ms", summary: "Latency threshold below 50 ms", detail: "Did you mean 10 s (threshold_ms = 10000)?", warning: true, reads: []string{"slos[0].metric"}},
			}},
		{name: "search bounds inverted", change: func(c *Config) { c.MinConcurrency, c.MaxConcurrency = 8, 4 },
			want: []want{{path: "search.min_concurrency", summary: "Search bounds inverted", detail: "search.min_concurrency (8) is greater than search.max_concurrency (4)", reads: []string{"search.max_concurrency"}}}},
		{name: "levels out of range and repeated", change: func(c *Config) { c.ConcurrencyLevels = []int{4, 0, 4} },
			want: []want{
				{path: "search.concurrency_levels[1]", summary: "Value too small", detail: "search.concurrency_levels[1] must be at least 1, got 0."},
				{path: "search.concurrency_levels[2]", summary: "Repeated concurrency level", detail: "4 is already search.concurrency_levels[0]", reads: []string{"search.concurrency_levels[0]"}},
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
