package load

import (
	"context"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkOpenLoopLateness sends 2 000 requests at 1 000 requests/s (constant arrivals, 8
// streamed chunks each, a fresh connection per request) to a loopback server in a child
// process, and reports the send lateness over all rounds (dispatch minus due time), the
// achieved offered rate and the cores the client itself kept busy. The figure: p99 ≤
// 1 ms. Run:
//
//	go test ./internal/load -run '^$' -bench OpenLoopLateness -benchtime 3x
func BenchmarkOpenLoopLateness(b *testing.B) {
	const rate, n = 1000.0, 2000
	raiseNoFile()
	base, stop := startServerProcess(b, burstServerEnv+"="+strconv.Itoa(8))
	defer stop()
	client, err := NewClient(ClientConfig{BaseURL: base, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	sched, err := Arrival{Pattern: ArrivalConstant}.Schedule(rate, n, 1)
	if err != nil {
		b.Fatal(err)
	}
	var late []time.Duration
	var offered, failed float64
	cpuBefore, wallBefore := processCPU(b), time.Now()
	for i := 0; i < b.N; i++ {
		res, err := RunOpenTrial(context.Background(), client, OpenSpec{
			Schedule: sched, Measured: prompts("r"+strconv.Itoa(i), n), OutputTokens: 8,
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res.Requests {
			late = append(late, r.Dispatched.Sub(r.Due))
			if !r.OK() {
				failed++
			}
		}
		offered += res.Fidelity().OfferedRate
	}
	// The client's own CPU (the load generator: scheduler, its early-wake spin, the HTTP
	// streams), in cores busy over the run: what keeping the schedule costs.
	b.ReportMetric((processCPU(b)-cpuBefore).Seconds()/time.Since(wallBefore).Seconds(), "client_cores")
	slices.Sort(late)
	b.ReportMetric(float64(pctDur(late, 50).Nanoseconds())/1e3, "late_p50_us")
	b.ReportMetric(float64(pctDur(late, 99).Nanoseconds())/1e3, "late_p99_us")
	b.ReportMetric(float64(late[len(late)-1].Nanoseconds())/1e3, "late_max_us")
	b.ReportMetric(offered/float64(b.N), "offered_req/s")
	b.ReportMetric(failed, "failed")
}

// processCPU is this process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
