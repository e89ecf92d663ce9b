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
