package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var ttftP95 = results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 10000}

// TestDeciderHandWorked feeds values one by one and checks the decision after each,
// against ranks worked out by hand.
func TestDeciderHandWorked(t *testing.T) {
	t.Parallel()
	inclusive := ttftP95
	inclusive.Comparison = results.LessThanOrEqual
	median := results.SLO{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 100}
	tests := []struct {
		name   string
		slo    results.SLO
		n      int
		values []float64
		want   []Decision // after each value
	}{
		{
			// p95 over 64: rank h = 59.85, so sorted positions 59 and 60 decide. With
			// unknowns at 0, position 59 reaches the threshold when 64 − 59 = 5 values do.
			// Four at exactly 10 s give 0.15·0 + 0.85·10000 = 8500 at best: undecided.
			name: "p95/64: the fifth value at the threshold decides a fail", slo: ttftP95, n: 64,
			values: []float64{10000, 10000, 10000, 10000, 10000},
			want:   []Decision{Undecided, Undecided, Undecided, Undecided, DecidedFail},
		},
		{
			name: "p95/64: values below the threshold never decide before the end", slo: ttftP95, n: 64,
			values: []float64{9999, 9999, 9999, 9999, 9999, 9999},
			want:   []Decision{Undecided, Undecided, Undecided, Undecided, Undecided, Undecided},
		},
		{
			// Four values of 100 s: position 60 alone gives at least 0.85·100000 = 85000.
			name: "p95/64: interpolation decides with four huge values", slo: ttftP95, n: 64,
			values: []float64{100000, 100000, 100000, 100000},
			want:   []Decision{Undecided, Undecided, Undecided, DecidedFail},
		},
		{
			// 0.85·11000 = 9350 < 10000 with four; the fifth makes position 59 ≥ 10000.
			name: "p95/64: four slightly-over values are not enough", slo: ttftP95, n: 64,
			values: []float64{11000, 11000, 11000, 11000, 11000},
			want:   []Decision{Undecided, Undecided, Undecided, Undecided, DecidedFail},
		},
		{
			// ≤ comparison: values equal to the threshold never fail it; just over does.
			name: "p95/64 ≤: values at the threshold never fail it", slo: inclusive, n: 64,
			// Then four just over: position 59 is 10000 and 60 is over, so the interpolation
			// between them is over too.
			values: []float64{10000, 10000, 10000, 10000, 10000, 10000.001, 10000.001, 10000.001, 10000.001},
			want:   []Decision{Undecided, Undecided, Undecided, Undecided, Undecided, Undecided, Undecided, Undecided, DecidedFail},
		},
		{
			// p50 over 5: integer rank h = 2, no interpolation: 5 − 2 = 3 values decide.
			name: "p50/5 integer rank: the third value at the threshold", slo: median, n: 5,
			values: []float64{100, 500, 100},
			want:   []Decision{Undecided, Undecided, DecidedFail},
		},
		{
			// p50 over 4: h = 1.5 between positions 1 and 2. Two values of 300 (positions
			// 2, 3) give at least 0.5·0 + 0.5·300 = 150 ≥ 100: a fail with only two, where
			// the counting rule (4 − 1 = 3 values) would wait for a third.
			name: "p50/4: interpolation with two large values", slo: median, n: 4,
			values: []float64{300, 300},
			want:   []Decision{Undecided, DecidedFail},
		},
		{
			// ... but two of 150 give at least 75: open.
			name: "p50/4: two moderate values", slo: median, n: 4,
			values: []float64{150, 150, 150},
			want:   []Decision{Undecided, Undecided, DecidedFail},
		},
		{
			// p100: the maximum. One value over decides at once.
			name: "p100: any value over decides", slo: results.SLO{Metric: results.MetricTTFT, Percentile: 100, ThresholdMs: 100}, n: 10,
			values: []float64{50, 100},
			want:   []Decision{Undecided, DecidedFail},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecider(tc.slo, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range tc.values {
				if got := d.Observe(i, v); got != tc.want[i] {
					t.Fatalf("after value %d (%v): %v, want %v", i+1, v, got, tc.want[i])
				}
			}
		})
	}
}

