package provider

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// podCPUCgroup is the CPU cgroup the stand-in kubelet (kubeRunners) gives a container with
// limits.cpu, as a kubelet does: CFS bandwidth control with a period of 100 ms and a quota of
// the limit's share of it (pkg/kubelet/cm: milliCPUToQuota, quota = milliCPU * period /
// 1000, at least 1 ms). cgroup v2 where the cpu controller is on the unified hierarchy
// (cpu.max "quota period"), else v1's cpu controller (cpu.cfs_quota_us, cpu.cfs_period_us);
// scripts/starved-client.sh chooses the same way.
type podCPUCgroup struct {
	dir     string
	version string // "v2" or "v1"
	quota   int64  // microseconds per period
}

const cgroupCPUPeriod = 100000 // microseconds, the kubelet's default cpu-cfs-quota-period

// cgroupQuota is the kubelet's quota for a CPU limit in millicores.
func cgroupQuota(milli int64) int64 {
	return max(milli*cgroupCPUPeriod/1000, 1000)
}

// cgroupMounts are the cgroup2 mount point and the v1 cpu controller's ("" where absent).
func cgroupMounts() (v2, v1 string) {
	raw, _ := os.ReadFile("/proc/mounts")
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		switch {
		case f[2] == "cgroup2" && v2 == "":
			v2 = f[1]
		case f[2] == "cgroup" && v1 == "" && hasOption(f[3], "cpu"):
			v1 = f[1]
		}
	}
	return v2, v1
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// newPodCPUCgroup makes the cgroup of one container with a CPU limit of milli millicores.
func newPodCPUCgroup(name string, milli int64) (*podCPUCgroup, error) {
	quota := cgroupQuota(milli)
	v2, v1 := cgroupMounts()
	if v2 != "" {
		if ctrl, err := os.ReadFile(filepath.Join(v2, "cgroup.controllers")); err == nil && hasOption(strings.ReplaceAll(strings.TrimSpace(string(ctrl)), " ", ","), "cpu") {
			sub := filepath.Join(v2, "cgroup.subtree_control")
			if cur, _ := os.ReadFile(sub); !hasOption(strings.ReplaceAll(strings.TrimSpace(string(cur)), " ", ","), "cpu") {
				_ = os.WriteFile(sub, []byte("+cpu"), 0o644)
			}
			dir := filepath.Join(v2, name)
			if err := os.Mkdir(dir, 0o755); err == nil {
				c := &podCPUCgroup{dir: dir, version: "v2", quota: quota}
				if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, cgroupCPUPeriod)), 0o644); err != nil {
					_ = c.remove()
					return nil, fmt.Errorf("cgroup v2 %s: writing cpu.max: %w", dir, err)
				}
				return c, nil
			}
		}
	}
	if v1 == "" {
		return nil, fmt.Errorf("no cgroup with the cpu controller to write (cgroup2: %s, v1 cpu: not mounted)", cmp.Or(v2, "not mounted"))
	}
	dir := filepath.Join(v1, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v1 cpu controller at %s (cgroup2: %s, without the cpu controller or not writable): %w", v1, cmp.Or(v2, "not mounted"), err)
	}
	c := &podCPUCgroup{dir: dir, version: "v1", quota: quota}
	for _, w := range [][2]string{{"cpu.cfs_period_us", strconv.Itoa(cgroupCPUPeriod)}, {"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}} {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0o644); err != nil {
			_ = c.remove()
			return nil, fmt.Errorf("cgroup v1 %s: writing %s: %w", dir, w[0], err)
		}
	}
	return c, nil
}

// procs is the file a process writes its pid to, to move into the cgroup.
func (c *podCPUCgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

// limit reads back the quota as the kernel holds it, "quota period" in microseconds.
func (c *podCPUCgroup) limit() string {
	if c.version == "v2" {
		raw, _ := os.ReadFile(filepath.Join(c.dir, "cpu.max"))
		return strings.TrimSpace(string(raw))
	}
	q, _ := os.ReadFile(filepath.Join(c.dir, "cpu.cfs_quota_us"))
	p, _ := os.ReadFile(filepath.Join(c.dir, "cpu.cfs_period_us"))
	return strings.TrimSpace(string(q)) + " " + strings.TrimSpace(string(p))
}

// remove removes the cgroup once its processes are gone (a process that just exited can
// take a moment to leave it).
func (c *podCPUCgroup) remove() error {
	var err error
	for range 50 {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", c.dir, err)
}

// cgroupsWritable says why the stand-in kubelet cannot honour a CPU limit here, "" where it
// can: a test that needs it skips with this reason.
func cgroupsWritable() string {
	c, err := newPodCPUCgroup(fmt.Sprintf("llmserve-kubelet-probe-%d", os.Getpid()), 100)
	if err != nil {
		return "the stand-in kubelet cannot put a runner under its pod's CPU limit: " + err.Error() + " (run as root on Linux)"
	}
	if err := c.remove(); err != nil {
		return err.Error()
	}
	return ""
}

// The stand-in kubelet's cgroup holds a limit's quota as a kubelet sets it, the process
// started through it runs inside it (before its program starts), and it goes with the pod.
func TestPodCPUCgroup(t *testing.T) {
	if why := cgroupsWritable(); why != "" {
		t.Skip(why)
	}
	for milli, want := range map[int64]int64{30: 3000, 1500: 150000, 1: 1000} {
		if got := cgroupQuota(milli); got != want {
			t.Errorf("quota of %dm = %d, want %d", milli, got, want)
		}
	}
	c, err := newPodCPUCgroup(fmt.Sprintf("llmserve-kubelet-%d-test", os.Getpid()), 50)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.remove(); err != nil {
			t.Error(err)
		}
	}()
	if got := c.limit(); got != "5000 100000" {
		t.Errorf("limit %q, want 5000 100000", got)
	}
	cmd := exec.Command("/bin/sh", "-c", `echo $$ >"$0" && exec "$@"`, c.procs(), "/bin/sh", "-c", "cat /proc/self/cgroup")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rel := "/" + filepath.Base(c.dir)
	if !regexp.MustCompile(`(?m)^\d+:[^:]*\bcpu\b[^:]*:` + regexp.QuoteMeta(rel) + `$|^0::` + regexp.QuoteMeta(rel) + `$`).Match(out) {
		t.Errorf("the process ran outside %s:\n%s", c.dir, out)
	}
}
