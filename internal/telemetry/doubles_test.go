package telemetry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

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
