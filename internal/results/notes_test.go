package results

import (
	"strings"
	"testing"
)

// Notes are an additive key of ours: written when present, read back as typed values, and a
// mistyped one is reported with its path.
func TestWorkloadNotesRoundTrip(t *testing.T) {
	doc := &Document{SchemaVersion: 1, Workloads: []Workload{{Label: "a", Notes: []string{"concurrency 5 passed although 4 failed"}}}}
	raw, err := Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"notes": [`) {
		t.Fatalf("notes not written:\n%s", raw)
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Workloads[0].Notes; len(got) != 1 || got[0] != "concurrency 5 passed although 4 failed" {
		t.Fatalf("notes read back as %q", got)
	}
	bad := strings.Replace(string(raw), `"concurrency 5 passed although 4 failed"`, `5`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "workloads[0].notes[0]: expected string") {
		t.Fatalf("mistyped note: error %v", err)
	}
}
