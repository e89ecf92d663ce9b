package results

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// BenchmarkDisagreementFalseAlarms prints how often the "confirmation trials disagree" warning
// fires for trials of one server at one level (identical distributions: every warning is a
// false alarm) and how often it fires when a burst of load slowed the last trial by half
// (×1.5: every warning is deserved), under the rule before issue 38 (each trial's 95 %
// interval read between its recorded percentiles, which for a p95 from few requests is
// [p80, max]) and under DefaultDisagreementRule. Per-request TTFT is lognormal with
// σ = DISAGREE_SIGMA (default 0.3); DISAGREE_LEVELS levels per cell (default 4000).
//
//	go test -run '^$' -bench BenchmarkDisagreementFalseAlarms -benchtime 1x ./internal/results/
func BenchmarkDisagreementFalseAlarms(b *testing.B) {
	sigma := envFloat("DISAGREE_SIGMA", 0.3)
	levels := int(envFloat("DISAGREE_LEVELS", 4000))
	slo := SLO{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 1e9, Comparison: StrictlyLessThan}
	for range b.N {
		fmt.Printf("p95 TTFT, lognormal σ = %.2g per request, %d levels per cell\n", sigma, levels)
		fmt.Printf("%-9s %-7s %-16s %-16s %-16s %-16s\n", "requests", "trials", "same: before", "same: now", "burst: before", "burst: now")
		for _, n := range []int{8, 16, 32, 64} {
			for _, k := range []int{2, 3} {
				src := rand.New(rand.NewPCG(uint64(n), uint64(k)))
				var sameOld, sameNew, burstOld, burstNew int
				for range levels {
					for _, burst := range []float64{1, 1.5} {
						w := Workload{Label: "w"}
						for i := range k {
							f := 1.0
							if i == k-1 {
								f = burst
							}
							vs := make([]float64, n)
							for j := range vs {
								vs[j] = 100 * f * math.Exp(sigma*src.NormFloat64())
							}
							w.AllTrials = append(w.AllTrials, Trial{Kind: "confirmation", Trial: i + 1, Concurrency: 4, TTFTMs: statsOf(vs),
								Correctness: Correctness{ProfilingRecords: n, HTTP200: n}})
						}
						old := len(disagreementsBefore(slo, w)) > 0
						now := len(DefaultDisagreementRule.Find([]SLO{slo}, w)) > 0
						if burst == 1 {
							sameOld, sameNew = sameOld+b2i(old), sameNew+b2i(now)
						} else {
							burstOld, burstNew = burstOld+b2i(old), burstNew+b2i(now)
						}
					}
				}
				pct := func(c int) string { return fmt.Sprintf("%.1f %%", 100*float64(c)/float64(levels)) }
				fmt.Printf("%-9d %-7d %-16s %-16s %-16s %-16s\n", n, k, pct(sameOld), pct(sameNew), pct(burstOld), pct(burstNew))
				if n == 8 && k == 2 {
					b.ReportMetric(100*float64(sameOld)/float64(levels), "%false-before-8x2")
					b.ReportMetric(100*float64(sameNew)/float64(levels), "%false-now-8x2")
				}
			}
		}
	}
}

