package provider

import (
	"math"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
)

// What the comparison cannot compute is null in Terraform, never NaN (which a plan cannot
// hold), and lists are empty rather than null so length() works on them.
func TestComparisonValueNulls(t *testing.T) {
	t.Parallel()
	five := 5
	v := comparisonValue(compare.Result{Workloads: []compare.Workload{{
		Label: "w", BaselineCapacity: &five, Verdict: compare.Unchanged,
		Objectives: []compare.Objective{{Key: "p95 time_to_first_token", Change: math.NaN(), Low: math.NaN(), High: math.NaN(), Noise: math.NaN(), T: math.NaN(), Critical: 2.3}},
	}}})
	w := v.Workloads["w"]
	o := w.Objectives[0]
	if o.ChangePercent != nil || o.ChangeLow != nil || o.ChangeHigh != nil || o.NoisePercent != nil || o.T != nil || o.CriticalT != nil || o.ToDecide != nil || o.Levels == nil {
		t.Errorf("objective without a common level: %+v", o)
	}
	if w.BaselineCapacity == nil || *w.BaselineCapacity != 5 || w.CurrentCapacity != nil || w.CapacityChange != nil || w.Notes == nil {
		t.Errorf("workload %+v", w)
	}
	if !v.Comparable || v.Refused == nil || v.Flagged == nil || v.Regressed == nil || v.Improved == nil || v.Inconclusive == nil || v.OnlyInBaseline == nil || v.OnlyInCurrent == nil {
		t.Errorf("comparison %+v", v)
	}
}
