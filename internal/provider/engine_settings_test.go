package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// A misspelt engine is one error naming the choices, not that error plus the constraints of
// an engine that does not exist.
func TestEngineTypoIsOneError(t *testing.T) {
	t.Parallel()
	ds := validateResourceConfig(t, "llmserve_inference_server", map[string]any{
		"name": "x", "image": "img", "engine": "sglnag", "model": "m",
	})
	if len(ds) != 1 || !strings.Contains(ds[0].Detail, `"sglang"`) || !strings.Contains(ds[0].Detail, `"sglnag"`) {
		t.Fatalf("diagnostics = %q, want one error naming the typo and the engines", diagSummaries(ds))
	}
}

// One bad duration is one error, and it names the attribute and the fix. One that does not
// parse in a durationType attribute is the type's error; in timeouts, and a zero or negative
// one anywhere, it is the attribute's own rule's. Before, trial.* and timeouts.* values that
// did not parse got two errors, and the library type's error named no attribute.
func TestDurationIsOneError(t *testing.T) {
	t.Parallel()
	server := map[string]any{"name": "x", "image": "img", "engine": "sglang", "model": "m"}
	deployment := map[string]any{"name": "x", "image": "img", "engine": "llamacpp", "model": "/m/x.gguf"}
	bench := map[string]any{"endpoint": "http://127.0.0.1:9", "model": "m",
		"workloads": []any{map[string]any{"label": "a", "input_tokens": 8, "output_tokens": 8}},
		"slos":      []any{map[string]any{"percentile": 95.0, "threshold_ms": 100.0}}}
	with := func(base map[string]any, k string, v any) map[string]any {
		m := map[string]any{k: v}
		for bk, bv := range base {
			if bk != k {
				m[bk] = bv
			}
		}
		return m
	}
	const typeError, ours = "Invalid duration", "Invalid duration" // the type's and the rule's, worded alike
	for _, tc := range []struct {
		name, typeName string
		config         map[string]any
		summary        string // of the one error
		detail         string // in its detail
	}{
		{"server readiness_timeout words", "llmserve_inference_server", with(server, "readiness_timeout", "ten minutes"), typeError, `readiness_timeout must be a Go duration: a number and a unit (ns, us, ms, s, m, h) such as "90s", "30m" or "1h30m", got "ten minutes"`},
		{"server readiness_timeout zero", "llmserve_inference_server", with(server, "readiness_timeout", "0s"), ours, `readiness_timeout must be a positive Go duration such as "90s" or "30m", got "0s"`},
		{"server timeouts.create words", "llmserve_inference_server", with(server, "timeouts", map[string]any{"create": "ten"}), ours, `timeouts.create must be a positive Go duration such as "90s" or "30m", got "ten"`},
		{"server timeouts.create negative", "llmserve_inference_server", with(server, "timeouts", map[string]any{"create": "-5m"}), ours, `timeouts.create must be a positive Go duration`},
		{"deployment readiness_timeout words", "llmserve_inference_deployment", with(deployment, "readiness_timeout", "soon"), typeError, `readiness_timeout must be a Go duration: a number and a unit`},
		{"deployment timeouts.update words", "llmserve_inference_deployment", with(deployment, "timeouts", map[string]any{"update": "1 hour"}), ours, `timeouts.update must be a positive Go duration such as "90s" or "30m", got "1 hour"`},
		{"deployment timeouts.update zero", "llmserve_inference_deployment", with(deployment, "timeouts", map[string]any{"update": "0m"}), ours, `timeouts.update must be a positive Go duration`},
		{"benchmark stall_timeout words", "llmserve_capacity_benchmark", with(bench, "trial", map[string]any{"stall_timeout": "five minutes"}), typeError, `trial.stall_timeout must be a Go duration: a number and a unit (ns, us, ms, s, m, h) such as "90s", "30m" or "1h30m", got "five minutes"`},
		{"benchmark request_timeout negative", "llmserve_capacity_benchmark", with(bench, "trial", map[string]any{"request_timeout": "-5m"}), ours, `trial.request_timeout must be a positive Go duration such as "90s" or "30m", got "-5m0s"`},
		{"benchmark timeouts.create words", "llmserve_capacity_benchmark", with(bench, "timeouts", map[string]any{"create": "an hour"}), ours, `timeouts.create must be a positive Go duration such as "90s" or "30m", got "an hour"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := validateResourceConfig(t, tc.typeName, tc.config)
			var errs []string
			for _, d := range ds {
				if d.Severity == tfprotov6.DiagnosticSeverityError {
					errs = append(errs, d.Summary+": "+d.Detail)
				}
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0], tc.summary+": ") || !strings.Contains(errs[0], tc.detail) {
				t.Fatalf("errors = %q, want exactly one %q containing %q", errs, tc.summary, tc.detail)
			}
		})
	}
}

// The same launch draws the same plan warnings on a Docker host and on a cluster: Intel's
// runbook facts (spec.LaunchWarnings) reach the deployment as they reach the server, and a
// Vulkan deployment that would see no GPU is warned about.
func TestLaunchWarningsOnBothBackends(t *testing.T) {
	t.Parallel()
	nextn := map[string]any{"image": "lmsysorg/sglang:v0.5.20-xpu", "engine": "sglang", "model": "Qwen/Qwen3.5-35B-A3B", "accelerator": "xpu",
		"speculative": map[string]any{"algorithm": "NEXTN", "steps": 3, "topk": 1, "draft_tokens": 4}}
	for _, typeName := range []string{"llmserve_inference_server", "llmserve_inference_deployment"} {
		cfg := map[string]any{"name": "x"}
		for k, v := range nextn {
			cfg[k] = v
		}
		var warnings []string
		for _, d := range validateResourceConfig(t, typeName, cfg) {
			if d.Severity == tfprotov6.DiagnosticSeverityWarning {
				warnings = append(warnings, d.Summary)
			} else {
				t.Errorf("%s: %s: %s", typeName, d.Summary, d.Detail)
			}
		}
		if len(warnings) != 1 || warnings[0] != "NEXTN on XPU is unproven" {
			t.Errorf("%s: warnings %q, want the NEXTN one", typeName, warnings)
		}
	}
	vulkan := map[string]any{"name": "x", "image": "llmserve/llamacpp-vulkan:latest", "engine": "llamacpp", "model": "/models/m.gguf", "accelerator": "vulkan"}
	ds := validateResourceConfig(t, "llmserve_inference_deployment", vulkan)
	if len(ds) != 1 || ds[0].Severity != tfprotov6.DiagnosticSeverityWarning || ds[0].Summary != "Vulkan replicas request no GPU" {
		t.Fatalf("a vulkan deployment without a device: %q", diagSummaries(ds))
	}
	vulkan["gpu_ids"] = []any{"0"} // lavapipe, named
	if ds := validateResourceConfig(t, "llmserve_inference_deployment", vulkan); len(ds) != 0 {
		t.Errorf("lavapipe named by gpu_ids: %q", diagSummaries(ds))
	}
}
