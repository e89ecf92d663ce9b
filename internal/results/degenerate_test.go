package results

import (
	"os"
	"strings"
	"testing"
)

// degenerate_outputs is read, written back as it was, summed by nobody here, and checked:
// more judged outputs than measured requests, or more degenerate than judged, is refused,
// and a trial most of whose outputs were degenerate has the verdict error.
func TestDegenerateOutputsField(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	tr := &d.Workloads[0].PassingTrials[0]
	if tr.Correctness.DegenerateOutputs != nil {
		t.Fatal("the reference has no degenerate_outputs; parsed one")
	}
	tr.Correctness.DegenerateOutputs = &DegenerateOutputs{Requests: 2, Checked: 64, RepeatedCodePoint: 2, IdenticalAcrossPrompts: 1}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"degenerate_outputs": {
              "requests": 2,
              "checked": 64,
              "empty": 0,
              "repeated_code_point": 2,
              "identical_across_prompts": 1
            }`) {
		t.Errorf("written:\n%s", out)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Workloads[0].PassingTrials[0].Correctness.DegenerateOutputs; got == nil || *got != *tr.Correctness.DegenerateOutputs {
		t.Errorf("read back %+v", got)
	}
	again, _ := Marshal(back)
	if string(again) != string(out) {
		t.Error("does not round-trip byte for byte")
	}

	// repeated_token is additive: written only when counted, read back as written.
	tr.Correctness.DegenerateOutputs = &DegenerateOutputs{Requests: 3, Checked: 64, RepeatedToken: 3}
	if out, err = Marshal(d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"identical_across_prompts": 0,
              "repeated_token": 3
            }`) {
		t.Errorf("written:\n%s", out)
	}
	if back, err = Parse(out); err != nil {
		t.Fatal(err)
	}
	if got := back.Workloads[0].PassingTrials[0].Correctness.DegenerateOutputs; got == nil || *got != *tr.Correctness.DegenerateOutputs {
		t.Errorf("read back %+v", got)
	}
	tr.Correctness.DegenerateOutputs = &DegenerateOutputs{Requests: 2, Checked: 64, RepeatedCodePoint: 2, IdenticalAcrossPrompts: 1}

	if v := Verdict(d.Objectives(), *tr); v != VerdictPass {
		t.Errorf("verdict with 2 of 64 degenerate = %q, want pass", v)
	}
	most := *tr
	most.Correctness.DegenerateOutputs = &DegenerateOutputs{Requests: 33, Checked: 64, RepeatedCodePoint: 33}
	if v := Verdict(d.Objectives(), most); v != VerdictError {
		t.Errorf("verdict with 33 of 64 degenerate = %q, want error", v)
	}

	for _, tc := range []struct {
		d    DegenerateOutputs
		want string
	}{
		{DegenerateOutputs{Checked: 65}, "correctness.degenerate_outputs.checked: 65 judged outputs in a trial of 64 measured requests"},
		{DegenerateOutputs{Requests: 5, Checked: 4}, "correctness.degenerate_outputs.requests: 5 degenerate outputs of 4 judged"},
		{DegenerateOutputs{Requests: 1, Checked: 4, Empty: 2}, "a rule's count (2 empty, 0 repeated_code_point, 0 identical_across_prompts, 0 repeated_token) is negative or above"},
		{DegenerateOutputs{Requests: 1, Checked: 4, RepeatedToken: 3}, "a rule's count (0 empty, 0 repeated_code_point, 0 identical_across_prompts, 3 repeated_token) is negative or above"},
	} {
		tr.Correctness.DegenerateOutputs = &tc.d
		bad, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse with %+v: %v, want %q", tc.d, err, tc.want)
		}
	}
}
