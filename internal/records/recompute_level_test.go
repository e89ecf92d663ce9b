package records

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Recompute's errors name where a trial ran: a rate trial by its rate, a replay's by its
// speedup, not "concurrency 0".
func TestRecomputeErrorsNameTheLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		trial results.Trial
		want  string
	}{
		{results.Trial{Concurrency: 4}, "at concurrency 4:"},
		{results.Trial{RequestRate: 2.5}, "at 2.5 requests/s:"},
		{results.Trial{RequestRate: 7.5, Speedup: 1.5}, "at speedup 1.5 (7.5 requests/s):"},
	} {
		tc.trial.Kind, tc.trial.Trial, tc.trial.RecordsFile = "confirmation", 1, "missing.jsonl"
		doc := &results.Document{Workloads: []results.Workload{{Label: "w", AllTrials: []results.Trial{tc.trial}}}}
		_, err := Recompute(doc, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), `workload "w" confirmation trial 1 `+tc.want) {
			t.Errorf("error %v, want it to name %q", err, tc.want)
		}
	}
}
