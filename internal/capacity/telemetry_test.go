package capacity

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry/telemetrytest"
)

// Every confirmation trial carries the accelerators' figures from the exporter, over its
// measured requests: GPU 0's energy is its counter's rise (the double adds 1 J a scrape), and
// the joules per output token divide it by the output tokens the measured requests got.
func TestRunScrapesTelemetry(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	exporter := &telemetrytest.DCGM{EnergyStepMJ: 1000}
	exp := httptest.NewServer(exporter)
	defer exp.Close()

	cfg := testConfig(srv.URL)
	cfg.TelemetryEndpoints = []string{exp.URL + "/metrics"}
	cfg.TelemetryInterval = 10 * time.Millisecond
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	trials := doc.Workloads[0].Trials()
	if len(trials) == 0 {
		t.Fatal("no confirmation trials")
	}
	for _, st := range trials {
		a := st.Trial.Accelerators
		if a == nil {
			t.Fatalf("trial %d at %d: no accelerator telemetry", st.Trial.Trial, st.Concurrency)
		}
		if a.OutputTokens != 8*8 || a.Scrapes < 2 || len(a.Devices) != 2 || len(a.Warnings) != 0 {
			t.Fatalf("trial %d at %d: %+v", st.Trial.Trial, st.Concurrency, a)
		}
		g0 := a.Devices[0]
		// A scrape cut short when the trial ends may still have been counted by the double.
		if e := *g0.EnergyJ; g0.Device != telemetrytest.GPU0 || g0.EnergySource != results.EnergyFromCounter || e != float64(a.Scrapes-1) && e != float64(a.Scrapes) {
			t.Fatalf("GPU 0: %s energy %v J from %s over %d scrapes", g0.Device, *g0.EnergyJ, g0.EnergySource, a.Scrapes)
		}
		if *g0.JoulesPerOutputToken != *g0.EnergyJ/64 || *a.Total.PeakPowerW != 400.5 {
			t.Fatalf("GPU 0 %v J/token, total peak %v W", *g0.JoulesPerOutputToken, *a.Total.PeakPowerW)
		}
	}
	if exporter.Scrapes() < 2*len(trials) {
		t.Fatalf("%d scrapes for %d trials", exporter.Scrapes(), len(trials))
	}
}

// An exporter that is down costs the run nothing but a warning in each trial.
func TestRunTelemetryDownIsAWarning(t *testing.T) {
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	exp := httptest.NewServer(nil)
	url := exp.URL + "/metrics"
	exp.Close()

	cfg := testConfig(srv.URL)
	cfg.TelemetryEndpoints = []string{url}
	cfg.TelemetryInterval = 10 * time.Millisecond
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
		t.Fatalf("boundary %v", w.MaximumPassingConcurrency)
	}
	a := w.PassingTrials[0].Accelerators
	if a == nil || a.Total.EnergyJ != nil || len(a.Warnings) == 0 || !strings.Contains(a.Warnings[0], "telemetry_endpoints[0] (") {
		t.Fatalf("accelerators: %+v", a)
	}
	// The apply warns about it, on the attribute.
	var found bool
	for _, p := range cfg.ResultWarnings(doc) {
		if p.Summary == "Accelerator telemetry was incomplete" && p.Path.String() == "telemetry_endpoints" && strings.Contains(p.Detail, `workload "64 / 8", passing trial 1 at concurrency 2: telemetry_endpoints[0] (`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning at apply: %+v", cfg.ResultWarnings(doc))
	}
}

func TestValidateTelemetryEndpoints(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://sim:8000")
	cfg.TelemetryEndpoints = []string{"http://gpu-node:9400/metrics", "http://admin:hunter2@gpu-node:9400/metrics", "HTTP://gpu-node:9400/metrics/"}
	var got []string
	for _, p := range cfg.Validate() {
		if !p.Path.Within(attrpath.Root("telemetry_endpoints")) {
			continue
		}
		got = append(got, p.Path.String()+": "+p.Summary+": "+p.Detail)
		if strings.Contains(p.Detail, "hunter2") {
			t.Errorf("the password is repeated: %s", p.Detail)
		}
	}
	want := []string{"telemetry_endpoints[1]: Invalid telemetry endpoint", "telemetry_endpoints[2]: Repeated telemetry endpoint"}
	if len(got) != len(want) {
		t.Fatalf("problems %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want %q…", i, got[i], want[i])
		}
	}
	if p := cfg.Validate()[len(cfg.Validate())-1]; len(p.Reads) != 1 || !p.Reads[0].Within(attrpath.Root("telemetry_endpoints").Index(0)) {
		t.Errorf("the repeat reads %v", p.Reads)
	}
}
