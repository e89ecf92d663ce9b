package capacity

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func TestRunWarnings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		flush    string
		want     bool
	}{
		{"no experiment", 0, "sglang", false},
		{"one replica", 1, "sglang", false},
		{"three replicas, flush by endpoint", 3, "sglang", true},
		{"three replicas, flush off", 3, "none", false},
		{"three replicas, llama.cpp needs no flush", 3, "llamacpp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{CacheFlush: tc.flush}
			if tc.replicas > 0 {
				c.Experiment = &results.Experiment{Replicas: tc.replicas}
			}
			got := c.RunWarnings()
			if !tc.want {
				if len(got) != 0 {
					t.Fatalf("warnings = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !got[0].Warning || !reflect.DeepEqual(got[0].Path, attrpath.Root("trial").At("cache_flush")) ||
				!strings.Contains(got[0].Detail, "serves 3 replicas") {
				t.Fatalf("warnings = %+v, want one at trial.cache_flush naming 3 replicas", got)
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