// record makes a successful measured request with the given TTFT and latency in ms.
func record(index int, ttft, latency float64, osl int) load.RequestResult {
	sent := t0.Add(time.Duration(index) * time.Millisecond)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return load.RequestResult{
		Index: index, Prompt: string(rune(index)), Sent: sent,
		FirstContent: sent.Add(ms(ttft)), LastContent: sent.Add(ms(latency)), Done: sent.Add(ms(latency)),
		UsageReported: true, CompletionTokens: osl, HTTPStatus: 200, FinishReason: "length",
	}
}

func TestDeciderCompletion(t *testing.T) {
	t.Parallel()
	slo := results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 100}
	t.Run("pass only once every request completed", func(t *testing.T) {
		d, _ := NewDecider(slo, 3)
		for i := range 3 {
			if got := d.Observe(i, 10); got != Undecided {
				t.Fatalf("TTFT %d: %v; a pass must wait for completions", i, got)
			}
		}
		d.Complete(record(0, 10, 50, 5))
		d.Complete(record(1, 10, 50, 5))
		if got := d.Complete(record(2, 10, 50, 5)); got != DecidedPass {
			t.Fatalf("all complete: %v", got)
		}
	})
	t.Run("a failed request fails at once", func(t *testing.T) {
		d, _ := NewDecider(slo, 64)
		if got := d.Complete(load.RequestResult{Index: 3, HTTPStatus: 500, Err: "HTTP 500"}); got != DecidedFail {
			t.Fatalf("%v", got)
		}
		if got := d.Observe(4, 1); got != DecidedFail {
			t.Fatalf("a fail is final: %v", got)
		}
	})
	t.Run("warmups and cancelled requests never complete the trial", func(t *testing.T) {
		d, _ := NewDecider(slo, 2)
		w := record(0, 10, 20, 5)
		w.Warmup = true
		d.Complete(w)
		d.Complete(record(1, 10, 20, 5))
		c := record(2, 10, 20, 5)
		c.Cancelled = true
		if got := d.Complete(c); got != Undecided {
			t.Fatalf("%v", got)
		}
	})
	t.Run("ITL of a one-token request leaves the population", func(t *testing.T) {
		d, _ := NewDecider(results.SLO{Metric: results.MetricITL, Percentile: 50, ThresholdMs: 100}, 2)
		d.Complete(record(0, 10, 10, 1))
		// (1010 − 10)/(11 − 1) = 100 ms: not strictly below 100.
		if got := d.Complete(record(1, 10, 1010, 11)); got != DecidedFail {
			t.Fatalf("%v", got)
		}
	})
	t.Run("no request with a value fails", func(t *testing.T) {
		d, _ := NewDecider(results.SLO{Metric: results.MetricITL, Percentile: 50, ThresholdMs: 100}, 1)
		if got := d.Complete(record(0, 10, 10, 1)); got != DecidedFail {
			t.Fatalf("%v", got)
		}
	})
	t.Run("pending lower bounds decide before the values arrive", func(t *testing.T) {
		d, _ := NewDecider(ttftP95, 64)
		// 0.85·11000 = 9350 at least: open.
		if got := d.WithPending(11000, 11000, 11000, 11000); got != Undecided {
			t.Fatalf("four waiting: %v", got)
		}
		if got := d.WithPending(11000, 11000, 11000, 11000, 10000); got != DecidedFail {
			t.Fatalf("five waiting ≥ 10 s: %v", got)
		}
		if d.Decision() != Undecided {
			t.Fatal("WithPending must not record anything")
		}
	})
}

func TestNewDeciderRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		slo  results.SLO
		n    int
	}{
		{"no requests", ttftP95, 0},
		{"bad metric", results.SLO{Metric: "ttft", Percentile: 95, ThresholdMs: 1}, 1},
		{"percentile 0", results.SLO{Metric: results.MetricTTFT, Percentile: 0, ThresholdMs: 1}, 1},
		{"percentile over 100", results.SLO{Metric: results.MetricTTFT, Percentile: 100.1, ThresholdMs: 1}, 1},
		{"threshold 0", results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 0}, 1},
		{"bad comparison", results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 1, Comparison: "<"}, 1},
	} {
		if _, err := NewDecider(tc.slo, tc.n); err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
}

