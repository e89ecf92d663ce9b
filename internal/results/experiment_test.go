package results

import (
	"bytes"
	"strings"
	"testing"
)

// experiment.accelerator is additive: written only when known, read back as written, and a
// document without it (the reference) round-trips without growing one.
func TestRoundTripExperimentAccelerator(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	plain, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte(`"accelerator"`)) {
		t.Fatalf("a document without an accelerator grew one:\n%s", plain)
	}
	d.Experiment.Accelerator = "vulkan"
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Experiment.Accelerator != "vulkan" {
		t.Fatalf("accelerator after round trip: %q", back.Experiment.Accelerator)
	}
	bad := bytes.Replace(out, []byte(`"accelerator": "vulkan"`), []byte(`"accelerator": 3`), 1)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "experiment.accelerator") {
		t.Fatalf("err = %v, want the bad field refused with its path", err)
	}
}
