package telemetry

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/telemetry/telemetrytest"
)

func TestParseDCGM(t *testing.T) {
	d := &telemetrytest.DCGM{EnergyStepMJ: 1000}
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, nil)
	rs, err := Parse(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("want 2 GPUs, got %+v", rs)
	}
	g0, g1 := rs[0], rs[1]
	if g0.Device != telemetrytest.GPU0 || g0.Exporter != ExporterDCGM {
		t.Fatalf("device 0: %+v", g0)
	}
	if *g0.PowerW != 300.5 || *g0.UtilPercent != 80 || *g0.MemoryBytes != 70001*(1<<20) || *g0.EnergyJ != 123456790 {
		t.Fatalf("GPU 0 values: power %v util %v mem %v energy %v", *g0.PowerW, *g0.UtilPercent, *g0.MemoryBytes, *g0.EnergyJ)
	}
	if g1.EnergyJ != nil {
		t.Fatalf("DCGM's blank energy must be unknown, got %v", *g1.EnergyJ)
	}
	if *g1.PowerW != 100 || *g1.MemoryBytes != 1024*(1<<20) {
		t.Fatalf("GPU 1: %+v", g1)
	}
}

func TestParseXPUM(t *testing.T) {
	rs, err := Parse([]byte(xpumText(5000)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("want 2 devices (the card series skipped), got %+v", rs)
	}
	d0, d1 := rs[0], rs[1]
	if d0.Device != "01000000-0000-0000-0000-000000290000" || d0.Exporter != ExporterXPUM {
		t.Fatalf("device 0: %+v", d0)
	}
	// Power: the device series, not the card's 800 W. Utilisation: the device's own average
	// (0.5, a ratio) in percent. Memory: the tiles summed. Energy: joules as exported.
	if *d0.PowerW != 410 || *d0.UtilPercent != 50 || *d0.MemoryBytes != 5e10 || *d0.EnergyJ != 5000 {
		t.Fatalf("device 0 values: %v %v %v %v", *d0.PowerW, *d0.UtilPercent, *d0.MemoryBytes, *d0.EnergyJ)
	}
	if *d1.PowerW != 390 || *d1.UtilPercent != 25 || *d1.MemoryBytes != 1e10 || *d1.EnergyJ != 10000 {
		t.Fatalf("device 1 values: %v %v %v %v", *d1.PowerW, *d1.UtilPercent, *d1.MemoryBytes, *d1.EnergyJ)
	}
}

// A trial against a DCGM double: GPU 0's energy is its counter's rise over the window
// exactly, GPU 1's is its constant 100 W integrated over the same window, the total adds them
// and says the sources are mixed, and every figure is per output token as well.
func TestWatchDCGM(t *testing.T) {
	d := &telemetrytest.DCGM{EnergyStepMJ: 2000}
	u := serve(t, d)
	w := Start(context.Background(), []Endpoint{{Name: "telemetry_endpoints[0] (" + u.Host + ")", Source: NewHTTPSource(u, nil)}}, 20*time.Millisecond)
	time.Sleep(60 * time.Millisecond) // warmups
	w.MarkMeasured()
	time.Sleep(200 * time.Millisecond) // measured requests
	got := w.Finish(context.Background()).Summary(1000)

	if got.Scrapes < 3 || got.WindowS <= 0 {
		t.Fatalf("window: %d scrapes over %v s", got.Scrapes, got.WindowS)
	}
	if len(got.Devices) != 2 || len(got.Warnings) != 0 {
		t.Fatalf("devices %+v warnings %v", got.Devices, got.Warnings)
	}
	g0, g1 := got.Devices[0], got.Devices[1]
	// A scrape cut short as the watch finished may still have been counted by the double.
	if e := *g0.EnergyJ; g0.EnergySource != results.EnergyFromCounter || e != 2*float64(got.Scrapes-1) && e != 2*float64(got.Scrapes) {
		t.Fatalf("GPU 0 energy %v from %s, want %d J from the counter", *g0.EnergyJ, g0.EnergySource, 2*(got.Scrapes-1))
	}
	if g1.EnergySource != results.EnergyFromPower || math.Abs(*g1.EnergyJ-100*got.WindowS) > 1e-9 {
		t.Fatalf("GPU 1 energy %v from %s, want 100 W × %v s", *g1.EnergyJ, g1.EnergySource, got.WindowS)
	}
	if !near(*g0.MeanPowerW, 300.5) || *g0.PeakPowerW != 300.5 || *g0.MeanUtilizationPercent != 80 {
		t.Fatalf("GPU 0: %+v", g0.AcceleratorFigures)
	}
	if *g0.JoulesPerOutputToken != *g0.EnergyJ/1000 {
		t.Fatalf("GPU 0 J/token %v", *g0.JoulesPerOutputToken)
	}
	tot := got.Total
	if !near(*tot.MeanPowerW, 400.5) || *tot.PeakPowerW != 400.5 || *tot.MeanUtilizationPercent != 60 || tot.EnergySource != results.EnergyMixed {
		t.Fatalf("total: %+v", tot)
	}
	if math.Abs(*tot.EnergyJ-(*g0.EnergyJ+*g1.EnergyJ)) > 1e-9 || *tot.JoulesPerOutputToken != *tot.EnergyJ/1000 {
		t.Fatalf("total energy %v J, %v J/token", *tot.EnergyJ, *tot.JoulesPerOutputToken)
	}
	// The peak of the summed memory: GPU 0's rises by 1 MiB a scrape, so it is the last round's.
	if *tot.PeakMemoryUsedBytes != *g0.PeakMemoryUsedBytes+1024*(1<<20) {
		t.Fatalf("total memory %v", *tot.PeakMemoryUsedBytes)
	}
}

// Two exporters of different kinds on two endpoints are one trial's devices.
func TestWatchTwoEndpoints(t *testing.T) {
	var xn float64
	xh := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		xn++
		_, _ = w.Write([]byte(xpumText(1000 + 10*xn)))
	})
	u0, u1 := serve(t, &telemetrytest.DCGM{EnergyStepMJ: 1000}), serve(t, xh)
	w := Start(context.Background(), []Endpoint{{"a", NewHTTPSource(u0, nil)}, {"b", NewHTTPSource(u1, nil)}}, 20*time.Millisecond)
	w.MarkMeasured()
	time.Sleep(120 * time.Millisecond)
	got := w.Finish(context.Background()).Summary(0)
	if len(got.Devices) != 4 || got.Devices[2].Endpoint != 1 || got.Devices[2].Exporter != ExporterXPUM {
		t.Fatalf("devices: %+v", got.Devices)
	}
	if !near(*got.Total.MeanPowerW, 300.5+100+410+390) {
		t.Fatalf("total power %v", *got.Total.MeanPowerW)
	}
	if got.Total.JoulesPerOutputToken != nil || got.Devices[0].JoulesPerOutputToken != nil {
		t.Fatal("no output tokens: joules per output token is unknown, not a number")
	}
}

