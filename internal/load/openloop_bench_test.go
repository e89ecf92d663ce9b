package load

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkOpenLoopLateness sends 2 000 requests at 1 000 requests/s (constant arrivals, 8
// streamed chunks each, a fresh connection per request) to a loopback server in a child
// process, and reports the send lateness over all rounds (dispatch minus due time) and the
// achieved offered rate. The figure: p99 ≤ 1 ms. Run:
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
	slices.Sort(late)
	b.ReportMetric(float64(pctDur(late, 50).Nanoseconds())/1e3, "late_p50_us")
	b.ReportMetric(float64(pctDur(late, 99).Nanoseconds())/1e3, "late_p99_us")
	b.ReportMetric(float64(late[len(late)-1].Nanoseconds())/1e3, "late_max_us")
	b.ReportMetric(offered/float64(b.N), "offered_req/s")
	b.ReportMetric(failed, "failed")
}
