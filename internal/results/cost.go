package results

import "math"

// Price is what the measured deployment costs to run: per hour, for all the accelerators
// (and replicas) that served behind the endpoint.
type Price struct {
	PerHour float64 `json:"per_hour"`
	// Accelerators that price pays for; 0 takes the experiment's tensor parallelism times
	// its replicas (AcceleratorCount).
	Accelerators int `json:"accelerators,omitempty"`
}

// AcceleratorCount is how many accelerators served the experiment, read from what it
// records: tensor parallelism (one accelerator per rank) times the replicas behind the
// endpoint; 0 when the tensor parallelism is not recorded.
func (e Experiment) AcceleratorCount() int {
	if e.TensorParallelism < 1 {
		return 0
	}
	return e.TensorParallelism * max(e.Replicas, 1)
}

// WorkloadCost is what one workload's capacity costs, at its boundary: the confirmation
// trials at the maximum passing concurrency. A figure is nil when its inputs are unknown:
// no concurrency passed, no accelerator count, no output throughput.
type WorkloadCost struct {
	Label        string
	Capacity     *int
	Accelerators int // 0: unknown
	// OutputTokensPerSecond is the mean output throughput of the passing confirmation trials.
	OutputTokensPerSecond               *float64
	OutputTokensPerSecondPerAccelerator *float64
	CostPerMillionOutputTokens          *float64
	CostPerConcurrentUserHour           *float64
}

// Overflow names the first figure of c that is not a finite number (a price so large that
// dividing it gives infinity), with its value; "" when every figure is finite.
func (c WorkloadCost) Overflow() (string, float64) {
	for _, f := range []struct {
		name string
		v    *float64
	}{{"cost_per_million_output_tokens", c.CostPerMillionOutputTokens}, {"cost_per_concurrent_user_hour", c.CostPerConcurrentUserHour}} {
		if f.v != nil && (math.IsInf(*f.v, 0) || math.IsNaN(*f.v)) {
			return f.name, *f.v
		}
	}
	return "", 0
}

// Costs are the cost figures of every workload, in document order.
func (d *Document) Costs(p Price) []WorkloadCost {
	acc := p.Accelerators
	if acc == 0 {
		acc = d.Experiment.AcceleratorCount()
	}
	out := make([]WorkloadCost, 0, len(d.Workloads))
	for _, w := range d.Workloads {
		c := WorkloadCost{Label: w.Label, Capacity: w.MaximumPassingConcurrency, Accelerators: acc}
		if w.MaximumPassingConcurrency != nil && *w.MaximumPassingConcurrency > 0 {
			perUser := p.PerHour / float64(*w.MaximumPassingConcurrency)
			c.CostPerConcurrentUserHour = &perUser
		}
		sum, n := 0.0, 0
		for _, t := range w.PassingTrials {
			if t.OutputThroughputTPS > 0 && !math.IsInf(t.OutputThroughputTPS, 0) {
				sum += t.OutputThroughputTPS
				n++
			}
		}
		if n > 0 && w.MaximumPassingConcurrency != nil {
			tps := sum / float64(n)
			c.OutputTokensPerSecond = &tps
			perMillion := p.PerHour / (tps * 3600) * 1e6
			c.CostPerMillionOutputTokens = &perMillion
			if acc > 0 {
				perAcc := tps / float64(acc)
				c.OutputTokensPerSecondPerAccelerator = &perAcc
			}
		}
		out = append(out, c)
	}
	return out
}
