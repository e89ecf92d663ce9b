package results

import (
	"slices"
	"strings"
	"testing"
)

// clientBound marks a trial as measured by a client past its send-delay limit.
func clientBound(t Trial) Trial {
	t.Client = &ClientTrial{SendDelayMeanMs: 40, SendDelayP99Ms: 300, SendDelayMaxMs: 420, SendDelayLimitMs: 10, ReadLagLimitMs: 10,
		Bound: true, BoundBy: []string{ClientSendDelay}}
	return t
}

// A client-bound trial judges nothing: its level and every level above it are no capacity
// of the server, and only a failure below it is a boundary.
func TestDeriveHeadlineClientBound(t *testing.T) {
	t.Parallel()
	objs := []SLO{ttft95, itl95}
	conf := func(c int, ttft, itl float64) Trial { return ht("confirmation", c, ttft, itl) }
	probe := func(c int, ttft, itl float64) Trial { return ht("probe", c, ttft, itl) }
	tests := []struct {
		name     string
		trials   []Trial
		mp, ff   *int
		client   bool
		verdicts []string
	}{
		// The starved client of issue 37: 1 and 2 passed, 3 "failed" because the client
		// was late; capacity 2 would be a fivefold underestimate.
		{"passes below a client-bound failure are no capacity", []Trial{conf(1, 10, 1), conf(2, 20, 1), clientBound(conf(3, 300, 1))},
			nil, nil, true, []string{"pass", "pass", "client_bound"}},
		{"a client-bound pass is no pass either", []Trial{conf(1, 10, 1), clientBound(conf(2, 20, 1))},
			nil, nil, true, []string{"pass", "client_bound"}},
		{"client-bound from the first trial", []Trial{clientBound(conf(1, 300, 1))},
			nil, nil, true, []string{"client_bound"}},
		// A boundary found below the client-bound level stands: the server failed where
		// the client kept up.
		{"a failure below it is the boundary", []Trial{probe(4, 50, 1), clientBound(probe(8, 300, 1)), probe(6, 150, 1), conf(5, 120, 1), conf(4, 90, 1)},
			intp(4), intp(5), false, []string{"pass", "client_bound", "fail", "fail", "pass"}},
		// A pass above the client-bound level is not a capacity either.
		{"nothing above it counts", []Trial{probe(1, 10, 1), probe(8, 20, 1), clientBound(probe(4, 300, 1))},
			nil, nil, true, []string{"pass", "pass", "client_bound"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Label: "w", AllTrials: tc.trials}
			h, err := DeriveHeadline(objs, w)
			if err != nil {
				t.Fatal(err)
			}
			if intOrNull(h.MaximumPassingConcurrency) != intOrNull(tc.mp) || intOrNull(h.FirstFailingConcurrency) != intOrNull(tc.ff) || h.ClientBound != tc.client {
				t.Errorf("boundary %s / %s, client bound %t; want %s / %s, %t", intOrNull(h.MaximumPassingConcurrency), intOrNull(h.FirstFailingConcurrency), h.ClientBound,
					intOrNull(tc.mp), intOrNull(tc.ff), tc.client)
			}
			if h.Bound != BoundNone {
				t.Errorf("bound %q: a client-bound search is not bounded by the search", h.Bound)
			}
			if !slices.Equal(h.Verdicts, tc.verdicts) {
				t.Errorf("verdicts %q, want %q", h.Verdicts, tc.verdicts)
			}
			// The document the benchmark writes from it reads back, and a forged boundary
			// or mark does not.
			h.Apply(&w)
			d := &Document{SLOs: objs, Workloads: []Workload{w}}
			out, err := Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(out); err != nil {
				t.Fatal(err)
			}
			w.ClientBound = !w.ClientBound
			if got := CheckHeadline(objs, 0, w); len(got) != 1 || got[0].Field != "client_bound" {
				t.Errorf("a flipped client_bound: contradictions %v", got)
			}
		})
	}
}

