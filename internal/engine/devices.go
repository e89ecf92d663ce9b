package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Device is one accelerator a server computes on, as the host reports it.
type Device struct {
	Name      string // e.g. "NVIDIA H200", "Intel(R) Arc(TM) Pro B70 Graphics"
	MemoryMiB int64  // total device memory; 0 when not reported
}

// DeviceProbe is the command that lists, from inside the server's container, the
// accelerators the server sees (after gpu_ids and the affinity mask have applied). Nil
// when there is nothing to ask: a CPU server.
//
//   - llama.cpp: `llama-server --list-devices` (common/arg.cpp): "Available devices:", then
//     one "  NAME: DESCRIPTION (TOTAL MiB, FREE MiB free)" line per non-CPU device, or
//     "  (none)".
//   - SGLang and vLLM on CUDA: nvidia-smi, which the NVIDIA container toolkit mounts into
//     every GPU container ("utility" capability, set by the CUDA base images).
//   - SGLang and vLLM on XPU: the engines' own PyTorch (torch.xpu.get_device_name,
//     get_device_properties(i).total_memory, PyTorch 2.5+); the Intel images carry no
//     xpu-smi.
func (s Spec) DeviceProbe() []string {
	switch {
	case s.Engine == LlamaCpp:
		prog := "llama-server"
		if len(s.Entrypoint) > 0 {
			prog = s.Entrypoint[0]
		}
		return []string{prog, "--list-devices"}
	case s.Accelerator == CUDA:
		return []string{"nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"}
	case s.Accelerator == XPU:
		return []string{"python3", "-c", torchXPUProbe}
	}
	return nil
}

// torchXPUProbe prints one JSON array [name, total bytes] per XPU device.
const torchXPUProbe = `import json, torch
for i in range(torch.xpu.device_count()):
    print(json.dumps([torch.xpu.get_device_name(i), torch.xpu.get_device_properties(i).total_memory]))`

// llamaDeviceLine is one device of llama-server --list-devices.
var llamaDeviceLine = regexp.MustCompile(`^\s+[^:\s]+: (.+) \((\d+) MiB, \d+ MiB free\)$`)

// ParseDevices reads DeviceProbe's output. No device is an empty list, not an error: a
// llama.cpp build without a GPU backend lists none.
func (s Spec) ParseDevices(out string) ([]Device, error) {
	var devs []Device
	lines := strings.Split(strings.TrimSpace(out), "\n")
	switch {
	case s.Engine == LlamaCpp:
		for _, l := range lines {
			if m := llamaDeviceLine.FindStringSubmatch(strings.TrimRight(l, "\r")); m != nil {
				mib, _ := strconv.ParseInt(m[2], 10, 64)
				devs = append(devs, Device{Name: m[1], MemoryMiB: mib})
			}
		}
		if len(devs) == 0 && !strings.Contains(out, "Available devices:") {
			return nil, fmt.Errorf("llama-server --list-devices printed no device list: %.200q", out)
		}
	case s.Accelerator == CUDA:
		for _, l := range lines {
			name, mem, ok := strings.Cut(strings.TrimSpace(l), ",")
			mib, err := strconv.ParseInt(strings.TrimSpace(mem), 10, 64)
			if !ok || err != nil || strings.TrimSpace(name) == "" {
				return nil, fmt.Errorf("nvidia-smi line %q is not \"name, MiB\"", l)
			}
			devs = append(devs, Device{Name: strings.TrimSpace(name), MemoryMiB: mib})
		}
	case s.Accelerator == XPU:
		for _, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			var row []any
			if err := json.Unmarshal([]byte(l), &row); err != nil || len(row) != 2 {
				return nil, fmt.Errorf("torch.xpu probe line %q is not [name, bytes]", l)
			}
			name, _ := row[0].(string)
			bytes, _ := row[1].(float64)
			devs = append(devs, Device{Name: name, MemoryMiB: int64(bytes) >> 20})
		}
	}
	return devs, nil
}

// DescribeDevices writes devices the way results' experiment.hardware reads: "4 x Intel
// Arc Pro B70, 32656 MiB each" when they are alike, else each one in turn. Empty for none.
func DescribeDevices(devs []Device) string {
	if len(devs) == 0 {
		return ""
	}
	one := func(d Device) string {
		if d.MemoryMiB > 0 {
			return fmt.Sprintf("%s, %d MiB", d.Name, d.MemoryMiB)
		}
		return d.Name
	}
	alike := true
	for _, d := range devs[1:] {
		alike = alike && d == devs[0]
	}
	switch {
	case len(devs) == 1:
		return one(devs[0])
	case alike && devs[0].MemoryMiB > 0:
		return fmt.Sprintf("%d x %s, %d MiB each", len(devs), devs[0].Name, devs[0].MemoryMiB)
	case alike:
		return fmt.Sprintf("%d x %s", len(devs), devs[0].Name)
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = one(d)
	}
	return strings.Join(parts, "; ")
}