// An endpoint that gave nothing leaves the totals unknown, not a sum over the others.
func TestWatchOneEndpointDown(t *testing.T) {
	u0, u1 := serve(t, &telemetrytest.DCGM{EnergyStepMJ: 1000}), serve(t, http.NotFoundHandler())
	w := Start(context.Background(), []Endpoint{{"a", NewHTTPSource(u0, nil)}, {"b", NewHTTPSource(u1, nil)}}, 20*time.Millisecond)
	w.MarkMeasured()
	time.Sleep(60 * time.Millisecond)
	got := w.Finish(context.Background()).Summary(10)
	if len(got.Devices) != 2 || got.Devices[0].EnergyJ == nil || got.Total.EnergyJ != nil || got.Total.MeanPowerW != nil {
		t.Fatalf("devices %+v total %+v", got.Devices, got.Total)
	}
	if w := got.Warnings[len(got.Warnings)-1]; w != "the totals are unknown: b gave no device" {
		t.Fatalf("warnings %q", got.Warnings)
	}
}

// A scrape failing mid-trial is a warning; the trial keeps its figures from the others.
func TestWatchScrapeFailures(t *testing.T) {
	d := &telemetrytest.DCGM{EnergyStepMJ: 1000, FailEvery: 2}
	u := serve(t, d)
	w := Start(context.Background(), []Endpoint{{"telemetry_endpoints[0] (" + u.Host + "/metrics)", NewHTTPSource(u, nil)}}, 15*time.Millisecond)
	w.MarkMeasured()
	time.Sleep(150 * time.Millisecond)
	got := w.Finish(context.Background()).Summary(10)
	if len(got.Warnings) == 0 || !strings.Contains(got.Warnings[0], "scrapes failed during the trial (first: GET "+u.Host+"/metrics: HTTP 503)") {
		t.Fatalf("warnings: %v", got.Warnings)
	}
	if len(got.Devices) != 2 || got.Devices[0].MeanPowerW == nil || got.Total.MeanPowerW == nil {
		t.Fatalf("figures lost: %+v", got)
	}
}

