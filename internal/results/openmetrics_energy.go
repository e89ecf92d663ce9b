package results

// The OpenMetrics families of what capacity costs (a document that carries a price) and of
// the accelerators' telemetry (trials that carry it). A family is written only when some
// sample of it is known: an unknown figure is an absent sample, never 0.

import "strconv"

func openMetricsCostAndEnergy(d *Document, family func(name, help string), sample func(name string, v float64, labels ...string)) {
	if d.Price != nil {
		costs := d.Costs(*d.Price)
		family("llmserve_price_per_hour", "Price of running the measured deployment per hour, in the unit the reader gave it.")
		sample("llmserve_price_per_hour", d.Price.PerHour)
		for _, g := range []struct {
			name, help string
			v          func(WorkloadCost) *float64
		}{
			{"llmserve_cost_per_million_output_tokens", "Price of a million output tokens at the workload's maximum passing concurrency.",
				func(c WorkloadCost) *float64 { return c.CostPerMillionOutputTokens }},
			{"llmserve_cost_per_concurrent_user_hour", "Price of one concurrent user for an hour at the workload's maximum passing concurrency.",
				func(c WorkloadCost) *float64 { return c.CostPerConcurrentUserHour }},
			{"llmserve_output_tokens_per_second_per_accelerator", "Output throughput per accelerator at the workload's maximum passing concurrency.",
				func(c WorkloadCost) *float64 { return c.OutputTokensPerSecondPerAccelerator }},
		} {
			known := false
			for _, c := range costs {
				known = known || g.v(c) != nil
			}
			if !known {
				continue
			}
			family(g.name, g.help)
			for _, c := range costs {
				if v := g.v(c); v != nil {
					sample(g.name, *v, "workload", c.Label)
				}
			}
		}
	}

	type row struct {
		labels []string
		a      *AcceleratorTelemetry
	}
	var rows []row
	for _, w := range d.Workloads {
		for _, st := range w.Trials() {
			if st.Trial.Accelerators != nil {
				rows = append(rows, row{[]string{"workload", w.Label, "side", string(st.Side), "trial", strconv.Itoa(st.Trial.Trial)}, st.Trial.Accelerators})
			}
		}
	}
	total := func(name, help string, v func(AcceleratorFigures) *float64, extra ...string) {
		known := false
		for _, r := range rows {
			known = known || v(r.a.Total) != nil
		}
		if !known {
			return
		}
		family(name, help)
		for _, r := range rows {
			if x := v(r.a.Total); x != nil {
				sample(name, *x, append(append([]string{}, r.labels...), extra...)...)
			}
		}
	}
	total("llmserve_trial_accelerator_mean_power_watts", "Mean power of all the trial's accelerators over its measured requests.",
		func(f AcceleratorFigures) *float64 { return f.MeanPowerW })
	total("llmserve_trial_accelerator_peak_power_watts", "Peak of the summed power of the trial's accelerators over its measured requests.",
		func(f AcceleratorFigures) *float64 { return f.PeakPowerW })
	total("llmserve_trial_accelerator_utilization_ratio", "Mean utilisation of the trial's accelerators (0..1), averaged over the devices.",
		func(f AcceleratorFigures) *float64 {
			if f.MeanUtilizationPercent == nil {
				return nil
			}
			r := *f.MeanUtilizationPercent / 100
			return &r
		})
	total("llmserve_trial_accelerator_peak_memory_used_bytes", "Peak of the summed memory used on the trial's accelerators.",
		func(f AcceleratorFigures) *float64 { return f.PeakMemoryUsedBytes })
	total("llmserve_trial_accelerator_energy_joules", "Energy of all the trial's accelerators over its measured requests.",
		func(f AcceleratorFigures) *float64 { return f.EnergyJ })
	total("llmserve_trial_accelerator_joules_per_output_token", "Energy of the trial's accelerators per output token of its measured requests.",
		func(f AcceleratorFigures) *float64 { return f.JoulesPerOutputToken })

	known := false
	for _, r := range rows {
		for _, dv := range r.a.Devices {
			known = known || dv.EnergyJ != nil
		}
	}
	if known {
		name := "llmserve_trial_device_energy_joules"
		family(name, "Energy of one accelerator over the trial's measured requests; source says whether from its energy counter or its power.")
		for _, r := range rows {
			for _, dv := range r.a.Devices {
				if dv.EnergyJ != nil {
					sample(name, *dv.EnergyJ, append(append([]string{}, r.labels...), "endpoint", strconv.Itoa(dv.Endpoint),
						"exporter", dv.Exporter, "device", dv.Device, "source", dv.EnergySource)...)
				}
			}
		}
	}
}
