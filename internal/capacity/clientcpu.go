package capacity

// The CPU the load generator's process had over a trial's load, and what it was denied.
// Where the process runs in a cgroup with a CPU quota (a container's CPU limit, a CI job's
// share, a Kubernetes pod's limits.cpu), the kernel counts the quota's periods in which the
// cgroup ran out and was stopped until the next (cpu.stat: v2 nr_periods, nr_throttled,
// throttled_usec; v1 nr_periods, nr_throttled, throttled_time in ns): time in which no
// thread of the client ran, whatever arrived on its sockets. The machine's load average and
// steal (host.go) cannot see a quota. Without one, the process's own CPU time against the
// wall clock (getrusage) says whether it used all the CPUs it may run on.

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// cpuSample is one reading of the process's CPU.
type cpuSample struct {
	at     time.Time
	used   time.Duration // user + system CPU time of the process
	usedOK bool
	cgroup cgroupCPU // the cgroup with the tightest CPU quota the process runs under
	cpus   float64   // CPUs the process may run on, quota aside
}

// cgroupCPU is a quota'd cgroup's counters; version is "" when the process runs under no
// quota (or none could be read).
type cgroupCPU struct {
	version            string  // results.CPUFromCgroupV2 or results.CPUFromCgroupV1
	dir                string  // the cgroup's directory, so two readings compare like with like
	quota              float64 // in CPUs: quota / period
	periods, throttled uint64
	throttledTime      time.Duration
}

func sampleCPU() cpuSample {
	used, ok := processCPUTime()
	return cpuSample{at: time.Now(), used: used, usedOK: ok, cgroup: readCgroupCPU("/proc/self", ""),
		cpus: float64(min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))}
}

// The limits of the CPU figures (how they were chosen: templates/guides/results-schema-v1.md.tmpl).
const (
	// cpuThrottledLimitPercent: a client whose quota stopped it for more than a tenth of a
	// trial's load held its streams unread and its slots unfilled for a tenth of it, in
	// stalls of up to a whole quota period (100 ms by default).
	cpuThrottledLimitPercent = 10
	// cpuBusyLimitPercent: a client using more than 90 % of the CPU it may have has no
	// headroom left for the bursts a trial brings (every stream's chunks at once).
	cpuBusyLimitPercent = 90
)

// clientCPU is the process's CPU between two readings; nil when nothing could be read.
func clientCPU(start, end cpuSample) *results.ClientCPU {
	wall := end.at.Sub(start.at)
	if !start.usedOK || !end.usedOK || wall <= 0 {
		return nil
	}
	out := &results.ClientCPU{Source: results.CPUFromProcess, AvailableCPUs: end.cpus, BusyLimitPercent: cpuBusyLimitPercent}
	out.UsedCPUs = max(0, (end.used-start.used).Seconds()/wall.Seconds())
	s, e := start.cgroup, end.cgroup
	if e.version != "" && s.version == e.version && s.dir == e.dir && e.periods >= s.periods && e.throttled >= s.throttled && e.throttledTime >= s.throttledTime {
		out.Source = e.version
		out.AvailableCPUs = min(out.AvailableCPUs, e.quota)
		throttled := e.throttledTime - s.throttledTime
		out.Throttling = &results.CPUThrottling{Periods: int(e.periods - s.periods), ThrottledPeriods: int(e.throttled - s.throttled),
			ThrottledMs: float64(throttled) / float64(time.Millisecond), ThrottledPercent: min(100, 100*throttled.Seconds()/wall.Seconds()),
			LimitPercent: cpuThrottledLimitPercent}
	}
	if out.AvailableCPUs > 0 {
		out.BusyPercent = 100 * out.UsedCPUs / out.AvailableCPUs
	}
	return out
}

