package provider

import (
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A rule that reads a value known only at apply waits for apply; the rules that read only
// known values still hold at plan. (Create applies the same rules to the planned values, so
// an unknown value meets them before anything is sent: TestAccBadConfigurations_unknownAtPlan.)
func TestBenchmarkValidationWithUnknowns(t *testing.T) {
	t.Parallel()
	unknown := tftypes.UnknownValue
	workload := func(label any, in any, extra map[string]any) map[string]any {
		w := map[string]any{"label": label, "input_tokens": in, "output_tokens": 8}
		for k, v := range extra {
			w[k] = v
		}
		return w
	}
	slo := []any{map[string]any{"percentile": 95.0, "threshold_ms": 100.0}}
	for _, tc := range []struct {
		name   string
		config map[string]any
		want   []string // "severity: summary: detail" of every diagnostic
	}{
		{"prefix against an unknown prompt length waits",
			map[string]any{"workloads": []any{workload("a", unknown, map[string]any{"shared_prefix_tokens": 8})}}, nil},
		{"the same rule with both known fails",
			map[string]any{"workloads": []any{workload("a", 8, map[string]any{"shared_prefix_tokens": 8})}}, []string{
				"error: Shared prefix as long as the prompt: workloads[0].shared_prefix_tokens (8) counts within input_tokens (8) and must be below it, leaving each prompt a part of its own; lower shared_prefix_tokens or raise input_tokens.",
			}},
		{"a label unknown at plan is not a duplicate yet",
			map[string]any{"workloads": []any{workload("a", 8, nil), workload(unknown, 8, nil)}}, nil},
		{"a trigger known only at apply",
			map[string]any{"triggers": map[string]any{"server": unknown, "revision": "main"}}, nil},
		{"experiment known only in part",
			map[string]any{"experiment": map[string]any{"image_tag": unknown, "tensor_parallelism": 2}}, nil},
		{"replica endpoints from a deployment not applied yet",
			map[string]any{"replica_endpoints": unknown}, nil},
		{"a replica endpoint unknown at plan is not a duplicate yet",
			map[string]any{"replica_endpoints": []any{"http://10.0.0.7:30000", unknown, "http://10.0.0.7:30000"}}, nil},
		{"replica endpoints empty",
			map[string]any{"replica_endpoints": []any{}}, []string{
				"error: No replica endpoints: replica_endpoints lists no endpoint, so no replica would be flushed; set replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints (one base URL per ready pod), or remove it to flush through endpoint alone.",
			}},
		{"a replica listed twice",
			map[string]any{"replica_endpoints": []any{"http://10.0.0.7:30000", "http://10.0.0.8:30000", "http://10.0.0.7:30000/"}}, []string{
				`error: Replica endpoint listed twice: replica_endpoints[2] "http://10.0.0.7:30000/" is also replica_endpoints[0]: each replica must be listed once; set replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints (one base URL per ready pod).`,
			}},
		{"unknown workloads list",
			map[string]any{"workloads": unknown}, nil},
		{"unknown endpoint waits, an empty model does not",
			map[string]any{"endpoint": unknown, "model": ""}, []string{
				"error: Empty model name: model must not be empty; give the model name the server lists under /v1/models.",
			}},
		{"unknown max_concurrency: its own bound waits, min's holds",
			map[string]any{"search": map[string]any{"min_concurrency": 0, "max_concurrency": unknown}}, []string{
				"error: Value too small: search.min_concurrency must be at least 1, got 0.",
			}},
		{"a duration that does not parse is one error, the type's, at the attribute",
			map[string]any{"trial": map[string]any{"stall_timeout": "five minutes"}}, []string{
				`error: Invalid duration: trial.stall_timeout must be a Go duration: a number and a unit (ns, us, ms, s, m, h) such as "90s", "30m" or "1h30m", got "five minutes".`,
			}},
		{"a zero duration is the domain's error, naming the attribute and the fix",
			map[string]any{"trial": map[string]any{"stall_timeout": "0s"}}, []string{
				`error: Invalid duration: trial.stall_timeout must be a positive Go duration such as "90s" or "30m", got "0s".`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := map[string]any{"endpoint": "http://127.0.0.1:9", "model": "m", "workloads": []any{workload("a", 8, nil)}, "slos": slo}
			for k, v := range tc.config {
				config[k] = v
			}
			got := diagSummaries(validateResourceConfig(t, "llmserve_capacity_benchmark", config))
			if !slices.Equal(got, tc.want) {
				t.Errorf("diagnostics\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
