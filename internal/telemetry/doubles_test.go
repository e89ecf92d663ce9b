package telemetry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// dcgmDouble serves what dcgm-exporter serves with its default counters (the series names,
// types, help texts and the gpu/UUID labels of github.com/NVIDIA/dcgm-exporter
// etc/default-counters.csv and README): two GPUs, GPU 0 with an energy counter that rises by
// energyStepMJ per scrape, GPU 1 (an older board) with DCGM's blank value for it, so its
// energy must come from its power.
type dcgmDouble struct {
	mu           sync.Mutex
	scrapes      int
	energyStepMJ int64
	failEvery    int // every failEvery-th scrape answers 503; 0 never
}

func (d *dcgmDouble) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	d.scrapes++
	n := int64(d.scrapes)
	fail := d.failEvery > 0 && d.scrapes%d.failEvery == 0
	d.mu.Unlock()
	if fail {
		http.Error(w, "DCGM not ready", http.StatusServiceUnavailable)
		return
	}
	const gpu0 = `gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node"`
	const gpu1 = `gpu="1",UUID="GPU-8f1c2a7e-11b2-4c3d-9e5f-0a1b2c3d4e5f",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node"`
	fmt.Fprintf(w, `# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{%[1]s} 1980
DCGM_FI_DEV_SM_CLOCK{%[2]s} 1980
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{%[1]s} 300.5
DCGM_FI_DEV_POWER_USAGE{%[2]s} 100
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%[1]s} %[3]d
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%[2]s} 9223372036854775792
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %%).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{%[1]s} 80
DCGM_FI_DEV_GPU_UTIL{%[2]s} 40
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{%[1]s} %[4]d
DCGM_FI_DEV_FB_USED{%[2]s} 1024
`, gpu0, gpu1, 123456789000+n*d.energyStepMJ, 70000+n)
}

// xpumText is what XPU Manager's exporter serves (rest/prometheus_exporter of
// github.com/intel/xpumanager): prometheus_client's text format, so the energy counter is
// xpum_energy_joules_total; device series with uuid/dev_name/pci_dev/vendor/pci_bdf/dev_file
// and src, tile series with sub_dev, and a card series of the power summed over the card's
// devices, which must not be counted again. Device 0 has two tiles: its memory exists only
// per tile; its utilisation both per tile and as the tiles' average.
func xpumText(energyJ float64) string {
	const dev0 = `uuid="01000000-0000-0000-0000-000000290000",dev_name="Intel(R) Data Center GPU Max 1550",pci_dev="0x0bd5",vendor="Intel(R) Corporation",pci_bdf="0000:29:00.0",dev_file="card1"`
	const dev1 = `uuid="01000000-0000-0000-0000-0000009a0000",dev_name="Intel(R) Data Center GPU Max 1550",pci_dev="0x0bd5",vendor="Intel(R) Corporation",pci_bdf="0000:9a:00.0",dev_file="card2"`
	return fmt.Sprintf(`# HELP xpum_power_watts Avg GPU power (in watts), per GPU and per card
# TYPE xpum_power_watts gauge
xpum_power_watts{%[1]s,src="direct"} 410
xpum_power_watts{%[2]s,src="direct"} 390
xpum_power_watts{card="2147483649",src="sum"} 800
# HELP xpum_energy_joules_total Total GPU energy consumption since boot (in Joules), per GPU
# TYPE xpum_energy_joules_total counter
xpum_energy_joules_total{%[1]s,src="direct"} %[3]g
xpum_energy_joules_total{%[2]s,src="direct"} %[4]g
# HELP xpum_engine_ratio GPU active time of the elapsed time (in %%), per GPU tile
# TYPE xpum_engine_ratio gauge
xpum_engine_ratio{%[1]s,src="avg"} 0.5
xpum_engine_ratio{%[1]s,sub_dev="0",src="direct"} 0.4
xpum_engine_ratio{%[1]s,sub_dev="1",src="direct"} 0.6
xpum_engine_ratio{%[2]s,sub_dev="0",src="direct"} 0.25
# HELP xpum_memory_used_bytes Used GPU memory (in bytes), per GPU tile
# TYPE xpum_memory_used_bytes gauge
xpum_memory_used_bytes{%[1]s,sub_dev="0",src="direct"} 3e+10
xpum_memory_used_bytes{%[1]s,sub_dev="1",src="direct"} 2e+10
xpum_memory_used_bytes{%[2]s,sub_dev="0",src="direct"} 1e+10
# HELP xpum_temperature_celsius Avg GPU temperature (in Celsius degree), per tile
# TYPE xpum_temperature_celsius gauge
xpum_temperature_celsius{%[1]s,sub_dev="0",location="gpu",src="direct"} 51
`, dev0, dev1, energyJ, energyJ*2)
}

func serve(t *testing.T, h http.Handler) *url.URL {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestXPUMTextIsValidPrometheus(t *testing.T) {
	if _, err := Parse([]byte(xpumText(1))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(xpumText(1), "xpum_energy_joules_total") {
		t.Fatal("the double must serve the counter's exposed name")
	}
}
