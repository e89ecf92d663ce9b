package capacity

// The request-rate axis: every workload's synthetic prompts sent open-loop on a schedule
// drawn from the arrival process, and searched over the rate (openloop.go is its base).

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// rateAxis searches the request rate over search.rate's ladder.
type rateAxis struct {
	openLoopBase
	syntheticPrompts
}

func (a rateAxis) pattern() string {
	if a.ol.Arrival.Pattern == load.ArrivalGamma {
		return "open-loop gamma, burstiness " + strconv.FormatFloat(a.ol.Arrival.Burstiness, 'g', -1, 64)
	}
	return "open-loop " + a.ol.Arrival.Pattern
}

func (a rateAxis) measure(ctx context.Context, r *trialRunner) (results.Workload, error) {
	return measureLadder(ctx, r, a, a.ol, false)
}

func (rateAxis) where(at trialAt) string {
	return fmt.Sprintf("%s requests/s", trimFloat(math.Round(at.Value*1000)/1000))
}

// drive sends the trial at its rate: the arrivals drawn from the arrival process, seeded by
// the run's seed and the trial's stream, so a resumed trial sends on the same schedule.
func (a rateAxis) drive(ctx context.Context, r *trialRunner, at trialAt, p trialPhases, _ func()) (driven, error) {
	h := fnv.New64a()
	h.Write([]byte(a.stream(r.w.Label, at)))
	seed := splitmix.Mix(uint64(r.s.cfg.Seed) ^ splitmix.Mix(h.Sum64()))
	schedule, err := a.ol.Arrival.Schedule(at.Value, len(p.warmup.texts)+len(p.measured.texts), seed)
	if err != nil {
		return driven{}, err
	}
	deal := func(parts int) []int { return dealArrivals(len(schedule), parts, a.ol.Arrival.Pattern, seed) }
	return a.driveOnSchedule(ctx, r, at, p, schedule, at.Value, a.ol.Arrival.Pattern, r.w.OutputTokens, deal)
}

func (rateAxis) place(t *results.Trial, _ Workload, at trialAt) { t.RequestRate = at.Value }

func (rateAxis) mark(e *JournalEntry, _ Workload, value float64) { e.Concurrency, e.Rate = 0, value }

func (rateAxis) rung(e JournalEntry) float64 { return e.Rate }

func (a rateAxis) offAxis(t JournalEntry) string {
	switch {
	case t.Rate == 0:
		return fmt.Sprintf("it is a trial at concurrency %d, but the configuration searches by request rate", t.Concurrency)
	case t.Speedup != 0:
		return fmt.Sprintf("it is a replay at speedup %.6g, but the configuration searches by request rate", t.Speedup)
	}
	return a.offLadder(t.Rate, fmt.Sprintf("rate %.6g requests/s", t.Rate))
}

func (rateAxis) describe(*results.Workload, Workload) {}

func (rateAxis) nonMonotone(passed, failed float64) string {
	return fmt.Sprintf("%.4g requests/s passed although %.4g requests/s failed", passed, failed)
}

func (a rateAxis) remaining(cfg Config, done []JournalEntry) (lo, hi int) {
	return remainingOnLadder(a, cfg, done)
}