// TestDeciderRandomized checks, for random trials and every prefix of their values, that
// the decision agrees with the full percentile for every completion: a decided fail fails
// whatever the rest are, and the percentile-level bounds are tight (a completion at the
// bound reaches them), i.e. the decision comes exactly as early as it can.
func TestDeciderRandomized(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	percentiles := []float64{50, 90, 95, 99, 100, 1, 37.5}
	for trial := range 800 {
		n := 1 + r.IntN(80)
		slo := results.SLO{Metric: results.MetricTTFT, Percentile: percentiles[r.IntN(len(percentiles))], ThresholdMs: float64(5 + r.IntN(10))}
		if trial%7 == 0 {
			slo.Percentile = 0.1 + r.Float64()*99.9
		}
		if r.IntN(2) == 0 {
			slo.Comparison = results.LessThanOrEqual
		}
		// Small integers so values often equal the threshold, the case that breaks sloppy code.
		values := make([]float64, n)
		for i := range values {
			values[i] = float64(r.IntN(20))
			if r.IntN(10) == 0 {
				values[i] += r.Float64()
			}
		}
		d, _ := NewDecider(slo, n)
		for k := range n {
			got := d.Observe(k, values[k])
			known := values[:k+1]
			rest := n - k - 1
			// The full percentile with the unknowns at their extremes.
			low := mustPercentile(append(slices.Clone(known), make([]float64, rest)...), slo.Percentile)
			huge := slices.Clone(known)
			for range rest {
				huge = append(huge, 1e12)
			}
			high := mustPercentile(huge, slo.Percentile)
			certainFail := !slo.Meets(low)
			if (got == DecidedFail) != certainFail {
				t.Fatalf("trial %d %+v n=%d after %v: decision %v, but with the rest at 0 the percentile is %v", trial, slo, n, known, got, low)
			}
			_, hi := d.Bounds()
			if slo.Meets(hi) != slo.Meets(high) {
				t.Fatalf("trial %d %+v n=%d after %v: upper bound %v vs full percentile with huge rest %v", trial, slo, n, known, hi, high)
			}
			// Every completion agrees with a decided fail, and with a certain pass bound.
			for range 3 {
				full := slices.Clone(known)
				for range rest {
					full = append(full, float64(r.IntN(40))*r.Float64())
				}
				p := mustPercentile(full, slo.Percentile)
				if got == DecidedFail && slo.Meets(p) {
					t.Fatalf("trial %d %+v: decided fail after %v, but completion %v passes with %v", trial, slo, known, full, p)
				}
				if slo.Meets(hi) && !slo.Meets(p) {
					t.Fatalf("trial %d %+v: certain pass after %v, but completion %v fails with %v", trial, slo, known, full, p)
				}
			}
		}
		// With everything known the decider's bounds are the percentile itself.
		if lo, hi := d.Bounds(); lo != hi || lo != mustPercentile(values, slo.Percentile) {
			t.Fatalf("trial %d: complete bounds %v %v, percentile %v", trial, lo, hi, mustPercentile(values, slo.Percentile))
		}
	}
}