// An endpoint that is down: every figure is null in the JSON, never 0.
func TestWatchDownEndpointIsNull(t *testing.T) {
	u := serve(t, http.NotFoundHandler())
	w := Start(context.Background(), []Endpoint{{"x", NewHTTPSource(u, nil)}}, 10*time.Millisecond)
	w.MarkMeasured()
	time.Sleep(40 * time.Millisecond)
	got := w.Finish(context.Background()).Summary(10)
	raw, err := json.Marshal(got.Total)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"mean_power_w":null,"peak_power_w":null,"mean_utilization_percent":null,"peak_memory_used_bytes":null,"energy_j":null,"joules_per_output_token":null}`
	if string(raw) != want || len(got.Devices) != 0 || len(got.Warnings) == 0 {
		t.Fatalf("total %s, devices %v, warnings %v", raw, got.Devices, got.Warnings)
	}
}

// An exporter of another kind answers, but with nothing this package knows.
func TestWatchUnknownExporter(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# TYPE node_load1 gauge\nnode_load1 0.5\n"))
	}))
	w := Start(context.Background(), []Endpoint{{"telemetry_endpoints[0]", NewHTTPSource(u, nil)}}, 10*time.Millisecond)
	w.MarkMeasured()
	got := w.Finish(context.Background()).Summary(10)
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "telemetry_endpoints[0]: no series of a known exporter") {
		t.Fatalf("warnings: %v", got.Warnings)
	}
}

func TestNilWatch(t *testing.T) {
	w := Start(context.Background(), nil, 0)
	w.MarkMeasured()
	if w.Finish(context.Background()).Summary(1) != nil {
		t.Fatal("no endpoints: no telemetry")
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://gpu-node:9400/metrics", ""},
		{"https://gpu-node/xpum/metrics", ""},
		{"", "must not be empty"},
		{"gpu-node:9400/metrics", "not an http:// or https:// URL"},
		{"http://admin:hunter2@gpu-node:9400/metrics", "carries credentials"},
		{"http://gpu-node:9400/metrics?token=abc", "has a query string"},
		{"http://gpu-node:9400", "has no path"},
		{"http://gpu-node:99999/metrics", "port 99999"},
		{"http://gpu-node/metrics#x", "has a fragment"},
		{"http://gpu node/metrics", "spaces or control characters"},
	} {
		_, err := ParseEndpoint(tt.in)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.in, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%q: the message repeats the password: %v", tt.in, err)
		}
	}
	a, _ := ParseEndpoint("HTTP://GPU-node:80/metrics/")
	b, _ := ParseEndpoint("http://gpu-node/metrics")
	if Key(a) != Key(b) {
		t.Fatalf("%s != %s", Key(a), Key(b))
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// An exporter's label and an error message go into the document, which refuses control
// characters and bidirectional overrides in names.
func TestPrintable(t *testing.T) {
	if got := printable("GPU-0\n\u202e1"); got != "GPU-0\uFFFD\uFFFD1" {
		t.Fatalf("%q", got)
	}
}

// Off the request path: with an exporter that never answers, marking the measured requests
// returns at once, and finishing costs the trial at most the final scrape's timeout; the
// hung scrapes are warnings.
func TestWatchHungExporterHoldsNothing(t *testing.T) {
	release := make(chan struct{})
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	w := Start(context.Background(), []Endpoint{{"hung", NewHTTPSource(u, nil)}}, 10*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	t0 := time.Now()
	w.MarkMeasured()
	if d := time.Since(t0); d > 5*time.Millisecond {
		t.Fatalf("MarkMeasured took %v", d)
	}
	t1 := time.Now()
	got := w.Finish(context.Background()).Summary(1)
	if d := time.Since(t1); d > finalTimeout+time.Second {
		t.Fatalf("Finish took %v", d)
	}
	if len(got.Warnings) == 0 || !strings.Contains(got.Warnings[0], "no answer within 2s") {
		t.Fatalf("warnings %q", got.Warnings)
	}
}

// watchFor scrapes the endpoints every 20 ms over 200 ms of measured requests.
func watchFor(t *testing.T, endpoints []Endpoint) *results.AcceleratorTelemetry {
	t.Helper()
	w := Start(context.Background(), endpoints, 20*time.Millisecond)
	w.MarkMeasured()
	time.Sleep(200 * time.Millisecond)
	return w.Finish(context.Background()).Summary(1000)
}

func warned(got *results.AcceleratorTelemetry, want string) bool {
	for _, w := range got.Warnings {
		if strings.Contains(w, want) {
			return true
		}
	}
	return false
}

// A device's series given more than once, whether repeated as they are or with only the
// gpu index label, is one device, counted once and said; so is a device two endpoints give
// (the same exporter under two URLs). The totals stay 400.5 W, not doubled.
func TestWatchDuplicateSeriesAreOneDevice(t *testing.T) {
	t.Run("in one scrape", func(t *testing.T) {
		u := serve(t, &telemetrytest.DCGM{EnergyStepMJ: 1000, DuplicateSeries: true})
		got := watchFor(t, []Endpoint{{"telemetry_endpoints[0]", NewHTTPSource(u, nil)}})
		if len(got.Devices) != 2 || got.Total.MeanPowerW == nil || !near(*got.Total.MeanPowerW, 400.5) || *got.Total.PeakPowerW != 400.5 {
			t.Fatalf("devices %+v, total %+v", got.Devices, got.Total)
		}
		if !warned(got, "telemetry_endpoints[0] device "+telemetrytest.GPU0+": DCGM_FI_DEV_POWER_USAGE given 2 more times for the same device, counted once") {
			t.Errorf("warnings %q", got.Warnings)
		}
	})
	t.Run("from two endpoints", func(t *testing.T) {
		d := &telemetrytest.DCGM{EnergyStepMJ: 1000}
		u0, u1 := serve(t, d), serve(t, d)
		got := watchFor(t, []Endpoint{{"telemetry_endpoints[0]", NewHTTPSource(u0, nil)}, {"telemetry_endpoints[1]", NewHTTPSource(u1, nil)}})
		if len(got.Devices) != 2 || got.Total.MeanPowerW == nil || !near(*got.Total.MeanPowerW, 400.5) {
			t.Fatalf("devices %+v, total %+v", got.Devices, got.Total)
		}
		if !warned(got, "telemetry_endpoints[1] device "+telemetrytest.GPU0+" is also given by telemetry_endpoints[0] (the same exporter under two URLs?): counted once") {
			t.Errorf("warnings %q", got.Warnings)
		}
	})
}

// An energy counter that goes back (the exporter restarted) is a reset: the energy still
// comes from the counter, 2 J a scrape across the reset, and the warning says so.
func TestWatchEnergyCounterReset(t *testing.T) {
	// Scrape 1 is the round before the measured requests, scrape 2 the one they start with,
	// the last the one after the load: the reset at scrape 3 falls inside the window.
	d := &telemetrytest.DCGM{EnergyStepMJ: 2000, ResetAt: 3}
	u := serve(t, d)
	got := watchFor(t, []Endpoint{{"telemetry_endpoints[0]", NewHTTPSource(u, nil)}})
	if got.Scrapes < 2 {
		t.Fatalf("%d scrapes in the window", got.Scrapes)
	}
	g0 := got.Devices[0]
	if e := *g0.EnergyJ; g0.EnergySource != results.EnergyFromCounter || e != 2*float64(got.Scrapes-1) && e != 2*float64(got.Scrapes) {
		t.Fatalf("GPU 0 energy %v from %s, want %d J from the counter", *g0.EnergyJ, g0.EnergySource, 2*(got.Scrapes-1))
	}
	if !warned(got, "its energy counter went back from ") || !warned(got, "read as a reset") {
		t.Errorf("warnings %q", got.Warnings)
	}
}

// Values beyond any accelerator (250 kW, 10 PB of memory) are unknown with a warning, never
// a figure, and so are the totals that would hold them.
func TestWatchOutOfBoundsIsUnknown(t *testing.T) {
	u := serve(t, &telemetrytest.DCGM{EnergyStepMJ: 1000, GPU0PowerW: 250000, GPU0MemoryMiB: 10_000_000_000_000_000 >> 20})
	got := watchFor(t, []Endpoint{{"telemetry_endpoints[0]", NewHTTPSource(u, nil)}})
	g0 := got.Devices[0].AcceleratorFigures
	if g0.MeanPowerW != nil || g0.PeakPowerW != nil || g0.PeakMemoryUsedBytes != nil {
		t.Fatalf("GPU 0 figures %+v: out-of-bounds values kept", g0)
	}
	if got.Total.MeanPowerW != nil || got.Total.PeakPowerW != nil || got.Total.PeakMemoryUsedBytes != nil {
		t.Fatalf("totals %+v hold out-of-bounds values", got.Total)
	}
	g1 := got.Devices[1].AcceleratorFigures
	if g1.MeanPowerW == nil || !near(*g1.MeanPowerW, 100) {
		t.Errorf("GPU 1 figures %+v", g1)
	}
	for _, want := range []string{
		"telemetry_endpoints[0] device " + telemetrytest.GPU0 + ": power 250000 W is beyond any accelerator (at most 3000 W): read as unknown",
		"telemetry_endpoints[0] device " + telemetrytest.GPU0 + ": memory used 1e+16 bytes is beyond any accelerator (at most 1 TiB): read as unknown",
	} {
		if !warned(got, want) {
			t.Errorf("warnings %q lack %q", got.Warnings, want)
		}
	}
}

// An energy counter that rises faster than any accelerator draws is unknown.
func TestCounterEnergyBounds(t *testing.T) {
	at := time.Unix(1000, 0)
	s := func(sec, j float64) sample {
		return sample{at: at.Add(time.Duration(sec * float64(time.Second))), r: Reading{EnergyJ: &j}}
	}
	if e, _, w := counterEnergy([]sample{s(0, 100), s(1, 600), s(2, 1100)}); e == nil || *e != 1000 || len(w) != 0 {
		t.Errorf("steady 500 W: %v %q", e, w)
	}
	if e, _, w := counterEnergy([]sample{s(0, 100), s(1, 600), s(2, 400)}); e == nil || *e != 900 || len(w) != 1 {
		t.Errorf("a reset: %v %q, want 500 + 400 J", e, w)
	}
	if e, _, w := counterEnergy([]sample{s(0, 100), s(1, 250100)}); e != nil || len(w) != 1 || !strings.Contains(w[0], "250000 W, beyond any accelerator") {
		t.Errorf("250 kW: %v %q", e, w)
	}
}