// readCgroupCPU finds the cgroup with the tightest CPU quota among the process's cgroup and
// its ancestors, v2 first, then v1, and reads its counters. procSelf is /proc/self; root
// prefixes the mount points (tests give a tree of their own). A process under no quota, or
// not on Linux, reads as none.
func readCgroupCPU(procSelf, root string) cgroupCPU {
	cgroups, err := os.ReadFile(filepath.Join(procSelf, "cgroup"))
	if err != nil {
		return cgroupCPU{}
	}
	mounts, err := os.ReadFile(filepath.Join(procSelf, "mountinfo"))
	if err != nil {
		return cgroupCPU{}
	}
	var v2Path, v1Path string
	hasV1 := false
	for _, line := range strings.Split(string(cgroups), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2Path = path
		case hasController(controllers, "cpu"):
			v1Path, hasV1 = path, true
		}
	}
	if v2Path != "" {
		if dir, top, ok := mountDir(mounts, root, "cgroup2", "", v2Path); ok {
			if c, ok := tightest(dir, top, readV2); ok {
				return c
			}
		}
	}
	if hasV1 {
		if dir, top, ok := mountDir(mounts, root, "cgroup", "cpu", v1Path); ok {
			if c, ok := tightest(dir, top, readV1); ok {
				return c
			}
		}
	}
	return cgroupCPU{}
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// mountDir is the directory of cgroup path in the hierarchy mounted with fstype (and, for
// v1, the controller among its super options): the mount point plus the path below the
// mount's own root; top is the mount point, where a walk up stops.
func mountDir(mountinfo []byte, root, fstype, controller, path string) (dir, top string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != fstype || controller != "" && !hasController(g[2], controller) {
			continue
		}
		mountRoot, point := f[3], f[4]
		rel := path
		if mountRoot != "/" {
			if rel != mountRoot && !strings.HasPrefix(rel, mountRoot+"/") {
				continue // the process's cgroup lies outside this mount
			}
			rel = strings.TrimPrefix(rel, mountRoot)
		}
		top = filepath.Join(root, point)
		return filepath.Join(top, rel), top, true
	}
	return "", "", false
}

// tightest walks from dir up to top and returns the cgroup with the smallest quota.
func tightest(dir, top string, read func(string) (cgroupCPU, bool)) (cgroupCPU, bool) {
	var best cgroupCPU
	found := false
	for d := dir; ; d = filepath.Dir(d) {
		if c, ok := read(d); ok && (!found || c.quota < best.quota) {
			best, found = c, true
		}
		if len(d) <= len(top) || d == filepath.Dir(d) {
			break
		}
	}
	return best, found
}

// readV2 reads a v2 cgroup with a quota: cpu.max ("3000 100000"; "max 100000" is none) and
// cpu.stat.
func readV2(dir string) (cgroupCPU, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return cgroupCPU{}, false
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 || f[0] == "max" {
		return cgroupCPU{}, false
	}
	quota, err1 := strconv.ParseFloat(f[0], 64)
	period, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return cgroupCPU{}, false
	}
	st := readStat(filepath.Join(dir, "cpu.stat"))
	us, ok := st["throttled_usec"]
	if !ok {
		return cgroupCPU{}, false
	}
	return cgroupCPU{version: results.CPUFromCgroupV2, dir: dir, quota: quota / period, periods: st["nr_periods"], throttled: st["nr_throttled"],
		throttledTime: time.Duration(us) * time.Microsecond}, true
}

// readV1 reads a v1 cgroup with a quota: cpu.cfs_quota_us (-1 is none), cpu.cfs_period_us
// and cpu.stat.
func readV1(dir string) (cgroupCPU, bool) {
	num := func(name string) (float64, bool) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
		return v, err == nil
	}
	quota, ok1 := num("cpu.cfs_quota_us")
	period, ok2 := num("cpu.cfs_period_us")
	if !ok1 || !ok2 || quota <= 0 || period <= 0 {
		return cgroupCPU{}, false
	}
	st := readStat(filepath.Join(dir, "cpu.stat"))
	ns, ok := st["throttled_time"]
	if !ok {
		return cgroupCPU{}, false
	}
	return cgroupCPU{version: results.CPUFromCgroupV1, dir: dir, quota: quota / period, periods: st["nr_periods"], throttled: st["nr_throttled"],
		throttledTime: time.Duration(ns)}, true
}

// readStat reads a flat-keyed cgroup file ("key value" per line).
func readStat(path string) map[string]uint64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}
