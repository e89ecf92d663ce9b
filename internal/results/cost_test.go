package results

import (
	"math"
	"testing"
)

func TestCosts(t *testing.T) {
	t.Parallel()
	seven := 7
	d := &Document{
		Experiment: Experiment{TensorParallelism: 4, Replicas: 2},
		Workloads: []Workload{
			{Label: "8K / 1K", MaximumPassingConcurrency: &seven,
				PassingTrials: []Trial{{OutputThroughputTPS: 100}, {OutputThroughputTPS: 110}, {OutputThroughputTPS: 90}}},
			{Label: "none passed"},
		},
	}
	got := d.Costs(Price{PerHour: 36})
	w := got[0]
	// 8 accelerators (TP 4 × 2 replicas); 100 tokens/s on average: 360 000 tokens an hour
	// for $36, $100 per million; $36 / 7 users; 100 / 8 tokens/s per accelerator.
	check := func(name string, p *float64, want float64) {
		t.Helper()
		if p == nil || math.Abs(*p-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, p, want)
		}
	}
	if w.Accelerators != 8 {
		t.Errorf("accelerators %d, want 8", w.Accelerators)
	}
	check("tokens/s", w.OutputTokensPerSecond, 100)
	check("cost per million", w.CostPerMillionOutputTokens, 100)
	check("cost per user", w.CostPerConcurrentUserHour, 36.0/7)
	check("tokens/s per accelerator", w.OutputTokensPerSecondPerAccelerator, 12.5)
	if n := got[1]; n.CostPerConcurrentUserHour != nil || n.CostPerMillionOutputTokens != nil || n.OutputTokensPerSecond != nil {
		t.Errorf("a workload with no passing concurrency has figures: %+v", n)
	}
	// An explicit count wins; no tensor parallelism recorded leaves per-accelerator unknown.
	d.Experiment = Experiment{}
	if c := d.Costs(Price{PerHour: 36, Accelerators: 4})[0]; c.OutputTokensPerSecondPerAccelerator == nil || *c.OutputTokensPerSecondPerAccelerator != 25 {
		t.Errorf("per accelerator with 4 given: %v", c.OutputTokensPerSecondPerAccelerator)
	}
	if c := d.Costs(Price{PerHour: 36})[0]; c.OutputTokensPerSecondPerAccelerator != nil || c.Accelerators != 0 {
		t.Errorf("per accelerator without a count: %v", c.OutputTokensPerSecondPerAccelerator)
	}
}