// TestDeciderMatchesVerdict replays random trials event by event (first content, then
// completion, some requests failing) and checks every intermediate decision against the
// verdict of the complete records.
func TestDeciderMatchesVerdict(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	metrics := []string{results.MetricTTFT, results.MetricITL, results.MetricRequestLatency}
	for trial := range 1000 {
		n := 1 + r.IntN(70)
		slo := results.SLO{Metric: metrics[r.IntN(3)], Percentile: []float64{50, 95, 99}[r.IntN(3)], ThresholdMs: float64(20 + r.IntN(300))}
		records := make([]load.RequestResult, n)
		type event struct {
			at    time.Time
			index int
			first bool
		}
		var events []event
		for i := range records {
			ttft := float64(r.IntN(400))
			osl := 2 + r.IntN(20)
			rec := record(i, ttft, ttft+float64(r.IntN(40)*(osl-1)), osl)
			if r.IntN(150) == 0 {
				rec.Err = "stream reset"
			}
			records[i] = rec
			events = append(events, event{rec.FirstContent, i, true}, event{rec.Done.Add(time.Nanosecond), i, false})
		}
		slices.SortFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
		slo.Comparison = results.StrictlyLessThan
		want, err := Evaluate([]results.SLO{slo}, records)
		if err != nil {
			t.Fatal(err)
		}
		failed := slices.ContainsFunc(records, func(r load.RequestResult) bool { return r.Err != "" })
		if want.Pass != (!failed && slo.Meets(want.Results[0].Value)) {
			t.Fatalf("verdict %+v disagrees with its own value", want)
		}
		d, _ := NewDecider(slo, n)
		var got Decision
		for _, e := range events {
			switch {
			case e.first && slo.Metric == results.MetricTTFT:
				got = d.Observe(e.index, TTFTMs(records[e.index]))
			case !e.first:
				got = d.Complete(records[e.index])
			}
			if got == DecidedFail && want.Pass || got == DecidedPass && !want.Pass {
				t.Fatalf("trial %d %+v: decided %v early, verdict %+v", trial, slo, got, want)
			}
		}
		if got == Undecided || (got == DecidedPass) != want.Pass {
			t.Fatalf("trial %d: final decision %v, verdict %+v", trial, got, want)
		}
	}
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	slo := results.SLO{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 100}
	ok := []load.RequestResult{record(0, 50, 60, 5), record(1, 100, 120, 5), record(2, 150, 160, 5)}
	// p50 of [50 100 150] = 100: not strictly below 100, but ≤ 100.
	v, err := Evaluate([]results.SLO{slo}, ok)
	if err != nil || v.Pass || v.Results[0].Value != 100 || v.Results[0].Met {
		t.Errorf("strict: %+v %v", v, err)
	}
	slo.Comparison = results.LessThanOrEqual
	if v, err := Evaluate([]results.SLO{slo}, ok); err != nil || !v.Pass || !v.Results[0].Met || v.Closeness != 1 {
		t.Errorf("≤: %+v %v", v, err)
	}
	failed := append(slices.Clone(ok), load.RequestResult{Index: 3, HTTPStatus: 503, Err: "HTTP 503"})
	v, err = Evaluate([]results.SLO{slo}, failed)
	// The same successful requests pass (above): the failed request alone fails the trial.
	if err != nil || v.Pass || v.Results[0].Value != 100 {
		t.Errorf("with an error: %+v %v", v, err)
	}
	cancelled := slices.Clone(ok)
	cancelled[2].Cancelled = true
	cancelled[2].FirstContent = time.Time{}
	if _, err := Evaluate([]results.SLO{slo}, cancelled); err == nil {
		t.Error("a stopped trial whose outcome is open must not get a verdict")
	}
	if math.IsNaN(v.Results[0].Value) {
		t.Error("NaN value")
	}
}

