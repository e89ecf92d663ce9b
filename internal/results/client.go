package results

// ClientTrial is the load generator's account of itself over one trial: what it added to
// the measurement (how late it sent, how far behind it read), the CPU it used and was denied,
// each against the limit it may reach, and whether it, not the server, was the bottleneck.
// A client-bound trial measured the client: its verdict is client_bound, it is never a side
// of the boundary, and no level at or above it is a capacity of the server (DeriveHeadline).
type ClientTrial struct {
	// SendDelay is, over the measured requests, how long the client took to send a request
	// once it was ready to (a closed loop's slot freed, an open-loop request due, a user's
	// think time over), less the connection set-up. Its mean may reach SendDelayLimitMs:
	// a client late on average holds the server below the load the trial names. An
	// open-loop trial's p99 may also reach ScheduleLimitMs, beyond which its sends bunch up
	// and the server sees another arrival process; absent from other trials.
	SendDelayMeanMs  float64 `json:"send_delay_mean_ms"`
	SendDelayP99Ms   float64 `json:"send_delay_p99_ms"`
	SendDelayMaxMs   float64 `json:"send_delay_max_ms"`
	SendDelayLimitMs float64 `json:"send_delay_limit_ms"`
	ScheduleLimitMs  float64 `json:"schedule_limit_ms,omitempty"`
	// ReadLag is, over the measured requests, each one's worst read lag: how long data had
	// waited in the socket when the client read it (the kernel's receive timestamp against
	// the read): every timestamp the client takes after it is late by as much. Its mean may
	// reach ReadLagLimitMs. Absent where reads are not timed (not Linux).
	ReadLagMeanMs  *float64 `json:"read_lag_mean_ms,omitempty"`
	ReadLagP99Ms   *float64 `json:"read_lag_p99_ms,omitempty"`
	ReadLagMaxMs   *float64 `json:"read_lag_max_ms,omitempty"`
	ReadLagLimitMs float64  `json:"read_lag_limit_ms"`
	// CPU is the load generator's process over the trial's load; absent where it cannot be
	// read.
	CPU *ClientCPU `json:"cpu,omitempty"`
	// Bound says the client was the bottleneck; BoundBy names each figure past its limit
	// (ClientSignals, in that order).
	Bound   bool     `json:"bound"`
	BoundBy []string `json:"bound_by,omitempty"`
}

// ClientCPU is the CPU the load generator's process had over a trial's load.
type ClientCPU struct {
	// Source is where the figures come from: cgroup_v2 or cgroup_v1 (the cgroup with a CPU
	// quota the process runs in, its throttling counters), or process (no quota: the
	// process's CPU time, getrusage).
	Source string `json:"source"`
	// AvailableCPUs is what the process may use: its cgroup's quota in CPUs, else the CPUs
	// it may run on. UsedCPUs is its CPU time over the load's wall clock.
	AvailableCPUs float64 `json:"available_cpus"`
	UsedCPUs      float64 `json:"used_cpus"`
	// BusyPercent is UsedCPUs in percent of AvailableCPUs; it may reach BusyLimitPercent.
	BusyPercent      float64 `json:"busy_percent"`
	BusyLimitPercent float64 `json:"busy_limit_percent"`
	// Throttling is what the cgroup's quota denied; absent without one.
	Throttling *CPUThrottling `json:"throttling,omitempty"`
}

// CPUThrottling is a CPU quota's throttling over a trial's load (cgroup cpu.stat): the
// quota's periods, those in which the cgroup ran out of quota and was stopped until the next,
// and how long it was stopped, also in percent of the load's wall clock, which may reach
// LimitPercent.
type CPUThrottling struct {
	Periods          int     `json:"periods"`
	ThrottledPeriods int     `json:"throttled_periods"`
	ThrottledMs      float64 `json:"throttled_ms"`
	ThrottledPercent float64 `json:"throttled_percent"`
	LimitPercent     float64 `json:"limit_percent"`
}

// The figures a client can be bound by, as bound_by names them.
const (
	ClientSendDelay    = "send_delay"
	ClientSchedule     = "schedule"
	ClientReadLag      = "read_lag"
	ClientCPUThrottled = "cpu_throttled"
	ClientCPUBusy      = "cpu_busy"
)

// ClientSignals are the bound_by names, in the order bound_by lists them.
var ClientSignals = []string{ClientSendDelay, ClientSchedule, ClientReadLag, ClientCPUThrottled, ClientCPUBusy}

// CPU sources.
const (
	CPUFromCgroupV2 = "cgroup_v2"
	CPUFromCgroupV1 = "cgroup_v1"
	CPUFromProcess  = "process"
)

// Over lists the figures past their limits, in ClientSignals order: the one rule the
// benchmark marks a trial by and every reader checks a document against.
func (c ClientTrial) Over() []string {
	var out []string
	if c.SendDelayLimitMs > 0 && c.SendDelayMeanMs > c.SendDelayLimitMs {
		out = append(out, ClientSendDelay)
	}
	if c.ScheduleLimitMs > 0 && c.SendDelayP99Ms > c.ScheduleLimitMs {
		out = append(out, ClientSchedule)
	}
	if c.ReadLagMeanMs != nil && c.ReadLagLimitMs > 0 && *c.ReadLagMeanMs > c.ReadLagLimitMs {
		out = append(out, ClientReadLag)
	}
	if cpu := c.CPU; cpu != nil {
		if th := cpu.Throttling; th != nil && th.LimitPercent > 0 && th.ThrottledPercent > th.LimitPercent {
			out = append(out, ClientCPUThrottled)
		}
		if cpu.BusyLimitPercent > 0 && cpu.BusyPercent > cpu.BusyLimitPercent {
			out = append(out, ClientCPUBusy)
		}
	}
	return out
}

// Judge sets Bound and BoundBy from the figures (Over).
func (c *ClientTrial) Judge() {
	c.BoundBy = c.Over()
	c.Bound = len(c.BoundBy) > 0
}

// ClientBound says the trial measured its client rather than the server; false for one
// that recorded no client block.
func (t Trial) ClientBound() bool { return t.Client != nil && t.Client.Bound }
