package results

import (
	"os"
	"strings"
	"testing"
)

func TestAIPerfExportHint(t *testing.T) {
	t.Parallel()
	ref, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		hint      bool
	}{
		{"aiperf export", `{"records":{"time_to_first_token":{"unit":"ms","avg":812.5,"p95":1650.2}},"input_config":{"endpoint":{"model_names":["qwen"]}},"was_cancelled":false}`, true},
		{"genai-perf export", `{"time_to_first_token":{"unit":"ms","avg":812.5,"p95":1650.2},"request_throughput":{"unit":"requests/sec","avg":3.1},"input_config":{}}`, true},
		{"schema v1 reference", string(ref), false},
		{"unrelated json", `{"hello":"world"}`, false},
		{"not json", `time_to_first_token`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AIPerfExportHint([]byte(tc.doc))
			if (got != "") != tc.hint {
				t.Fatalf("AIPerfExportHint = %q, want hint %v", got, tc.hint)
			}
			if tc.hint && !strings.Contains(got, "schema v1") {
				t.Errorf("hint does not say what to give instead: %q", got)
			}
		})
	}
}
