// Package telemetrytest is test support only: a loopback stand-in for an accelerator
// exporter, serving the series names, types, help texts and labels the real one serves.
package telemetrytest

import (
	"fmt"
	"net/http"
	"sync"
)

// DCGM serves what NVIDIA's dcgm-exporter serves with its default counters (series names,
// types and help texts of github.com/NVIDIA/dcgm-exporter etc/default-counters.csv @00d6d344,
// the gpu/UUID labels of its README): two GPUs. GPU 0 draws 300.5 W at 80 % utilisation and
// its energy counter (mJ) rises by EnergyStepMJ on every scrape served, so the energy between
// two scrapes is known exactly; its memory used rises by 1 MiB a scrape from 70 000 MiB.
// GPU 1 (an older board) draws 100 W at 40 % with 1024 MiB used and gives DCGM's blank value
// for the energy counter, so its energy must come from its power.
type DCGM struct {
	EnergyStepMJ int64
	// FailEvery makes every FailEvery-th scrape answer 503; 0 never.
	FailEvery int
	// Faults an exporter shows in the field. DuplicateSeries gives every series of GPU 0
	// twice more: once as it is, once with only its gpu index label. GPU0PowerW and
	// GPU0MemoryMiB, when set, replace GPU 0's power and memory used. ResetAt, when set, makes
	// GPU 0's energy counter restart from 0 at that scrape, as after an exporter restart.
	DuplicateSeries bool
	GPU0PowerW      float64
	GPU0MemoryMiB   int64
	ResetAt         int

	mu      sync.Mutex
	scrapes int
}

// GPU0 and GPU1 are the UUIDs the double's two GPUs carry.
const (
	GPU0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
	GPU1 = "GPU-8f1c2a7e-11b2-4c3d-9e5f-0a1b2c3d4e5f"
)

// Scrapes is how many scrapes the double has answered or refused.
func (d *DCGM) Scrapes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.scrapes
}

func (d *DCGM) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	d.scrapes++
	n := int64(d.scrapes)
	fail := d.FailEvery > 0 && d.scrapes%d.FailEvery == 0
	d.mu.Unlock()
	if fail {
		http.Error(w, "DCGM not ready", http.StatusServiceUnavailable)
		return
	}
	const gpu0 = `gpu="0",UUID="` + GPU0 + `",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node"`
	const gpu1 = `gpu="1",UUID="` + GPU1 + `",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node"`
	power, mem, energy := 300.5, 70000+n, 123456789000+n*d.EnergyStepMJ
	if d.GPU0PowerW != 0 {
		power = d.GPU0PowerW
	}
	if d.GPU0MemoryMiB != 0 {
		mem = d.GPU0MemoryMiB
	}
	if d.ResetAt > 0 && n >= int64(d.ResetAt) {
		energy = (n - int64(d.ResetAt) + 1) * d.EnergyStepMJ
	}
	var dup string
	if d.DuplicateSeries {
		const bare = `gpu="0"`
		dup = fmt.Sprintf(`DCGM_FI_DEV_POWER_USAGE{%[1]s} %[3]g
DCGM_FI_DEV_POWER_USAGE{%[2]s} %[3]g
DCGM_FI_DEV_GPU_UTIL{%[1]s} 80
DCGM_FI_DEV_GPU_UTIL{%[2]s} 80
DCGM_FI_DEV_FB_USED{%[1]s} %[4]d
DCGM_FI_DEV_FB_USED{%[2]s} %[4]d
`, gpu0, bare, power, mem)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = fmt.Fprintf(w, `# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{%[1]s} 1980
DCGM_FI_DEV_SM_CLOCK{%[2]s} 1980
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{%[1]s} %[5]g
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
%[6]s`, gpu0, gpu1, energy, mem, power, dup)
}
