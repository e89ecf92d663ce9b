package capacity

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func TestRunWarnings(t *testing.T) {
	t.Parallel()
	two := []string{"http://10.0.0.7:30000", "http://10.0.0.8:30000"}
	three := append(slices.Clone(two), "http://10.0.0.9:30000")
	for _, tc := range []struct {
		name     string
		replicas int
		flush    string
		urls     []string
		at       attrpath.Path // where the one warning is; nil: none
		says     []string
	}{
		{"no experiment", 0, "sglang", nil, nil, nil},
		{"one replica", 1, "sglang", nil, nil, nil},
		{"three replicas, flush by endpoint", 3, "sglang", nil, attrpath.Root("trial").At("cache_flush"),
			[]string{"serves 3 replicas", "replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints"}},
		{"three replicas, flush off", 3, "none", nil, nil, nil},
		{"three replicas, llama.cpp needs no flush", 3, "llamacpp", nil, nil, nil},
		{"three replicas, each listed", 3, "sglang", three, nil, nil},
		{"three replicas, auto, each listed", 3, "auto", three, nil, nil},
		{"three replicas, two listed", 3, "vllm", two, attrpath.Root("replica_endpoints"),
			[]string{"lists 2 endpoints", "says 3 replicas", "llmserve_inference_deployment.<name>.replica_endpoints"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Config{CacheFlush: tc.flush, ReplicaEndpoints: tc.urls}
			if tc.replicas > 0 {
				c.Experiment = &results.Experiment{Replicas: tc.replicas}
			}
			got := c.RunWarnings()
			if tc.at == nil {
				if len(got) != 0 {
					t.Fatalf("warnings = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !got[0].Warning || !reflect.DeepEqual(got[0].Path, tc.at) {
				t.Fatalf("warnings = %+v, want one at %s", got, tc.at)
			}
			for _, s := range tc.says {
				if !strings.Contains(got[0].Detail, s) {
					t.Errorf("warning %q does not say %q", got[0].Detail, s)
				}
			}
		})
	}
}

func TestResultWarningsBoundedBySearch(t *testing.T) {
	t.Parallel()
	five, two := 5, 2
	doc := &results.Document{Workloads: []results.Workload{
		{Label: "found", MaximumPassingConcurrency: &five, FirstFailingConcurrency: func() *int { v := 6; return &v }()},
		{Label: "ceiling", MaximumPassingConcurrency: &five},
		{Label: "floor", FirstFailingConcurrency: &two},
	}}
	got := Config{}.ResultWarnings(doc)
	if len(got) != 2 {
		t.Fatalf("warnings = %+v, want the ceiling and the floor workloads", got)
	}
	for i, label := range []string{"ceiling", "floor"} {
		if !got[i].Warning || !reflect.DeepEqual(got[i].Path, attrpath.Root("capacity_bounded_by_search").Key(label)) ||
			!strings.Contains(got[i].Summary, `"`+label+`"`) {
			t.Errorf("warning %d = %+v, want one at capacity_bounded_by_search[%q]", i, got[i], label)
		}
	}
	if got := (Config{}).ResultWarnings(nil); got != nil {
		t.Errorf("no document: %+v, want none", got)
	}
}

// An open-loop trial whose sends span fewer than 10 median request latencies gets a warning
// naming what to raise: 16 requests at 6 requests/s span 2.67 s, 5.3 latencies of 0.5 s, so
// 10 latencies need 30 requests; 64 requests span 10.7 s, enough. A replay names its trace.
func TestResultWarningsShortRateTrials(t *testing.T) {
	t.Parallel()
	trial := func(n int, rate, speedup, p50ms float64) results.Trial {
		return results.Trial{RequestRate: rate, Speedup: speedup, RequestLatencyMs: results.Stats{P50: p50ms},
			Correctness: results.Correctness{ProfilingRecords: n}, OpenLoop: &results.OpenLoopTrial{OfferedRate: rate, KeptUp: true}}
	}
	r := func(v float64) *float64 { return &v }
	doc := &results.Document{Workloads: []results.Workload{
		{Label: "short", MaximumPassingRequestRate: r(6), FirstFailingRequestRate: r(7), PassingTrials: []results.Trial{trial(64, 6, 0, 400), trial(16, 6, 0, 500)}},
		{Label: "long", MaximumPassingRequestRate: r(6), FirstFailingRequestRate: r(7), PassingTrials: []results.Trial{trial(64, 6, 0, 500)}},
		{Label: "replay", MaximumPassingRequestRate: r(6), FirstFailingRequestRate: r(7), MaximumPassingSpeedup: r(1.5), FirstFailingSpeedup: r(1.75),
			FailingTrials: []results.Trial{trial(16, 6, 1.5, 500)}},
	}}
	cfg := Config{Workloads: []Workload{{Label: "short"}, {Label: "long"}, {Label: "replay", TraceFile: "t.jsonl"}}}
	got := cfg.ResultWarnings(doc)
	if len(got) != 2 {
		t.Fatalf("warnings %+v, want the short and the replay workloads", got)
	}
	if p := got[0]; p.Path.String() != "trial.measured_requests" || !strings.Contains(p.Detail, `Workload "short": the confirmation trial at 6 requests/s sent its 16 measured requests over 2.67 s, only 5.3 × their median request latency (0.5 s)`) ||
		!strings.Contains(p.Detail, "raise trial.measured_requests to at least 30") {
		t.Errorf("short: %s: %s", p.Path, p.Detail)
	}
	if p := got[1]; p.Path.String() != "workloads[2].trace.file" || !strings.Contains(p.Detail, "at speedup 1.5 (6 requests/s)") || !strings.Contains(p.Detail, "replay a longer trace: at least 30 measured requests") {
		t.Errorf("replay: %s: %s", p.Path, p.Detail)
	}
}
