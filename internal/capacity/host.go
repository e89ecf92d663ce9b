package capacity

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// What the load generator's own machine did during a trial's load, from Linux's /proc: the
// 1-minute load average (/proc/loadavg) and the CPUs' time by state (/proc/stat's first line:
// user nice system idle iowait irq softirq steal, in clock ticks; proc(5)). Elsewhere nothing
// is read and the trial has no host block.

// hostSample is one reading of the machine.
type hostSample struct {
	ok          bool
	load1       float64
	cpus        int
	total, idle uint64 // all CPUs' ticks, and the idle and iowait ones
	steal       uint64
}

func sampleHost() hostSample { return sampleHostAt("/proc") }

// sampleHostAt reads the machine from a /proc at root (tests give one of their own).
func sampleHostAt(procRoot string) hostSample {
	var s hostSample
	raw, err := os.ReadFile(filepath.Join(procRoot, "loadavg"))
	if err != nil {
		return s
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return s
	}
	if s.load1, err = strconv.ParseFloat(f[0], 64); err != nil {
		return s
	}
	stat, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return s
	}
	for _, line := range strings.Split(string(stat), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "cpu":
			for i, v := range fields[1:min(len(fields), 9)] {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return hostSample{}
				}
				s.total += n
				switch i {
				case 3, 4: // idle, iowait
					s.idle += n
				case 7:
					s.steal = n
				}
			}
		case strings.HasPrefix(fields[0], "cpu"):
			s.cpus++
		}
	}
	s.ok = s.total > 0 && s.cpus > 0
	return s
}

// hostLoad is the machine between two readings; nil when either could not be read or no
// time passed between them.
func hostLoad(start, end hostSample) *results.HostLoad {
	if !start.ok || !end.ok || end.total <= start.total {
		return nil
	}
	ticks := float64(end.total - start.total)
	// A counter that ran backwards (iowait may) reads as 0 and one beyond the total as all
	// of it, so the figures stay what a results document may hold: busy and steal within
	// 0–100 %, steal within busy.
	pct := func(a, b uint64) float64 {
		if b < a {
			return 0
		}
		return min(100*float64(b-a)/ticks, 100)
	}
	busy := 100 - pct(start.idle, end.idle)
	return &results.HostLoad{CPUs: end.cpus, LoadAvg1mStart: start.load1, LoadAvg1mEnd: end.load1,
		BusyPercent: busy, StealPercent: min(pct(start.steal, end.steal), busy)}
}
