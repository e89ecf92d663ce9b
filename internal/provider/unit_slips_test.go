package provider

import (
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// Values that are valid but almost certainly a slip of units plan with a warning that names
// the likely intent (a percentile below 1 is an error); sensible values plan silently.
func TestBenchmarkUnitSlipWarnings(t *testing.T) {
	t.Parallel()
	workloads := []any{map[string]any{"label": "a", "input_tokens": 8, "output_tokens": 8}}
	for _, tc := range []struct {
		name string
		slo  map[string]any
		want []string // "severity: summary: detail" of every diagnostic
	}{
		{"sensible", map[string]any{"percentile": 95.0, "threshold_ms": 10000.0}, nil},
		// A percentile below 1 is an error since the p0.95 that planned with a warning reported
		// twice the true capacity (issue 19).
		{"percentile as a fraction", map[string]any{"percentile": 0.95, "threshold_ms": 10000.0}, []string{
			"error: Percentile below 1: slos[0].percentile = 0.95 asks for p0.95, the most extreme request of each trial rather than a share of users: percentiles are on a 0-100 scale. Write 95 for p95; for the fastest requests use percentile = 1 or more.",
		}},
		{"ttft threshold in seconds", map[string]any{"percentile": 95.0, "threshold_ms": 10.0}, []string{
			"warning: Latency threshold below 50 ms: threshold_ms = 10 demands a time to first token under 10 ms: thresholds are in milliseconds. Did you mean 10 s (threshold_ms = 10000)?",
		}},
		{"request latency threshold in seconds", map[string]any{"metric": "request_latency", "percentile": 99.0, "threshold_ms": 30.0}, []string{
			"warning: Latency threshold below 50 ms: threshold_ms = 30 demands a request latency under 30 ms: thresholds are in milliseconds. Did you mean 30 s (threshold_ms = 30000)?",
		}},
		{"both slips", map[string]any{"percentile": 0.5, "threshold_ms": 2.0}, []string{
			"error: Percentile below 1: slos[0].percentile = 0.5 asks for p0.5, the most extreme request of each trial rather than a share of users: percentiles are on a 0-100 scale. Write 50 for p50; for the fastest requests use percentile = 1 or more.",
			"warning: Latency threshold below 50 ms: threshold_ms = 2 demands a time to first token under 2 ms: thresholds are in milliseconds. Did you mean 2 s (threshold_ms = 2000)?",
		}},
		// An inter-token latency of 20 ms is an ordinary objective.
		{"small ITL threshold", map[string]any{"metric": "inter_token_latency", "percentile": 95.0, "threshold_ms": 20.0}, nil},
		{"threshold at 50 ms", map[string]any{"percentile": 95.0, "threshold_ms": 50.0}, nil},
		{"percentile 1", map[string]any{"percentile": 1.0, "threshold_ms": 500.0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := diagSummaries(validateResourceConfig(t, "llmserve_capacity_benchmark", map[string]any{
				"endpoint": "http://127.0.0.1:9", "model": "m", "workloads": workloads, "slos": []any{tc.slo},
			}))
			if !slices.Equal(got, tc.want) {
				t.Errorf("diagnostics\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestServerReadinessBeyondTimeoutsWarning(t *testing.T) {
	t.Parallel()
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"name": "x", "image": "img", "engine": "sglang", "model": "m"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		config map[string]any
		want   []string
	}{
		{"defaults", base(nil), nil},
		{"readiness within the default bounds", base(map[string]any{"readiness_timeout": "39m"}), nil},
		{"readiness beyond the default create and update", base(map[string]any{"readiness_timeout": "1h"}), []string{
			"warning: readiness_timeout is longer than timeouts.create: readiness_timeout is 1h but timeouts.create is 40m, so the wait for the server would be cut at 40m. Raise timeouts.create above 1h (timeouts = { create = \"1h10m\" }), or shorten readiness_timeout.",
			"warning: readiness_timeout is longer than timeouts.update: readiness_timeout is 1h but timeouts.update is 40m, so the wait for the server would be cut at 40m. Raise timeouts.update above 1h (timeouts = { update = \"1h10m\" }), or shorten readiness_timeout.",
		}},
		{"both bounds raised", base(map[string]any{"readiness_timeout": "1h", "timeouts": map[string]any{"create": "2h", "update": "2h"}}), nil},
		{"short create bound", base(map[string]any{"timeouts": map[string]any{"create": "10m"}}), []string{
			"warning: readiness_timeout is longer than timeouts.create: readiness_timeout is 30m but timeouts.create is 10m, so the wait for the server would be cut at 10m. Raise timeouts.create above 30m (timeouts = { create = \"40m\" }), or shorten readiness_timeout.",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := validateResourceConfig(t, "llmserve_inference_server", tc.config)
			got := diagSummaries(ds)
			if !slices.Equal(got, tc.want) {
				t.Errorf("diagnostics\n got %q\nwant %q", got, tc.want)
			}
			for _, d := range ds {
				if d.Severity == tfprotov6.DiagnosticSeverityWarning && d.Attribute.String() != "AttributeName(\"readiness_timeout\")" {
					t.Errorf("warning on %s, want readiness_timeout", d.Attribute)
				}
			}
		})
	}
}
