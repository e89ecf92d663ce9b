package results

import (
	"strings"
	"testing"
)

// Documents that parse as JSON of the right shape but cannot be a result are refused, each
// with the JSON path of the impossible value.
func TestParseRefusesImpossibleDocuments(t *testing.T) {
	ref := string(readReference(t))
	tests := []struct {
		name, old, new string
		wantPath       string
	}{
		{"maximum passing below 1", `"maximum_passing_concurrency": 11`, `"maximum_passing_concurrency": 0`, "workloads[0].maximum_passing_concurrency: concurrency 0 is below 1"},
		{"first failing below 1", `"first_failing_concurrency": 12`, `"first_failing_concurrency": -3`, "workloads[0].first_failing_concurrency: concurrency -3 is below 1"},
		{"maximum passing equals first failing", `"maximum_passing_concurrency": 11`, `"maximum_passing_concurrency": 12`, "workloads[0].first_failing_concurrency: 12 is not above maximum_passing_concurrency 12"},
		{"maximum passing above first failing", `"maximum_passing_concurrency": 11`, `"maximum_passing_concurrency": 40`, "workloads[0].first_failing_concurrency: 12 is not above maximum_passing_concurrency 40"},
		{"percentile 0", `"percentile": 95`, `"percentile": 0`, "slo.percentile: 0 is outside (0, 100]"},
		{"percentile above 100", `"percentile": 95`, `"percentile": 100.5`, "slo.percentile: 100.5 is outside (0, 100]"},
		{"negative threshold", `"threshold_ms": 10000`, `"threshold_ms": -1`, "slo.threshold_ms: -1 is not a positive threshold"},
		{"negative latency", `"p95": 7095.03604365`, `"p95": -7095.03604365`, "workloads[0].passing_trials[0].ttft_ms.p95: -7095.03604365 is negative"},
		{"negative counter", `"errors": 0`, `"errors": -1`, "is negative; no measurement can be"},
		{"absurd latency", `"p95": 7095.03604365`, `"p95": 1e300`, "workloads[0].passing_trials[0].ttft_ms.p95: 1e300 is too large to be a measurement"},
		{"absurd threshold", `"threshold_ms": 10000`, `"threshold_ms": 1e300`, "slo.threshold_ms: 1e+300 is not a positive threshold below 1e+15"},
		{"infinite number", `"p95": 7095.03604365`, `"p95": 1e999`, "workloads[0].passing_trials[0].ttft_ms.p95: number 1e999 is out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(ref, tc.old) {
				t.Fatalf("reference lacks %s", tc.old)
			}
			_, err := Parse([]byte(strings.Replace(ref, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantPath) {
				t.Fatalf("err = %v, want %q", err, tc.wantPath)
			}
		})
	}
}

// A trial's concurrency key, when present, is at least 1.
func TestParseRefusesTrialConcurrencyBelowOne(t *testing.T) {
	d := parseReference(t)
	d.Workloads[0].PassingTrials[0].Concurrency = 11
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(out), `"concurrency": 11`, `"concurrency": 0`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "workloads[0].passing_trials[0].concurrency: concurrency 0 is below 1") {
		t.Fatalf("err = %v", err)
	}
}
