package metrics

import (
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The client's own delays (load.SelfDelay) may reach, on average over a trial's measured
// requests, a share of the tightest latency an objective bounds, never less than a floor. A
// client that sends a twentieth of a threshold late on average keeps the server's load that
// much below the level the trial names; one that reads a twentieth of a threshold behind
// adds that much to every latency it measures: past that, a verdict near the boundary is the
// client's. Below the floor the delays are the operating system's timer and scheduling
// jitter on a busy machine, which a trial's objective values shrug off. The mean, not a high
// percentile: a shared machine stalls a client now and then, and such a stall lands on one
// request's figures; a starved client is late on every request. How the share and the floor
// were chosen, on the simulated engine with a client unstarved on a loaded machine and
// starved by a CPU quota, is in the results schema guide
// (templates/guides/results-schema-v1.md.tmpl).
const (
	ClientDelayShare = 0.05
	ClientDelayFloor = 10 * time.Millisecond
)

// ClientDelayLimit is the most the client's mean send delay and mean read lag may be in a
// trial judged by slos: ClientDelayShare of the tightest latency threshold (an
// output-throughput floor counts as the inter-token latency it implies), at least
// ClientDelayFloor.
func ClientDelayLimit(slos []results.SLO) time.Duration {
	tightest := time.Duration(0)
	for _, s := range slos {
		var ms float64
		switch s.Metric {
		case results.MetricTTFT, results.MetricITL, results.MetricRequestLatency, results.MetricTTST:
			ms = s.ThresholdMs
		case results.MetricPerUserThroughput:
			if s.ThresholdMs > 0 {
				ms = 1000 / s.ThresholdMs
			}
		}
		if d := time.Duration(ms * float64(time.Millisecond)); d > 0 && (tightest == 0 || d < tightest) {
			tightest = d
		}
	}
	return max(ClientDelayFloor, time.Duration(ClientDelayShare*float64(tightest)))
}

// ClientTrial is a trial's client block: the client's own delays against their limits
// (ClientDelayLimit; an open-loop trial at rate requests per second must also keep its
// schedule, its send delay's p99 within load.LatenessLimit(rate)), the CPU it had (nil when
// unknown, its limits in it), and whether it was the bottleneck.
func ClientTrial(d load.SelfDelay, cpu *results.ClientCPU, slos []results.SLO, rate float64) *results.ClientTrial {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	limit := ms(ClientDelayLimit(slos))
	c := &results.ClientTrial{SendDelayMeanMs: ms(d.SendMean), SendDelayP99Ms: ms(d.SendP99), SendDelayMaxMs: ms(d.SendMax), SendDelayLimitMs: limit,
		ReadLagLimitMs: limit, CPU: cpu}
	if rate > 0 {
		c.ScheduleLimitMs = ms(load.LatenessLimit(rate))
	}
	if d.Reads > 0 {
		mean, p99, mx := ms(d.ReadMean), ms(d.ReadP99), ms(d.ReadMax)
		c.ReadLagMeanMs, c.ReadLagP99Ms, c.ReadLagMaxMs = &mean, &p99, &mx
	}
	c.Judge()
	return c
}