// The rule checks itself against a case worked by hand: two trials of 64 requests whose
// spread is 20 % (CV 0.2: σ² = ln(1 + 0.2² · 64/63)), p95 100 and 140 ms. se per trial =
// σ · √(0.95 · 0.05 / 64) / φ(1.6449) = 0.1995 · 0.02724 / 0.10314 = 0.05269; the difference
// ln 1.4 = 0.3365 against 2.3263 · √2 · 0.05269 = 0.1733: beyond noise, and 40 % ≥ 10 %.
// At 104 ms the difference (0.0392) is within noise; two trials 8 % apart with no spread at
// all differ beyond noise but by less than the band.
func TestDisagreementRuleByHand(t *testing.T) {
	slo := SLO{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 1e9, Comparison: StrictlyLessThan}
	trial := func(i int, p95, cv float64) Trial {
		return Trial{Kind: "confirmation", Trial: i, Concurrency: 2, TTFTMs: Stats{Avg: p95 / 1.4, Std: cv * p95 / 1.4, P10: p95 / 2, P90: p95 / 1.1, P95: p95, Min: p95 / 3, Max: p95 * 1.1},
			Correctness: Correctness{ProfilingRecords: 64, HTTP200: 64}}
	}
	for _, c := range []struct {
		name     string
		a, b     Trial
		disagree bool
	}{
		{"40 % apart, 20 % spread", trial(1, 100, 0.2), trial(2, 140, 0.2), true},
		{"4 % apart, 20 % spread", trial(1, 100, 0.2), trial(2, 104, 0.2), false},
		{"8 % apart, no spread", trial(1, 100, 0), trial(2, 108, 0), false},
		{"12 % apart, no spread", trial(1, 100, 0), trial(2, 112, 0), true},
	} {
		got := DefaultDisagreementRule.Find([]SLO{slo}, Workload{Label: "w", AllTrials: []Trial{c.a, c.b}})
		if (len(got) > 0) != c.disagree {
			t.Errorf("%s: disagreements %+v, want disagree=%t", c.name, got, c.disagree)
		}
		if len(got) == 1 {
			d := got[0]
			if !(d.LowUpper < d.HighLower) || d.Low != c.a.TTFTMs.P95 || d.High != c.b.TTFTMs.P95 || d.Requests != 64 || d.Concurrency != 2 {
				t.Errorf("%s: %+v", c.name, d)
			}
		}
	}
	sigma := math.Sqrt(math.Log1p(0.04 * 64 / 63))
	if se := percentileSE(0.95, 64, sigma); math.Abs(se-0.05269) > 0.0001 {
		t.Errorf("se %.5f, want 0.05269", se)
	}
}

// disagreementsBefore is the rule documents were written with before issue 38, kept here as
// the benchmark's reference: a level's lowest and highest trial disagree when their 95 %
// intervals, p ± 1.96 · √(p(1 − p)/n) read between the recorded percentiles, do not overlap.
func disagreementsBefore(s SLO, w Workload) []int {
	type est struct{ v, lo, hi float64 }
	var ests []est
	for _, t := range w.AllTrials {
		st := t.TTFTMs
		n := t.Correctness.ProfilingRecords
		v, _ := st.Percentile(s.Percentile)
		p := s.Percentile / 100
		half := 1.96 * math.Sqrt(p*(1-p)/float64(n))
		lo, _ := st.quantile(p - half)
		hi, _ := st.quantile(p + half)
		ests = append(ests, est{v, lo, hi})
	}
	low := slices.MinFunc(ests, func(a, b est) int { return cmpFloat(a.v, b.v) })
	high := slices.MaxFunc(ests, func(a, b est) int { return cmpFloat(a.v, b.v) })
	if low.hi < high.lo {
		return []int{w.AllTrials[0].Concurrency}
	}
	return nil
}

// quantile reads the distribution's q-quantile (0 ≤ q ≤ 1, clipped) from the recorded
// statistics: linear between the recorded percentiles, min and max at the ends. ok is false
// when fewer than two of them are recorded around q.
func (s Stats) quantile(q float64) (float64, bool) {
	q = min(max(q, 0), 1)
	type knot struct{ q, v float64 }
	var knots []knot
	if s.Has("min") {
		knots = append(knots, knot{0, s.Min})
	}
	for i, p := range statPercentiles {
		if s.Has(StatKeys[4+i]) {
			knots = append(knots, knot{p / 100, *s.field(4 + i)})
		}
	}
	if s.Has("max") {
		knots = append(knots, knot{1, s.Max})
	}
	for i := 1; i < len(knots); i++ {
		a, b := knots[i-1], knots[i]
		if q >= a.q && q <= b.q {
			if b.q == a.q {
				return a.v, true
			}
			return a.v + (b.v-a.v)*(q-a.q)/(b.q-a.q), true
		}
	}
	return 0, false
}

// statsOf is every statistic of values as the benchmark records them (numpy's linear
// percentiles, population standard deviation); the metrics package's Stats, which results
// cannot import.
func statsOf(values []float64) Stats {
	s := slices.Clone(values)
	slices.Sort(s)
	p := func(q float64) float64 {
		r := q / 100 * float64(len(s)-1)
		i := int(r)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (s[i+1]-s[i])*(r-float64(i))
	}
	avg, ss := 0.0, 0.0
	for _, v := range s {
		avg += v
	}
	avg /= float64(len(s))
	for _, v := range s {
		ss += (v - avg) * (v - avg)
	}
	return Stats{Avg: avg, Min: s[0], Max: s[len(s)-1], Std: math.Sqrt(ss / float64(len(s))),
		P1: p(1), P5: p(5), P10: p(10), P25: p(25), P50: p(50), P75: p(75), P90: p(90), P95: p(95), P99: p(99)}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}
