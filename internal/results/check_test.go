package results

import (
	"bytes"
	"strings"
	"testing"
)

// Documents that parse as JSON of the right shape but cannot be a result are refused, each
// with the JSON path of the impossible value.
func TestParseRefusesImpossibleDocuments(t *testing.T) {
	t.Parallel()
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
		// Issue 19's impossible documents.
		{"more errors than requests", `"errors": 0`, `"errors": 65`, "workloads[0].passing_trials[0].correctness.errors: 65 failed requests in a trial of 64 measured requests (profiling_records)"},
		{"more HTTP 200s than requests", `"http_200": 64`, `"http_200": 1000`, "workloads[0].passing_trials[0].correctness.http_200: 1000 HTTP 200 responses to"},
		{"p95 above p99", `"p95": 7095.03604365`, `"p95": 19095.03604365`, "workloads[0].passing_trials[0].ttft_ms.p95: 19095.03604365 is above p99 11215.331829699991"},
		{"min above max", `"min": 2099.0`, `"min": 9099.0`, "workloads[0].server_prompt_tokens.min: 9099 is above max 2102"},
		{"duplicate key", `"schema_version": 1,`, `"schema_version": 1, "schema_version": 1,`, "invalid results document: schema_version: duplicate key"},
		{"duplicate nested key", `"label": "2K / 512",`, `"label": "2K / 512", "label": "8K / 1K",`, "workloads[0].label: duplicate key"},
		{"both slo and slos", `"slo": {`, `"slos": [{"metric": "time_to_first_token", "percentile": 95, "threshold_ms": 10000, "comparison": "strictly_less_than"}], "slo": {`,
			"slo: both slo and slos are set"},
		{"warm prompts in a passing trial", `"warmup_profile_prompt_overlap": 0`, `"warmup_profile_prompt_overlap": 3`,
			"workloads[0].passing_trials[0].correctness.warmup_profile_prompt_overlap: 3 prompts were sent both as warmups and measured in a passing trial"},
		{"unknown metric", `"metric": "time_to_first_token"`, `"metric": "time_to_frist_token"`, `slo.metric: "time_to_frist_token" is not a metric: one of time_to_first_token`},
		{"escape in a label", `"label": "2K / 512"`, `"label": "2K / 512\u001b[2J"`, `workloads[0].label: "2K / 512\x1b[2J" holds the control character U+001B at byte 8`},
		{"bidi override in a label", `"label": "2K / 512"`, `"label": "\u202e215 / K2"`, `workloads[0].label: "\u202e215 / K2" holds the control character U+202E at byte 0`},
		{"newline in the model", `"model": "ulkaa/Qwen3.8-27B-AWQ-INT4"`, `"model": "ulkaa/Qwen\nPASS"`, `experiment.model: "ulkaa/Qwen\nPASS" holds the control character U+000A`},
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

// A confirmation trial that says it ran at another concurrency than its side's boundary is
// refused; where it says nothing, the side's level is implied.
func TestParseRefusesTrialAtAnotherLevel(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	d.Workloads[1].FailingTrials[2].Concurrency = 9
	out, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(out); err == nil || !strings.Contains(err.Error(), "workloads[1].failing_trials[2].concurrency: 9 is not the side's level: failing_trials ran at first_failing_concurrency 8") {
		t.Fatalf("err = %v", err)
	}
	d.Workloads[1].FailingTrials[2].Concurrency = 8
	if out, err = Marshal(d); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(out); err != nil {
		t.Fatalf("the side's own level: %v", err)
	}
}

// A trial's concurrency key, when present, is at least 1.
func TestParseRefusesTrialConcurrencyBelowOne(t *testing.T) {
	t.Parallel()
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

// noisyRecorded is the recorded result with what a run writes about its noise: the
// disagreements of its own trials, found by a looser rule than the default (a 50 % test: from
// 8 requests a trial's p95 is barely known, and the default finds concurrency 2's TTFT within
// noise), so that concurrency 2's p95 TTFT comes first (trial 1 16.27 ms, trial 2 45.37 ms,
// 8 requests each), and the load generator's machine during its first trial.
func noisyRecorded(t *testing.T) *Document {
	t.Helper()
	d := readRecorded(t)
	w := &d.Workloads[0]
	w.TrialDisagreements = DisagreementRule{Alpha: 0.5, Band: DefaultDisagreementRule.Band}.Find(d.Objectives(), *w)
	if len(w.TrialDisagreements) == 0 || w.TrialDisagreements[0].Concurrency != 2 || w.TrialDisagreements[0].Objective != "p95 time_to_first_token" {
		t.Fatalf("the recorded trials' disagreements: %+v", w.TrialDisagreements)
	}
	w.AllTrials[0].Host = &HostLoad{CPUs: 2, LoadAvg1mStart: 0.5, LoadAvg1mEnd: 1.25, BusyPercent: 41.5, StealPercent: 0.5}
	return d
}

// Fields a document states about its own noise are believed only as far as its trials bear
// them out: each forged field is refused by Parse (the one check of the data source, compare()
// and the report functions), naming the field. Every row was accepted before issue 39, and
// compare() printed "+Inf % apart" (low 0) or "-89 % apart" (low above high) from them. A new
// noise field joins by adding a row.
func TestParseRefusesForgedNoiseFields(t *testing.T) {
	t.Parallel()
	genuine, err := Marshal(noisyRecorded(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(genuine); err != nil {
		t.Fatalf("the run's own noise fields are refused: %v", err)
	}
	const dis = "workloads[0].trial_disagreements[0]."
	const host = "workloads[0].trials[0].host."
	cases := []struct {
		name  string
		forge func(w *Workload)
		want  string
	}{
		{"low of 0", func(w *Workload) { w.TrialDisagreements[0].Low = 0 },
			dis + "low: 0 is not above 0: the spread is in percent of the lowest trial's value"},
		{"low above high", func(w *Workload) { w.TrialDisagreements[0].Low = 400 },
			dis + "high: 45.3712908 is not above low 400"},
		{"a level never tried", func(w *Workload) { w.TrialDisagreements[0].Concurrency = 9 },
			dis + `concurrency: 9: no two confirmation trials of workload "64 / 8" ran at this level (levels with two or more: 2, 3, 4, 5)`},
		{"a level tried once", func(w *Workload) { w.TrialDisagreements[0].Concurrency = 1 },
			dis + `concurrency: 1: no two confirmation trials of workload "64 / 8" ran at this level`},
		{"a level on another axis", func(w *Workload) { w.TrialDisagreements[0].RequestRate = 2.5 },
			dis + `request_rate: 2.5 is set, but workload "64 / 8" was searched by concurrency`},
		{"an objective that does not exist", func(w *Workload) { w.TrialDisagreements[0].Objective = "p99 time_to_first_token" },
			dis + `objective: "p99 time_to_first_token" is not a percentile objective of this document; its objectives with an interval are: "p95 time_to_first_token", "p95 inter_token_latency"`},
		{"a trial that did not run there", func(w *Workload) { w.TrialDisagreements[0].LowTrial = 3 },
			dis + "low_trial: 3 is not a confirmation trial that finished all its requests at 2"},
		{"one trial against itself", func(w *Workload) { w.TrialDisagreements[0].HighTrial = 1 },
			dis + "high_trial: 1 is low_trial too"},
		{"a value that is not the trial's", func(w *Workload) { w.TrialDisagreements[0].High = 450 },
			dis + "high: 450 is not trial 2's p95 time_to_first_token at 2, which is 45.3712908"},
		{"overlapping intervals", func(w *Workload) { w.TrialDisagreements[0].HighLower = 16.5 },
			dis + "high_lower: 16.5 is not above low_upper 19.40569243645736"},
		{"an interval without its value", func(w *Workload) { w.TrialDisagreements[0].LowUpper = 10 },
			dis + "low_upper: 10 is below low 16.27332"},
		{"more requests than the trials had", func(w *Workload) { w.TrialDisagreements[0].Requests = 1000 },
			dis + "requests: 1000 is not the fewer successful measured requests of trials 1 and 2 (8)"},
		{"250 % busy", func(w *Workload) { w.AllTrials[0].Host.BusyPercent = 250 },
			host + "busy_percent: 250 is above 100: it is a share of all CPUs' time"},
		{"150 % steal", func(w *Workload) { w.AllTrials[0].Host.BusyPercent, w.AllTrials[0].Host.StealPercent = 100, 150 },
			host + "steal_percent: 150 is above 100"},
		{"steal above busy", func(w *Workload) { w.AllTrials[0].Host.StealPercent = 60 },
			host + "steal_percent: 60 is above busy_percent 41.5"},
		{"0 CPUs", func(w *Workload) { w.AllTrials[0].Host.CPUs = 0 },
			host + "cpus: 0: the machine that ran the load had at least one CPU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := noisyRecorded(t)
			tc.forge(&d.Workloads[0])
			out, err := Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(out); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

// A trial spread over runner pods round-trips (a pod's clock may be behind pod 0's: a negative
// offset is no corrupt figure), and shares that cannot be the trial's are refused, naming the
// field.
func TestPodsTrialChecked(t *testing.T) {
	t.Parallel()
	spread := func() *Document {
		d := readRecorded(t)
		tr := &d.Workloads[0].AllTrials[0]
		c := tr.Concurrency
		tr.Pods = &PodsTrial{Pods: 2, StartSkewMs: 0.412, ClockUncertaintyMs: 0.09, Shares: []PodShare{
			{Pod: 0, Concurrency: c - c/2, WarmupRequests: 1, MeasuredRequests: tr.Correctness.ProfilingRecords - tr.Correctness.ProfilingRecords/2},
			{Pod: 1, Concurrency: c / 2, MeasuredRequests: tr.Correctness.ProfilingRecords / 2, ClockOffsetMs: -0.206},
		}}
		return d
	}
	raw, err := Marshal(spread())
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatalf("a spread trial is refused: %v", err)
	}
	if again, _ := Marshal(back); !bytes.Equal(again, raw) {
		t.Error("a spread trial does not round-trip byte for byte")
	}
	const p = "workloads[0].trials[0].pods."
	for _, tc := range []struct {
		name  string
		forge func(pt *PodsTrial)
		want  string
	}{
		{"one pod", func(pt *PodsTrial) { pt.Pods = 1 }, p + "pods: a trial spread over pods has at least 2, got 1"},
		{"a share missing", func(pt *PodsTrial) { pt.Shares = pt.Shares[:1] }, p + "shares: 1 shares for 2 pods"},
		{"out of order", func(pt *PodsTrial) { pt.Shares[0].Pod, pt.Shares[1].Pod = 1, 0 }, p + "shares[0].pod: pod 1 in place 0"},
		{"concurrency that does not add up", func(pt *PodsTrial) { pt.Shares[1].Concurrency += 3 }, "the pods' concurrency sums to"},
		{"fewer requests than recorded", func(pt *PodsTrial) { pt.Shares[1].MeasuredRequests = 0 }, "but the trial recorded"},
		{"negative skew", func(pt *PodsTrial) { pt.StartSkewMs = -1 }, "start_skew_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := spread()
			tc.forge(d.Workloads[0].AllTrials[0].Pods)
			out, err := Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(out); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}
