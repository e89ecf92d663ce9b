package records

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func recorded(t *testing.T) (*results.Document, string) {
	t.Helper()
	return fixture(t, "recorded")
}

// The recorded run verifies against its records: 11 trials, every value identical, the
// headline derived from the recomputed trials.
func TestVerifyRecorded(t *testing.T) {
	t.Parallel()
	d, dir := recorded(t)
	v, err := Verify(d, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || len(v.Trials) != 11 {
		t.Fatalf("%d trials, differences %v, contradictions %v", len(v.Trials), v.Differences, v.Contradictions)
	}
}

// A records_file that leaves the records directory is refused before anything is read.
func TestVerifyRefusesPathsOutsideTheDirectory(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"../../recorded/result.json", "/etc/passwd"} {
		d, dir := recorded(t)
		d.Workloads[0].AllTrials[0].RecordsFile = bad
		_, err := Verify(d, dir)
		if err == nil || !strings.Contains(err.Error(), "is not a relative path inside the directory") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
