package results

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// `runner` is additive: a document that has it reads it and writes it back as it was; one
// without it has none.
func TestRunnerRoundTrip(t *testing.T) {
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if d.Runner != nil {
		t.Fatalf("the reference document has no runner, read %+v", d.Runner)
	}
	d.Runner = &Runner{Kind: "docker", Host: "ssh://deploy@gpu-host", Network: "container:0123abcd"}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"runner":{"kind":"docker","host":"ssh://deploy@gpu-host","network":"container:0123abcd"}`)) &&
		!strings.Contains(string(out), `"network": "container:0123abcd"`) {
		t.Fatalf("the runner is not written:\n%s", out)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Runner == nil || *back.Runner != *d.Runner {
		t.Fatalf("read back %+v, want %+v", back.Runner, d.Runner)
	}
	again, err := Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Error("the document does not round-trip byte for byte")
	}
}
