// Package telemetry follows the accelerators during a trial through their Prometheus
// exporters (NVIDIA's DCGM exporter, Intel's XPU Manager exporter): each endpoint scraped
// before the load, at a steady interval while it runs and once after, off the request path,
// and turned into per-trial figures (power, utilisation, memory, energy, joules per output
// token) per device and summed. A figure no exporter gave is unknown (nil), never 0, and a
// scrape that fails is a warning: the trial goes on and keeps what was measured.
package telemetry

import (
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Reading is one device's values in one scrape; nil is a value the exporter did not give.
type Reading struct {
	Exporter string // ExporterDCGM or ExporterXPUM
	Device   string // the exporter's device id
	PowerW   *float64
	// EnergyJ is the exporter's energy counter, in joules since it started counting.
	EnergyJ     *float64
	UtilPercent *float64
	MemoryBytes *float64
	// Notes say what the scrape held that was not taken as is: a device's series given more
	// than once (counted once).
	Notes []string
}

// The exporters this package reads.
const (
	ExporterDCGM = "dcgm"
	ExporterXPUM = "xpumanager"
)

// exporter names one exporter's series and how its values turn into watts, joules, percent
// and bytes.
type exporter struct {
	name                             string
	power, energy, util, memory      []string // series names; the first present counts
	energyToJ, utilToPercent, memToB float64
	blank                            float64 // values at or above it are the exporter's "no value"
	energyBlank                      float64
	device                           func(labels map[string]string) (id string, ok bool)
	// alias, when set, names a device by another label than its id (DCGM's gpu index beside
	// its UUID): a series that carries only the alias is the same device, not another one.
	alias     func(labels map[string]string) (alias, id string, ok bool)
	tileLabel string // a series per tile carries it; "" when none
	skip      func(labels map[string]string) bool
}

// dcgm is NVIDIA's dcgm-exporter with its default counters, etc/default-counters.csv
// (github.com/NVIDIA/dcgm-exporter @00d6d344):
//
//	DCGM_FI_DEV_POWER_USAGE,              gauge,   Power draw (in W).
//	DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
//	DCGM_FI_DEV_GPU_UTIL,                 gauge,   GPU utilization (in %).
//	DCGM_FI_DEV_FB_USED,                  gauge,   Framebuffer memory used (in MiB).
//
// Every series carries gpu="0" and UUID="GPU-…" (the README's example output). DCGM writes a
// field it has no value for as a blank sentinel (DCGM_FP64_BLANK = 2^47 for power,
// DCGM_INT64_BLANK = 0x7ffffffffffffff0 and the codes just above it for the integer fields,
// e.g. the README's MEMORY_TEMP 9223372036854775794): read as unknown.
var dcgm = exporter{
	name:          ExporterDCGM,
	power:         []string{"DCGM_FI_DEV_POWER_USAGE"},
	energy:        []string{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
	util:          []string{"DCGM_FI_DEV_GPU_UTIL"},
	memory:        []string{"DCGM_FI_DEV_FB_USED"},
	energyToJ:     0.001,
	utilToPercent: 1,
	memToB:        1 << 20,
	blank:         1 << 47,
	energyBlank:   9.2e18,
	device: func(l map[string]string) (string, bool) {
		id := cmpOr(l["UUID"], l["gpu"])
		if mig := l["GPU_I_ID"]; mig != "" && id != "" {
			id += "/" + mig // a MIG instance of the GPU
		}
		return id, id != ""
	},
	alias: func(l map[string]string) (string, string, bool) {
		if l["UUID"] == "" || l["gpu"] == "" {
			return "", "", false
		}
		alias, id := l["gpu"], l["UUID"]
		if mig := l["GPU_I_ID"]; mig != "" {
			alias, id = alias+"/"+mig, id+"/"+mig
		}
		return alias, id, true
	},
}

// xpum is Intel XPU Manager's Prometheus exporter (v1 names), rest/prometheus_exporter/
// prometheus_exporter_types.py and prometheus_exporter.py (github.com/intel/xpumanager):
//
//	xpum_power_watts        'Avg GPU power (in watts), per GPU and per card'
//	xpum_energy_joules      'Total GPU energy consumption since boot (in Joules), per GPU',
//	                        a counter, so prometheus_client exposes it as xpum_energy_joules_total
//	xpum_engine_ratio       'GPU active time of the elapsed time (in %), per GPU tile', scaled
//	                        by 0.01 (a ratio 0..1); tiles averaged into a device series
//	xpum_memory_used_bytes  'Used GPU memory (in bytes), per GPU tile'; no device aggregate,
//	                        so a multi-tile device's tiles are summed here
//
// Device series carry uuid, dev_name, pci_dev, vendor, pci_bdf (and dev_file); tile series add
// sub_dev; card series (power summed over a card's devices) carry card instead and are skipped
// so that no watt is counted twice.
var xpum = exporter{
	name:          ExporterXPUM,
	power:         []string{"xpum_power_watts"},
	energy:        []string{"xpum_energy_joules_total", "xpum_energy_joules"},
	util:          []string{"xpum_engine_ratio"},
	memory:        []string{"xpum_memory_used_bytes"},
	energyToJ:     1,
	utilToPercent: 100,
	memToB:        1,
	blank:         math.Inf(1),
	energyBlank:   math.Inf(1),
	device: func(l map[string]string) (string, bool) {
		id := cmpOr(l["uuid"], l["pci_bdf"])
		return id, id != ""
	},
	tileLabel: "sub_dev",
	skip:      func(l map[string]string) bool { return l["card"] != "" },
}

var exporters = []exporter{dcgm, xpum}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readings turns one parsed scrape into a reading per device of every exporter it holds.
func readings(fams map[string]*dto.MetricFamily) []Reading {
	var out []Reading
	for _, e := range exporters {
		out = append(out, e.readings(fams)...)
	}
	return out
}

// quantity is how a device's tile series combine into its value when it has no series of
// its own: power, energy and memory add up, utilisation averages.
type quantity struct {
	names []string
	scale float64
	blank float64
	mean  bool
	set   func(r *Reading, v float64)
}

func (e exporter) readings(fams map[string]*dto.MetricFamily) []Reading {
	byDevice := map[string]*Reading{}
	get := func(id string) *Reading {
		r := byDevice[id]
		if r == nil {
			r = &Reading{Exporter: e.name, Device: id}
			byDevice[id] = r
		}
		return r
	}
	quantities := []quantity{
		{e.power, 1, e.blank, false, func(r *Reading, v float64) { r.PowerW = &v }},
		{e.energy, e.energyToJ, e.energyBlank, false, func(r *Reading, v float64) { r.EnergyJ = &v }},
		{e.util, e.utilToPercent, e.blank, true, func(r *Reading, v float64) { r.UtilPercent = &v }},
		{e.memory, e.memToB, e.blank, false, func(r *Reading, v float64) { r.MemoryBytes = &v }},
	}
	aliases := map[string]string{}
	if e.alias != nil {
		for _, q := range quantities {
			if f := family(fams, q.names); f != nil {
				for _, m := range f.GetMetric() {
					if alias, id, ok := e.alias(labels(m)); ok {
						aliases[alias] = id
					}
				}
			}
		}
	}
	for _, q := range quantities {
		f := family(fams, q.names)
		if f == nil {
			continue
		}
		type acc struct {
			whole          *float64 // the device's own series
			tileSum, tiles float64
			tileSeen       map[string]bool
			copies         int // series of the device (or of one of its tiles) given again
		}
		vals := map[string]*acc{}
		for _, m := range f.GetMetric() {
			l := labels(m)
			if e.skip != nil && e.skip(l) {
				continue
			}
			id, ok := e.device(l)
			if !ok {
				continue
			}
			if canonical, known := aliases[id]; known {
				id = canonical
			}
			v, ok := value(m)
			if !ok || v < 0 || v >= q.blank || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			a := vals[id]
			if a == nil {
				a = &acc{}
				vals[id] = a
			}
			if tile := l[e.tileLabel]; e.tileLabel != "" && tile != "" {
				if a.tileSeen[tile] {
					a.copies++
					continue
				}
				if a.tileSeen == nil {
					a.tileSeen = map[string]bool{}
				}
				a.tileSeen[tile] = true
				a.tileSum += v
				a.tiles++
				continue
			}
			if a.whole != nil {
				a.copies++ // the same device again: one device, its first series
				continue
			}
			w := v
			a.whole = &w
		}
		for id, a := range vals {
			if a.copies > 0 {
				r := get(id)
				r.Notes = append(r.Notes, fmt.Sprintf("%s given %d more %s for the same device, counted once", f.GetName(), a.copies, plural(a.copies, "time", "times")))
			}
			switch {
			case a.whole != nil:
				q.set(get(id), *a.whole*q.scale)
			case a.tiles > 0 && q.mean:
				q.set(get(id), a.tileSum/a.tiles*q.scale)
			case a.tiles > 0:
				q.set(get(id), a.tileSum*q.scale)
			}
		}
	}
	out := make([]Reading, 0, len(byDevice))
	for _, r := range byDevice {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// family finds the first of names the scrape holds.
func family(fams map[string]*dto.MetricFamily, names []string) *dto.MetricFamily {
	for _, n := range names {
		if f := fams[n]; f != nil {
			return f
		}
	}
	return nil
}

func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = strings.TrimSpace(p.GetValue())
	}
	return l
}

func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
