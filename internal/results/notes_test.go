package results

import (
	"strings"
	"testing"
)

// Notes are an additive key of ours: written when present, read back as typed values, and a
// mistyped one is reported with its path.
func TestWorkloadNotesRoundTrip(t *testing.T) {
	t.Parallel()
	doc := &Document{SchemaVersion: 1, SLOs: []SLO{{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 1, Comparison: StrictlyLessThan}}, Workloads: []Workload{{Label: "a", Notes: []string{"concurrency 5 passed although 4 failed"}}}}
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

// Optional keys present with zero values survive a round trip: the typed writer would omit
// them, so the reader keeps them as read.
func TestZeroValuedOptionalKeysRoundTrip(t *testing.T) {
	t.Parallel()
	doc := `{"schema_version":1,"experiment":{"image_tag":"","image_digest":"","model":"m","checkpoint":"","hardware":"","driver":"","kernel":"","tensor_parallelism":1,"context_length":1,"physical_token_pool":1,"speculative_mode":null},
"aiperf":{"version":"v","arrival_pattern":"a","streaming":true,"server_token_count":true,"temperature":0,"ignore_eos":true,"warmups_per_trial":1,"measured_requests_per_trial":1,"independent_trials_per_boundary_side":1,"cache_policy":"c"},
"slo":{"metric":"time_to_first_token","percentile":95,"threshold_ms":10,"comparison":"strictly_less_than","all_confirmation_trials_must_pass":true},
"workloads":[{"label":"a","configured_isl":1,"configured_osl":1,"server_prompt_tokens":{"min":1,"max":1},"maximum_passing_concurrency":null,"first_failing_concurrency":null,"passing_trials":[],"failing_trials":[],"notes":[]}],
"correctness_total":{"warmup_records":0,"unique_warmup_prompts":0,"warmup_profile_prompt_overlap":0,"profiling_records":0,"http_200":0,"unique_prompts":0,"unique_outputs":0,"generated_chunks":0,"generated_utf8_bytes":0,"completion_tokens_total":0,"finish_reason_length":0,"errors":0,"cancelled":false,"output_length_mismatches":0.0,"uniqueness_scope":""}}`
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"notes": []`, `"uniqueness_scope": ""`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("round trip lost %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "within_each_trial") {
		t.Errorf("an empty uniqueness_scope that was read was replaced by the default:\n%s", out)
	}
}

func TestEmptyWorkloadLabelRejected(t *testing.T) {
	t.Parallel()
	raw, err := Marshal(&Document{SchemaVersion: 1, Workloads: []Workload{{Label: ""}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), "workloads[0].label: must not be empty") {
		t.Fatalf("error = %v, want workloads[0].label: must not be empty", err)
	}
}

func TestMarkdownShowsNotes(t *testing.T) {
	t.Parallel()
	c := 64
	doc := &Document{SchemaVersion: 1, Workloads: []Workload{{Label: "a", MaximumPassingConcurrency: &c,
		Notes: []string{"every concurrency tried passed, up to 64: capacity is at least 64; raise search.max_concurrency to find the boundary"}}}}
	want := "> **Note:** every concurrency tried passed, up to 64: capacity is at least 64; raise search.max\\_concurrency to find the boundary\n"
	if got := Markdown(doc); !strings.Contains(got, want) {
		t.Fatalf("markdown lacks %q:\n%s", want, got)
	}
}
