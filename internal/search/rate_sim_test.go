package search_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// rateScenario is one engine of known rate capacity (simengine.FixedService), an arrival
// pattern, a trial shape, a p95 TTFT objective and a ladder of rates to search.
type rateScenario struct {
	engine      simengine.FixedService
	arrival     load.Arrival
	warmups     int
	measured    int
	thresholdMs float64
	ladder      search.Ladder
	seed        uint64
	// replay, when set, is a recorded trace the trial replays: the ladder is then over the
	// speedup, and a trial's arrivals are the trace's offsets divided by it (warmups the
	// trace's first requests).
	replay *trace.Trace
}

var rateRule = metrics.DefaultOpenLoopRule()

// trialAt runs one open-loop trial in virtual time and judges it as the benchmark does: the
// p95 TTFT objective and both keep-up guards must hold. A probe stops as soon as its fail is
// certain (the objective's count rule, or the completion guard's CannotKeepUp).
func (s rateScenario) trialAt(rate float64, kind search.Kind, index int) (search.Outcome, metrics.KeepUp, error) {
	seed := splitmix.Mix(s.seed ^ splitmix.Mix(math.Float64bits(rate)^uint64(kind)<<56^uint64(index)))
	sched, err := s.arrival.Schedule(rate, s.warmups+s.measured, seed)
	if s.replay != nil {
		sched, err = s.replay.Schedule(rate)
	}
	if err != nil {
		return search.Outcome{}, metrics.KeepUp{}, err
	}
	timings, err := s.engine.Run(sched)
	if err != nil {
		return search.Outcome{}, metrics.KeepUp{}, err
	}
	base := time.Unix(1_000_000, 0)
	recs := make([]load.RequestResult, len(timings))
	var ttfts []float64
	thr := time.Duration(s.thresholdMs * float64(time.Millisecond))
	var failAt []time.Duration
	for i, r := range timings {
		recs[i] = load.RequestResult{Index: i, Warmup: i < s.warmups, Due: base.Add(r.Start), Dispatched: base.Add(r.Start),
			Sent: base.Add(r.Start), FirstContent: base.Add(r.FirstToken), LastContent: base.Add(r.End), Done: base.Add(r.End),
			HTTPStatus: 200, CompletionTokens: 1}
		if i >= s.warmups {
			ttfts = append(ttfts, float64(r.TTFT())/float64(time.Millisecond))
			if r.TTFT() >= thr {
				failAt = append(failAt, r.Start+thr)
			}
		}
	}
	keep := rateRule.KeptUp(recs)
	value := percentileOf(ttfts, 95)
	o := search.Outcome{Pass: value < s.thresholdMs && keep.Pass(), Value: value}

	end := timings[len(timings)-1].End
	for _, r := range timings {
		end = max(end, r.End)
	}
	stop := end
	if kind == search.Probe {
		rank := float64(s.measured-1) * 95 / 100
		if need := s.measured - int(math.Floor(rank)); len(failAt) >= need {
			slices.Sort(failAt)
			stop = min(stop, failAt[need-1])
		}
		// The completion guard is certain to fail once even all remaining requests finishing
		// at once cannot lift the rate to (1 − ε) × offered.
		var firstDone time.Duration = -1
		for _, r := range timings[s.warmups:] {
			if firstDone < 0 || r.End < firstDone {
				firstDone = r.End
			}
		}
		offered := metrics.OfferedRate(recs)
		deadline := firstDone + time.Duration(float64(s.measured-1)/((1-rateRule.Epsilon)*offered)*float64(time.Second))
		if deadline < end {
			stop = min(stop, deadline+1)
		}
		o.DecidedEarly = stop < end
		if o.DecidedEarly && o.Pass {
			return o, keep, fmt.Errorf("probe at %g decided a fail early but passed in full", rate)
		}
		if o.DecidedEarly {
			o.Pass = false
		}
	}
	for _, r := range timings {
		if r.Start < stop {
			o.Cost += (min(r.End, stop) - r.Start).Seconds()
		}
	}
	return o, keep, nil
}

func (s rateScenario) search(k int) (search.RateResult, error) {
	return search.RunRate(context.Background(), search.RateConfig{Ladder: s.ladder, ConfirmationTrials: k},
		func(_ context.Context, q search.RateRequest) (search.Outcome, error) {
			o, _, err := s.trialAt(q.Rate, q.Kind, q.Index)
			return o, err
		})
}

// grid is the exhaustive protocol over the same ladder: k full trials at every rate from the
// minimum up to the first rate with a failing trial. It returns that boundary's passing rate
// (0 when the minimum fails) and the request-seconds spent.
func (s rateScenario) grid(k int) (maxPassing, cost float64, err error) {
	for i := 1; i <= s.ladder.Rungs(); i++ {
		rate := s.ladder.Rate(i)
		failed := false
		for j := 1; j <= k; j++ {
			o, _, err := s.trialAt(rate, search.Confirmation, j)
			if err != nil {
				return 0, 0, err
			}
			cost += o.Cost
			failed = failed || !o.Pass
		}
		if failed {
			if i == 1 {
				return 0, cost, nil
			}
			return s.ladder.Rate(i - 1), cost, nil
		}
	}
	return s.ladder.Max, cost, nil
}

// rateScenarios draws n engines with capacities from 0.2 to 500 requests/s and ladders that
// put the capacity anywhere from 3 to 30 times the minimum and 2 to 10 times under the
// maximum. The objective, p95 TTFT under the service time, holds at every rate up to the
// capacity, so the capacity is the truth: slots / service time.
func rateScenarios(set uint64, n int, arrival load.Arrival, measuredPerSlot int) []rateScenario {
	r := rand.New(rand.NewPCG(2026, set))
	out := make([]rateScenario, n)
	for i := range out {
		slots := []int{1, 2, 4, 8, 16, 32, 64}[r.IntN(7)]
		service := time.Duration(50+r.IntN(4950)) * time.Millisecond
		eng := simengine.FixedService{Slots: slots, Service: service, FirstToken: service / 10}
		c := eng.Capacity()
		out[i] = rateScenario{
			engine: eng, arrival: arrival, warmups: max(8, slots), measured: max(64, measuredPerSlot*slots),
			thresholdMs: float64(service) / float64(time.Millisecond),
			ladder:      search.Ladder{Min: c / (3 + 27*r.Float64()), Max: c * (2 + 8*r.Float64()), Tolerance: 0.05},
			seed:        uint64(set)<<32 | uint64(i),
		}
	}
	return out
}
