package search_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/search"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

// mooncakeTrace writes n requests in the Mooncake JSONL shape, burst at a time every
// burst × gapMs milliseconds (a burst of 1 is a constant gap), and parses it as the benchmark
// does.
func mooncakeTrace(t testing.TB, n, burst int, gapMs float64) *trace.Trace {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"timestamp\": %g, \"input_length\": 600, \"output_length\": 8, \"hash_ids\": [7, %d]}\n", float64(i/burst*burst)*gapMs, 100+i)
	}
	tr, err := trace.Parse(strings.NewReader(b.String()), trace.MooncakeBlockTokens)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The search over the speedup of a recorded trace finds how many times the recorded traffic
// an engine of known capacity holds: capacity / the trace's mean rate, within the tolerance.
// Each scenario replays a trace of 8 warmups and 256 measured requests (constant gaps, or
// bursts of 2 to 4 requests at one timestamp, as real traces have) against a FixedService of
// 2 to 16 slots; the objective is loose so that keeping up, not latency, bounds the speedup.
func TestSpeedupSearchFindsTraceCapacity(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2026, 21))
	var ratios []float64
	for i := range 24 {
		slots := []int{2, 4, 8, 16}[r.IntN(4)]
		service := time.Duration(100+r.IntN(1900)) * time.Millisecond
		eng := simengine.FixedService{Slots: slots, Service: service, FirstToken: service / 10}
		burst := 1
		if i%2 == 1 {
			burst = 2 + r.IntN(min(3, slots-1))
		}
		// The trace's own rate puts the capacity between 0.5 and 4 times it.
		truth := 0.5 + 3.5*r.Float64()
		gapMs := 1000 / (eng.Capacity() / truth)
		tr := mooncakeTrace(t, 264, burst, gapMs)
		want := eng.Capacity() / tr.Rate() // the speedup at which the trace's mean rate is the capacity
		s := rateScenario{engine: eng, warmups: 8, measured: 256, thresholdMs: 1000 * float64(service) / float64(time.Millisecond),
			ladder: search.Ladder{Min: 0.25, Max: 16, Tolerance: 0.05}, replay: tr}
		res, err := s.search(3)
		if err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
		if res.MaximumPassing == nil || res.FirstFailing == nil {
			t.Fatalf("scenario %d (%d slots, burst %d): no boundary: %+v", i, slots, burst, res)
		}
		ratio := *res.MaximumPassing / want
		ratios = append(ratios, ratio)
		if ratio < 1/1.05-1e-9 || ratio > 1.05 {
			t.Errorf("scenario %d (%d slots of %v, burst %d): maximum passing speedup %.4g, capacity at %.4g (%.3f ×)", i, slots, service, burst, *res.MaximumPassing, want, ratio)
		}
		if f := *res.FirstFailing / *res.MaximumPassing; f > 1.05+1e-9 {
			t.Errorf("scenario %d: boundary %g .. %g wider than the tolerance", i, *res.MaximumPassing, *res.FirstFailing)
		}
	}
	slices.Sort(ratios)
	t.Logf("trace replay: maximum passing speedup / truth: min %.3f, median %.3f, max %.3f over %d engines", ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], len(ratios))
}