// TestTrialDeciderObjectives checks several objectives at once: the trial fails as soon as
// one objective's fail is certain, passes only when every one holds, and goodput and
// higher-is-better metrics decide from the right side. Values are worked out by hand.
func TestTrialDeciderObjectives(t *testing.T) {
	t.Parallel()
	ttft := results.SLO{Metric: results.MetricTTFT, Percentile: 50, ThresholdMs: 100}
	// ITL of record(i, ttft, latency, osl) is (latency − ttft)/(osl − 1).
	itl := results.SLO{Metric: results.MetricITL, Percentile: 50, ThresholdMs: 10}
	perUser := results.SLO{Metric: results.MetricPerUserThroughput, Percentile: 50, ThresholdMs: 50, Comparison: results.GreaterThan}
	goodput := results.SLO{Metric: results.MetricGoodput, ThresholdMs: 75, Comparison: results.GreaterThanOrEqual}
	t.Run("every objective met passes", func(t *testing.T) {
		d, err := NewTrialDecider([]results.SLO{ttft, itl}, 2)
		if err != nil {
			t.Fatal(err)
		}
		d.Complete(record(0, 50, 95, 10))                                  // ITL 5
		if got := d.Complete(record(1, 60, 105, 10)); got != DecidedPass { // ITL 5
			t.Fatalf("%v", got)
		}
	})
	t.Run("one objective missed fails", func(t *testing.T) {
		d, _ := NewTrialDecider([]results.SLO{ttft, itl}, 2)
		d.Complete(record(0, 50, 275, 10)) // ITL 25
		// p50 over 2 with one value 25 and one unknown ≥ 0: at least 12.5 ≥ 10, certain.
		if got := d.Decision(); got != DecidedFail {
			t.Fatalf("%v", got)
		}
	})
	t.Run("per-user throughput fails from below", func(t *testing.T) {
		d, _ := NewTrialDecider([]results.SLO{perUser}, 3)
		// ITL 40 ms is 25 tokens/s; two of three at 25 make p50 at most 25, not > 50.
		d.Complete(record(0, 10, 370, 10))
		if got := d.Complete(record(1, 10, 370, 10)); got != DecidedFail {
			t.Fatalf("%v", got)
		}
	})
	t.Run("per-user throughput passes", func(t *testing.T) {
		d, _ := NewTrialDecider([]results.SLO{perUser}, 2)
		d.Complete(record(0, 10, 100, 10))                                 // ITL 10: 100 tokens/s
		if got := d.Complete(record(1, 10, 100, 10)); got != DecidedPass { // p50 100 > 50
			t.Fatalf("%v", got)
		}
	})
	t.Run("goodput counts requests meeting every other objective", func(t *testing.T) {
		d, _ := NewTrialDecider([]results.SLO{ttft, goodput}, 4)
		// 75 % of 4 is 3 good requests. One bad (TTFT 200 ≥ 100) leaves at most 75 %: open.
		d.Complete(record(0, 200, 210, 5))
		if got := d.Decision(); got != Undecided {
			t.Fatalf("one bad: %v", got)
		}
		// A second bad caps goodput at 50 % < 75 %: certain fail, though p50 TTFT is open.
		if got := d.Complete(record(1, 150, 160, 5)); got != DecidedFail {
			t.Fatalf("two bad: %v", got)
		}
	})
	t.Run("goodput from waiting requests", func(t *testing.T) {
		d, _ := NewTrialDecider([]results.SLO{{Metric: results.MetricTTFT, Percentile: 99, ThresholdMs: 100000}, goodput}, 4)
		// Two requests waiting 150 ms for their first token are not yet bad against a
		// 100 s TTFT threshold; against 100 ms they are.
		now := t0.Add(150 * time.Millisecond)
		wait := []load.InFlight{{Index: 0, Sent: t0}, {Index: 1, Sent: t0}}
		if got := d.WithPending(now, wait); got != Undecided {
			t.Fatalf("%v", got)
		}
		d2, _ := NewTrialDecider([]results.SLO{{Metric: results.MetricTTFT, Percentile: 99, ThresholdMs: 100}, goodput}, 4)
		// Two of four certainly bad: goodput at most 50 % < 75 %.
		if got := d2.WithPending(now, wait); got != DecidedFail {
			t.Fatalf("%v", got)
		}
	})
	t.Run("verdict reports every objective and what was missed", func(t *testing.T) {
		records := []load.RequestResult{record(0, 50, 95, 10), record(1, 150, 195, 10), record(2, 60, 105, 10), record(3, 70, 115, 10)}
		v, err := Evaluate([]results.SLO{ttft, itl, goodput}, records)
		if err != nil {
			t.Fatal(err)
		}
		// TTFT [50 150 60 70]: p50 = 65 < 100; ITL 5 each; good: 3 of 4 = 75 % ≥ 75.
		want := []results.SLOResult{
			{Metric: results.MetricTTFT, Percentile: 50, Value: 65, Met: true},
			{Metric: results.MetricITL, Percentile: 50, Value: 5, Met: true},
			{Metric: results.MetricGoodput, Value: 75, Met: true},
		}
		if !v.Pass || !slices.Equal(v.Results, want) || v.GoodputPercent != 75 {
			t.Fatalf("verdict %+v", v)
		}
		// Closeness: 65/100, 5/10, 75/75: the goodput one is at its threshold.
		if v.Closeness != 1 {
			t.Fatalf("closeness %v, want 1", v.Closeness)
		}
		strict := goodput
		strict.Comparison = results.GreaterThan
		v, _ = Evaluate([]results.SLO{ttft, itl, strict}, records)
		if v.Pass || !v.Results[0].Met || !v.Results[1].Met || v.Results[2].Met {
			t.Fatalf("75 %% is not > 75 %%: %+v", v)
		}
	})
}
