package capacity

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// BenchmarkClientSilence runs whole benchmarks against the simulated two-slot engine with an
// unstarved client, each run a fresh engine, closed loop (a search up to 16) and open loop
// (the rate ladder from 3 to 12 requests/s): the client's own figures must never mark a
// trial client-bound. It fails on the first false alarm and reports, over every trial, the
// largest of each figure the limits read. Run it alone on the machine, with its load:
//
//	cat /proc/loadavg; go test ./internal/capacity -run '^$' -bench ClientSilence -benchtime 20x
func BenchmarkClientSilence(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  func(endpoint string) Config
	}{
		{"closed_loop", func(endpoint string) Config {
			cfg := testConfig(endpoint)
			cfg.MaxConcurrency = 16
			return cfg
		}},
		{"open_loop", func(endpoint string) Config {
			cfg := testConfig(endpoint)
			cfg.WarmupRequests, cfg.MeasuredRequests, cfg.ConfirmationTrials = 2, 16, 1
			cfg.OpenLoop = &OpenLoop{Arrival: load.Arrival{Pattern: load.ArrivalPoisson}, MinRate: 3, MaxRate: 12, Tolerance: 0.25}
			return cfg
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var worst struct{ sendMean, sendP99, readMean, readP99, busy, throttled float64 }
			trials := 0
			for b.Loop() {
				engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim"})
				if err != nil {
					b.Fatal(err)
				}
				srv := httptest.NewServer(engine)
				doc, err := Run(context.Background(), tc.cfg(srv.URL))
				srv.Close()
				if err != nil {
					b.Fatal(err)
				}
				for _, w := range doc.Workloads {
					if w.ClientBound {
						b.Fatalf("a false alarm: %q", w.Notes)
					}
					for _, t := range w.AllTrials {
						c := t.Client
						if c == nil || c.Bound {
							b.Fatalf("trial %+v: client %+v", t, c)
						}
						trials++
						worst.sendMean, worst.sendP99 = max(worst.sendMean, c.SendDelayMeanMs), max(worst.sendP99, c.SendDelayP99Ms)
						if c.ReadLagMeanMs != nil {
							worst.readMean, worst.readP99 = max(worst.readMean, *c.ReadLagMeanMs), max(worst.readP99, *c.ReadLagP99Ms)
						}
						if c.CPU != nil {
							worst.busy = max(worst.busy, c.CPU.BusyPercent)
							if th := c.CPU.Throttling; th != nil {
								worst.throttled = max(worst.throttled, th.ThrottledPercent)
							}
						}
					}
				}
			}
			b.ReportMetric(float64(trials), "trials")
			b.ReportMetric(worst.sendMean, "max_send_mean_ms")
			b.ReportMetric(worst.sendP99, "max_send_p99_ms")
			b.ReportMetric(worst.readMean, "max_read_mean_ms")
			b.ReportMetric(worst.readP99, "max_read_p99_ms")
			b.ReportMetric(worst.busy, "max_busy_%")
			b.ReportMetric(worst.throttled, "max_throttled_%")
		})
	}
}
