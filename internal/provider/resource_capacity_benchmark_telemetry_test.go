package provider

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry/telemetrytest"
)

// Through the real CLI: the simulated engine measured with a DCGM exporter double beside it.
// Every trial in results_json carries the accelerators' figures: GPU 0's energy is its
// counter's rise over the measured requests (the double adds 1 J a scrape), GPU 1, whose
// counter is DCGM's blank, has its 100 W integrated over the same window, and the totals add
// them; joules per output token divide by the 8 × 8 output tokens. Bad URLs fail at plan.
func TestAccCapacityBenchmark_telemetry(t *testing.T) {
	t.Parallel()
	engine := newBoundaryEngine(t)
	srv := httptest.NewServer(engine)
	defer srv.Close()
	exporter := &telemetrytest.DCGM{EnergyStepMJ: 1000}
	exp := httptest.NewServer(exporter)
	defer exp.Close()
	const addr = "llmserve_capacity_benchmark.energy"
	config := func(endpoints string) string {
		return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "energy" {
  endpoint  = %q
  model     = "sim-qwen"
  api_key   = %q
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search    = { concurrency_levels = [1, 4] }
  trial     = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 1 }
  telemetry_endpoints = %s
}`, srv.URL, benchAPIKey, endpoints)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config(`["http://admin:hunter2@gpu-node:9400/metrics"]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)telemetry_endpoints\[0\].*carries\s+credentials`),
			},
			{
				Config:      config(`["http://gpu-node:9400/metrics", "HTTP://GPU-node:9400/metrics/"]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Repeated telemetry endpoint.*telemetry_endpoints\[1\]\s+is\s+the\s+same\s+exporter\s+as\s+telemetry_endpoints\[0\]`),
			},
			{
				Config: config(fmt.Sprintf("[%q]", exp.URL+"/metrics")),
				Check: func(s *terraform.State) error {
					return checkTrialEnergy(s.RootModule().Resources[addr].Primary.Attributes["results_json"])
				},
			},
		},
	})
}

// checkTrialEnergy asserts every trial's accelerators block from the JSON itself.
func checkTrialEnergy(resultsJSON string) error {
	var doc struct {
		Workloads []struct {
			Trials []struct {
				Concurrency  int `json:"concurrency"`
				Accelerators *struct {
					WindowS      float64 `json:"window_s"`
					Scrapes      int     `json:"scrapes"`
					OutputTokens int     `json:"output_tokens"`
					Total        map[string]any
					Devices      []map[string]any
					Warnings     []string
				} `json:"accelerators"`
			} `json:"trials"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal([]byte(resultsJSON), &doc); err != nil {
		return err
	}
	trials := doc.Workloads[0].Trials
	if len(trials) != 2 {
		return fmt.Errorf("%d trials, want 2", len(trials))
	}
	num := func(m map[string]any, k string) float64 {
		f, _ := m[k].(float64)
		return f
	}
	for _, tr := range trials {
		a := tr.Accelerators
		if a == nil {
			return fmt.Errorf("trial at %d: no accelerators", tr.Concurrency)
		}
		if a.OutputTokens != 64 || a.Scrapes < 2 || len(a.Devices) != 2 || len(a.Warnings) != 0 {
			return fmt.Errorf("trial at %d: %+v", tr.Concurrency, *a)
		}
		g0, g1, tot := a.Devices[0], a.Devices[1], a.Total
		if g0["device"] != telemetrytest.GPU0 || g0["exporter"] != "dcgm" || g0["endpoint"] != 0.0 || g0["energy_source"] != "energy_counter" {
			return fmt.Errorf("trial at %d: GPU 0 %v", tr.Concurrency, g0)
		}
		// The scrape cut short as the trial ended may have been counted by the double.
		if e := num(g0, "energy_j"); e != float64(a.Scrapes-1) && e != float64(a.Scrapes) {
			return fmt.Errorf("trial at %d: GPU 0 energy %v J over %d scrapes", tr.Concurrency, e, a.Scrapes)
		}
		if num(g0, "joules_per_output_token") != num(g0, "energy_j")/64 {
			return fmt.Errorf("trial at %d: GPU 0 %v J/token", tr.Concurrency, g0["joules_per_output_token"])
		}
		if g1["energy_source"] != "power_samples" || math.Abs(num(g1, "energy_j")-100*a.WindowS) > 1e-6 {
			return fmt.Errorf("trial at %d: GPU 1 energy %v from %v over %v s", tr.Concurrency, g1["energy_j"], g1["energy_source"], a.WindowS)
		}
		if num(tot, "peak_power_w") != 400.5 || num(tot, "mean_utilization_percent") != 60 || tot["energy_source"] != "mixed" ||
			math.Abs(num(tot, "energy_j")-num(g0, "energy_j")-num(g1, "energy_j")) > 1e-6 || math.Abs(num(tot, "mean_power_w")-400.5) > 1e-6 {
			return fmt.Errorf("trial at %d: total %v", tr.Concurrency, tot)
		}
	}
	return nil
}
