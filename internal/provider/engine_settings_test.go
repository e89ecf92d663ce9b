package provider

import (
	"strings"
	"testing"
)

// A misspelt engine is one error naming the choices, not that error plus the constraints of
// an engine that does not exist.
func TestEngineTypoIsOneError(t *testing.T) {
	ds := validateResourceConfig(t, "llmserve_inference_server", map[string]any{
		"name": "x", "image": "img", "engine": "sglnag", "model": "m",
	})
	if len(ds) != 1 || !strings.Contains(ds[0].Detail, `"sglang"`) || !strings.Contains(ds[0].Detail, `"sglnag"`) {
		t.Fatalf("diagnostics = %q, want one error naming the typo and the engines", diagSummaries(ds))
	}
}
