package results

// The Markdown of what capacity costs (a document that carries a price) and of the
// accelerators' telemetry (trials that carry it).

import (
	"fmt"
	"strconv"
	"strings"
)

// writeCosts renders Costs at the document's price; nothing without one.
func writeCosts(b *strings.Builder, d *Document) {
	if d.Price == nil {
		return
	}
	costs := d.Costs(*d.Price)
	acc := "accelerators not recorded"
	if len(costs) > 0 && costs[0].Accelerators > 0 {
		acc = strconv.Itoa(costs[0].Accelerators) + " accelerators"
	}
	fmt.Fprintf(b, "## Cost\n\nAt %s per hour (%s), at each workload's maximum passing concurrency (output throughput: the mean of its passing confirmation trials):\n\n",
		formatFloat(d.Price.PerHour), acc)
	b.WriteString("| Workload | Capacity | Output (tok/s) | Per accelerator (tok/s) | Per million output tokens | Per concurrent user-hour |\n|---|---:|---:|---:|---:|---:|\n")
	dash := "–"
	num := func(f *float64, decimals int) string {
		if f == nil {
			return dash
		}
		return fixed(*f, decimals)
	}
	for _, c := range costs {
		capacity := dash
		if c.Capacity != nil {
			capacity = strconv.Itoa(*c.Capacity)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mdText(c.Label), capacity, num(c.OutputTokensPerSecond, 1),
			num(c.OutputTokensPerSecondPerAccelerator, 1), num(c.CostPerMillionOutputTokens, 2), num(c.CostPerConcurrentUserHour, 2))
	}
	b.WriteString("\n")
}

// writeAccelerators renders the accelerators' figures of each trial that has them (summed
// over the devices; utilisation averaged), and what could not be measured.
func writeAccelerators(b *strings.Builder, ax Axis, trials []SideTrial) {
	present := false
	for _, st := range trials {
		present = present || st.Trial.Accelerators != nil
	}
	if !present {
		return
	}
	b.WriteString("Accelerators (their exporters, over each trial's measured requests, all devices):\n\n")
	fmt.Fprintf(b, "| Side | %s | Trial | Devices | Mean / peak power (W) | Utilisation (%%) | Peak memory (GiB) | Energy (J) | J per output token | Energy from |\n", ax.Column())
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	dash := "–"
	num := func(f *float64, scale float64, decimals int) string {
		if f == nil {
			return dash
		}
		return fixed(*f*scale, decimals)
	}
	var notes []string
	for _, st := range trials {
		a := st.Trial.Accelerators
		if a == nil {
			continue
		}
		t := a.Total
		power := dash
		if t.MeanPowerW != nil || t.PeakPowerW != nil {
			power = num(t.MeanPowerW, 1, 1) + " / " + num(t.PeakPowerW, 1, 1)
		}
		source := dash
		if t.EnergySource != "" {
			source = mdText(strings.ReplaceAll(t.EnergySource, "_", " "))
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", st.Side, levelCell(ax, st), st.Trial.Trial, len(a.Devices),
			power, num(t.MeanUtilizationPercent, 1, 1), num(t.PeakMemoryUsedBytes, 1.0/(1<<30), 1), num(t.EnergyJ, 1, 1), num(t.JoulesPerOutputToken, 1, 4), source)
		for _, w := range a.Warnings {
			notes = append(notes, fmt.Sprintf("> **Telemetry** (%s trial %d at %s %s): %s\n", st.Side, st.Trial.Trial, ax.Name(), levelTextOf(ax, st), mdText(w)))
		}
	}
	b.WriteString("\n")
	for _, n := range notes {
		b.WriteString(n)
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
}
