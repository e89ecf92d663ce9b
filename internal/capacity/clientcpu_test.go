package capacity

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// tree writes files under a temporary root: path → content.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The quota the process runs under is found where each kind of machine puts it, and a
// process under none reads as none.
func TestReadCgroupCPU(t *testing.T) {
	t.Parallel()
	const v1Mounts = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n" +
		"33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n36 31 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  cgroupCPU // dir relative to the root
	}{
		// This project's test machine: v1 cpu controller, an empty v2 hierarchy beside it,
		// the shell moved into a cgroup with a 3 % quota (scripts/starved-client.sh).
		{"v1, hybrid host", map[string]string{
			"proc/cgroup":    "2:cpuacct:/\n1:cpu:/starved\n0::/\n",
			"proc/mountinfo": v1Mounts,
			"sys/fs/cgroup/cpu/starved/cpu.cfs_quota_us":  "3000\n",
			"sys/fs/cgroup/cpu/starved/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/cpu/starved/cpu.stat":          "nr_periods 120\nnr_throttled 100\nthrottled_time 9000000000\nnr_bursts 0\nburst_time 0\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":          "-1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us":         "100000\n",
			"sys/fs/cgroup/cpu/cpu.stat":                  "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		}, cgroupCPU{version: results.CPUFromCgroupV1, dir: "sys/fs/cgroup/cpu/starved", quota: 0.03, periods: 120, throttled: 100, throttledTime: 9 * time.Second}},
		{"v1, no quota", map[string]string{
			"proc/cgroup":                         "1:cpu:/\n0::/\n",
			"proc/mountinfo":                      v1Mounts,
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/cpu/cpu.stat":          "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		}, cgroupCPU{}},
		// A container on a v2 host (Docker, a Kubernetes pod): its own cgroup namespace, so
		// its cgroup is the root of what it sees, where its limit sits.
		{"v2 container", map[string]string{
			"proc/cgroup":                "0::/\n",
			"proc/mountinfo":             "500 400 0:40 / /sys/fs/cgroup ro - cgroup2 cgroup rw\n",
			"sys/fs/cgroup/cpu.max":      "50000 100000\n",
			"sys/fs/cgroup/cpu.stat":     "usage_usec 1\nnr_periods 40\nnr_throttled 3\nthrottled_usec 25000\n",
			"sys/fs/cgroup/cgroup.procs": "1\n",
		}, cgroupCPU{version: results.CPUFromCgroupV2, dir: "sys/fs/cgroup", quota: 0.5, periods: 40, throttled: 3, throttledTime: 25 * time.Millisecond}},
		// A v2 host process in a leaf without a limit whose parent has one: the parent's
		// quota stops it, and the tighter of two quotas is the one that binds.
		{"v2, the tightest ancestor", map[string]string{
			"proc/cgroup":    "0::/ci.slice/job-7/step\n",
			"proc/mountinfo": "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/ci.slice/job-7/step/cpu.max":  "max 100000\n",
			"sys/fs/cgroup/ci.slice/job-7/step/cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
			"sys/fs/cgroup/ci.slice/job-7/cpu.max":       "3000 100000\n",
			"sys/fs/cgroup/ci.slice/job-7/cpu.stat":      "nr_periods 10\nnr_throttled 9\nthrottled_usec 800000\n",
			"sys/fs/cgroup/ci.slice/cpu.max":             "400000 100000\n",
			"sys/fs/cgroup/ci.slice/cpu.stat":            "nr_periods 10\nnr_throttled 0\nthrottled_usec 0\n",
		}, cgroupCPU{version: results.CPUFromCgroupV2, dir: "sys/fs/cgroup/ci.slice/job-7", quota: 0.03, periods: 10, throttled: 9, throttledTime: 800 * time.Millisecond}},
		// v2 without the cpu controller (this machine's unified hierarchy): no cpu.max, so
		// v1 is asked, which has no quota either.
		{"v2 without the cpu controller", map[string]string{
			"proc/cgroup":                         "1:cpu:/\n0::/\n",
			"proc/mountinfo":                      v1Mounts,
			"sys/fs/cgroup/unified/cgroup.procs":  "1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
		}, cgroupCPU{}},
		{"no cgroup file (not Linux)", map[string]string{"proc/mountinfo": v1Mounts}, cgroupCPU{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := tree(t, tc.files)
			got := readCgroupCPU(filepath.Join(root, "proc"), root)
			want := tc.want
			if want.dir != "" {
				want.dir = filepath.Join(root, want.dir)
			}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

// Two readings become the trial's figures: the quota's throttling over the wall clock, and
// the CPU used against what the process may have.
func TestClientCPU(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	cg := func(periods, throttled uint64, tt time.Duration) cgroupCPU {
		return cgroupCPU{version: results.CPUFromCgroupV1, dir: "/sys/fs/cgroup/cpu/starved", quota: 0.03, periods: periods, throttled: throttled, throttledTime: tt}
	}
	start := cpuSample{at: t0, used: time.Second, usedOK: true, cgroup: cg(10, 2, 100*time.Millisecond), cpus: 2}
	end := cpuSample{at: t0.Add(10 * time.Second), used: time.Second + 300*time.Millisecond, usedOK: true, cgroup: cg(110, 92, 8100*time.Millisecond), cpus: 2}
	got := clientCPU(start, end)
	want := results.ClientCPU{Source: results.CPUFromCgroupV1, AvailableCPUs: 0.03, UsedCPUs: 0.03, BusyPercent: 100, BusyLimitPercent: 90,
		Throttling: &results.CPUThrottling{Periods: 100, ThrottledPeriods: 90, ThrottledMs: 8000, ThrottledPercent: 80, LimitPercent: 10}}
	if got == nil || got.Throttling == nil || *got.Throttling != *want.Throttling {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	g, w := *got, want
	g.Throttling, w.Throttling = nil, nil
	if g.Source != w.Source || !near(g.AvailableCPUs, w.AvailableCPUs) || !near(g.UsedCPUs, w.UsedCPUs) || !near(g.BusyPercent, w.BusyPercent) || g.BusyLimitPercent != w.BusyLimitPercent {
		t.Fatalf("got %+v, want %+v", g, w)
	}
	// No quota: the process's CPU against the CPUs it may run on.
	start.cgroup, end.cgroup = cgroupCPU{}, cgroupCPU{}
	end.used = start.used + 18*time.Second
	got = clientCPU(start, end)
	if got.Source != results.CPUFromProcess || got.Throttling != nil || !near(got.UsedCPUs, 1.8) || !near(got.BusyPercent, 90) {
		t.Fatalf("without a quota: %+v", got)
	}
	// A cgroup that changed between the readings (the process moved) is not compared.
	start.cgroup, end.cgroup = cg(10, 2, 0), cg(110, 92, time.Second)
	end.cgroup.dir = "/sys/fs/cgroup/cpu/other"
	if got = clientCPU(start, end); got.Source != results.CPUFromProcess || got.Throttling != nil {
		t.Fatalf("a moved process: %+v", got)
	}
	if clientCPU(cpuSample{}, end) != nil {
		t.Fatal("an unread start gives figures")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