// Each figure against its own limit; a trial's mark must be what its figures say.
func TestClientOver(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	quiet := ClientTrial{SendDelayMeanMs: 0.2, SendDelayP99Ms: 0.4, SendDelayLimitMs: 10, ReadLagMeanMs: f(0.1), ReadLagP99Ms: f(0.2), ReadLagLimitMs: 10,
		CPU: &ClientCPU{Source: CPUFromCgroupV1, AvailableCPUs: 2, UsedCPUs: 0.1, BusyPercent: 5, BusyLimitPercent: 90,
			Throttling: &CPUThrottling{Periods: 100, ThrottledPercent: 0, LimitPercent: 10}}}
	for _, tc := range []struct {
		name string
		edit func(*ClientTrial)
		want []string
	}{
		{"kept up", func(*ClientTrial) {}, nil},
		{"at the limits is not past them", func(c *ClientTrial) {
			c.SendDelayMeanMs, c.ReadLagMeanMs, c.CPU.BusyPercent, c.CPU.Throttling.ThrottledPercent = 10, f(10), 90, 10
		}, nil},
		// A stall now and then lands in the tail, not in the mean.
		{"a stall is no starvation", func(c *ClientTrial) { c.SendDelayP99Ms, c.ReadLagP99Ms = 60, f(45) }, nil},
		{"late sends", func(c *ClientTrial) { c.SendDelayMeanMs = 11 }, []string{ClientSendDelay}},
		{"an open loop's schedule", func(c *ClientTrial) { c.ScheduleLimitMs, c.SendDelayP99Ms = 25, 30 }, []string{ClientSchedule}},
		{"a closed loop has no schedule", func(c *ClientTrial) { c.SendDelayP99Ms = 30 }, nil},
		{"reads behind", func(c *ClientTrial) { c.ReadLagMeanMs = f(50) }, []string{ClientReadLag}},
		{"reads not timed", func(c *ClientTrial) { c.ReadLagMeanMs, c.ReadLagP99Ms = nil, nil }, nil},
		{"starved by its quota", func(c *ClientTrial) { c.CPU.Throttling.ThrottledPercent, c.CPU.BusyPercent = 80, 99 },
			[]string{ClientCPUThrottled, ClientCPUBusy}},
		{"everything", func(c *ClientTrial) {
			c.SendDelayMeanMs, c.SendDelayP99Ms, c.ScheduleLimitMs, c.ReadLagMeanMs, c.CPU.Throttling.ThrottledPercent, c.CPU.BusyPercent = 200, 300, 100, f(90), 80, 99
		}, ClientSignals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := quiet
			cpu, th := *quiet.CPU, *quiet.CPU.Throttling
			cpu.Throttling, c.CPU = &th, &cpu
			tc.edit(&c)
			c.Judge()
			if !slices.Equal(c.BoundBy, tc.want) || c.Bound != (len(tc.want) > 0) {
				t.Fatalf("bound %t by %q, want %q", c.Bound, c.BoundBy, tc.want)
			}
			tr := Trial{Client: &c}
			if errs := CheckTrial(nil, tr); len(errs) != 0 {
				t.Fatalf("a judged trial is refused: %v", errs)
			}
			c.Bound = !c.Bound
			if errs := CheckTrial(nil, tr); len(errs) != 1 || !strings.Contains(errs[0].Error(), "trial.client.bound: bound") {
				t.Fatalf("a flipped mark: %v", errs)
			}
		})
	}
}

// The client block round-trips byte for byte, with and without the figures only Linux and a
// cgroup give, and a reader refuses an unknown CPU source.
func TestClientRoundTrip(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	starved := ClientTrial{SendDelayMeanMs: 112.5, SendDelayP99Ms: 310, SendDelayMaxMs: 402, SendDelayLimitMs: 10, ScheduleLimitMs: 100,
		ReadLagMeanMs: f(40), ReadLagP99Ms: f(95.5), ReadLagMaxMs: f(120), ReadLagLimitMs: 10,
		CPU: &ClientCPU{Source: CPUFromCgroupV1, AvailableCPUs: 0.03, UsedCPUs: 0.03, BusyPercent: 99.5, BusyLimitPercent: 90,
			Throttling: &CPUThrottling{Periods: 120, ThrottledPeriods: 118, ThrottledMs: 11000, ThrottledPercent: 91.7, LimitPercent: 10}}}
	starved.Judge()
	elsewhere := ClientTrial{SendDelayMeanMs: 0.1, SendDelayP99Ms: 0.3, SendDelayMaxMs: 0.5, SendDelayLimitMs: 10, ReadLagLimitMs: 10,
		CPU: &ClientCPU{Source: CPUFromProcess, AvailableCPUs: 8, UsedCPUs: 0.2, BusyPercent: 2.5, BusyLimitPercent: 90}}
	elsewhere.Judge()
	doc := &Document{
		SLOs: []SLO{ttft95},
		Workloads: []Workload{{Label: "a", ClientBound: true, PassingTrials: []Trial{}, FailingTrials: []Trial{},
			AllTrials: []Trial{
				{Trial: 1, Concurrency: 1, Kind: "confirmation", Verdict: "pass", SLOs: []SLOResult{{Metric: MetricTTFT, Percentile: 95, Value: 20, Met: true}}, Client: &elsewhere},
				{Trial: 1, Concurrency: 2, Kind: "confirmation", Verdict: "client_bound", SLOs: []SLOResult{{Metric: MetricTTFT, Percentile: 95, Value: 400, Met: false}}, Client: &starved},
			}}},
	}
	raw, err := Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"client_bound": true`, `"verdict": "client_bound"`, `"throttled_periods": 118`, `"read_lag_p99_ms": 95.5`,
		`"bound_by": [
              "send_delay",
              "schedule",
              "read_lag",
              "cpu_throttled",
              "cpu_busy"
            ]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("written document lacks %s", want)
		}
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c := back.Workloads[0].AllTrials[1].Client; c == nil || *c.ReadLagP99Ms != 95.5 || c.CPU.Throttling.ThrottledPeriods != 118 || !c.Bound {
		t.Fatalf("read back as %+v", c)
	}
	if c := back.Workloads[0].AllTrials[0].Client; c.ReadLagMeanMs != nil || c.CPU.Throttling != nil || c.Bound || c.ScheduleLimitMs != 0 {
		t.Fatalf("read back as %+v", c)
	}
	if again, _ := Marshal(back); string(again) != string(raw) {
		t.Fatalf("second write differs:\n%s\nvs\n%s", again, raw)
	}
	bad := strings.Replace(string(raw), `"source": "process"`, `"source": "guess"`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), `workloads[0].trials[0].client.cpu.source: "guess" is not one of cgroup_v2, cgroup_v1, process`) {
		t.Fatalf("bad source: %v", err)
	}
}
