package results

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// pricedWithEnergy is the reference with a price and, on its first workload's first passing
// trial, the accelerators' figures of two GPUs, one without an energy counter and with its
// memory unknown; the second passing trial has telemetry whose exporter gave nothing.
func pricedWithEnergy(t *testing.T) *Document {
	t.Helper()
	d := parseReference(t)
	d.Price = &Price{PerHour: 10}
	f := func(v float64) *float64 { return &v }
	w := &d.Workloads[0]
	w.PassingTrials[0].Accelerators = &AcceleratorTelemetry{
		WindowS: 120.5, Scrapes: 122, OutputTokens: 65536,
		Total: AcceleratorFigures{MeanPowerW: f(1400), PeakPowerW: f(1650), MeanUtilizationPercent: f(87.5), EnergyJ: f(168700),
			JoulesPerOutputToken: f(168700.0 / 65536), EnergySource: EnergyMixed},
		Devices: []AcceleratorDevice{
			{Endpoint: 0, Exporter: "dcgm", Device: "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", AcceleratorFigures: AcceleratorFigures{
				MeanPowerW: f(700), PeakPowerW: f(825), MeanUtilizationPercent: f(90), PeakMemoryUsedBytes: f(7.5e10), EnergyJ: f(84350),
				JoulesPerOutputToken: f(84350.0 / 65536), EnergySource: EnergyFromCounter}},
			{Endpoint: 0, Exporter: "dcgm", Device: "GPU-8f1c2a7e", AcceleratorFigures: AcceleratorFigures{
				MeanPowerW: f(700), PeakPowerW: f(825), MeanUtilizationPercent: f(85), EnergyJ: f(84350),
				JoulesPerOutputToken: f(84350.0 / 65536), EnergySource: EnergyFromPower}},
		},
		Warnings: []string{"telemetry_endpoints[0] (gpu-node:9400/metrics): 1 of 122 scrapes failed during the trial (first: GET gpu-node:9400/metrics: HTTP 503); the figures use the others"},
	}
	w.PassingTrials[1].Accelerators = &AcceleratorTelemetry{WindowS: 118, Scrapes: 119, OutputTokens: 65536, Devices: []AcceleratorDevice{},
		Warnings: []string{"telemetry_endpoints[0] (gpu-node:9100/metrics): no series of a known exporter"}}
	return d
}

func TestAcceleratorsAndPriceRoundTrip(t *testing.T) {
	t.Parallel()
	d := pricedWithEnergy(t)
	raw, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"price": {`, `"per_hour": 10`, `"energy_source": "energy_counter"`, `"peak_memory_used_bytes": null`, `"joules_per_output_token": null`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("written document lacks %s", want)
		}
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, again) {
		t.Fatal("the document changed through Parse and Marshal")
	}
	a := back.Workloads[0].PassingTrials[0].Accelerators
	if a.Devices[1].PeakMemoryUsedBytes != nil || *a.Devices[0].PeakMemoryUsedBytes != 7.5e10 || back.Price.PerHour != 10 {
		t.Fatalf("read back %+v", a.Devices)
	}
	bad := bytes.Replace(raw, []byte(`"energy_source": "energy_counter"`), []byte(`"energy_source": "guess"`), 1)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), `energy_source: "guess" is not one of`) {
		t.Fatalf("an unknown energy source: %v", err)
	}
	neg := bytes.Replace(raw, []byte(`"per_hour": 10`), []byte(`"per_hour": -1`), 1)
	if _, err := Parse(neg); err == nil || !strings.Contains(err.Error(), "price.per_hour: must be a finite price of at least 0") {
		t.Fatalf("a negative price: %v", err)
	}
}

// The renderings show the price's costs and the accelerators' figures; unknown is a dash in
// Markdown and an absent sample in OpenMetrics, and the reference without them renders as
// before (its golden files).
func TestRenderingsShowCostAndEnergy(t *testing.T) {
	t.Parallel()
	d := pricedWithEnergy(t)
	md := Markdown(d)
	for _, want := range []string{
		"## Cost\n\nAt 10 per hour (4 accelerators)",
		"| 8K / 1K | 7 | 213.0 | 53.3 | 13.04 | 1.43 |",
		"| passing | 11 | 1 | 2 | 1400.0 / 1650.0 | 87.5 | – | 168700.0 | 2.5742 | mixed |",
		"| passing | 11 | 2 | 0 | – | – | – | – | – | – |",
		"> **Telemetry** (passing trial 1 at concurrency 11): telemetry\\_endpoints[0] (gpu-node:9400/metrics): 1 of 122 scrapes failed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	om := OpenMetrics(d)
	for _, want := range []string{
		"llmserve_price_per_hour 10\n",
		`llmserve_cost_per_million_output_tokens{workload="8K / 1K"} 13.04`,
		`llmserve_trial_accelerator_energy_joules{workload="2K / 512",side="passing",trial="1"} 168700` + "\n",
		`llmserve_trial_accelerator_utilization_ratio{workload="2K / 512",side="passing",trial="1"} 0.875` + "\n",
		`llmserve_trial_device_energy_joules{workload="2K / 512",side="passing",trial="1",endpoint="0",exporter="dcgm",device="GPU-8f1c2a7e",source="power_samples"} 84350` + "\n",
	} {
		if !strings.Contains(om, want) {
			t.Errorf("OpenMetrics lacks %q", want)
		}
	}
	if strings.Contains(om, "llmserve_trial_accelerator_peak_memory_used_bytes{") {
		t.Error("the total memory is unknown: no sample, not 0")
	}
	for _, line := range strings.Split(om, "\n") {
		if strings.HasPrefix(line, "llmserve_trial_accelerator") && strings.Contains(line, `trial="2"`) {
			t.Errorf("trial 2's exporter gave nothing, yet: %s", line)
		}
	}
	plain := parseReference(t)
	if strings.Contains(Markdown(plain), "## Cost") || strings.Contains(OpenMetrics(plain), "llmserve_price_per_hour") {
		t.Error("a document without a price renders a cost")
	}
}

func TestCostAndEnergyOpenMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(OpenMetrics(pricedWithEnergy(t)))
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
