package capacity

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/trace"
)

func TestEvenAndProportionalSplits(t *testing.T) {
	for _, tc := range []struct {
		n, parts int
		want     []int
	}{{7, 3, []int{3, 2, 2}}, {2, 3, []int{1, 1, 0}}, {64, 4, []int{16, 16, 16, 16}}, {0, 2, []int{0, 0}}} {
		if got := evenSplit(tc.n, tc.parts); !slices.Equal(got, tc.want) {
			t.Errorf("evenSplit(%d, %d) = %v, want %v", tc.n, tc.parts, got, tc.want)
		}
	}
	for _, tc := range []struct {
		total   int
		weights []int
		want    []int
	}{
		{64, []int{3, 2, 2}, []int{28, 18, 18}}, // 27.43, 18.29, 18.29: the largest remainder takes the last one
		{8, []int{1, 1, 0}, []int{4, 4, 0}},
		{5, []int{1, 1}, []int{3, 2}}, // a tie goes to the lower pod
		{3, []int{0, 0}, []int{0, 0}},
	} {
		if got := proportional(tc.total, tc.weights); !slices.Equal(got, tc.want) {
			t.Errorf("proportional(%d, %v) = %v, want %v", tc.total, tc.weights, got, tc.want)
		}
	}
	// Every pod that holds concurrency measures something, even a small one beside a big one.
	if got := atLeastOne(2, []int{10, 1}); !slices.Equal(got, []int{1, 1}) {
		t.Errorf("atLeastOne(2, [10 1]) = %v, want [1 1]", got)
	}
	if got := atLeastOne(64, []int{3, 2, 2}); !slices.Equal(got, []int{28, 18, 18}) {
		t.Errorf("atLeastOne(64, [3 2 2]) = %v, want the proportional split [28 18 18]", got)
	}
	if got := proportional(2, []int{10, 1}); !slices.Equal(got, []int{2, 0}) {
		t.Errorf("proportional(2, [10 1]) = %v: the case atLeastOne exists for", got)
	}
}

func texts(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", prefix, i)
	}
	return out
}

// A closed loop of concurrency 7 over 3 pods: 3, 2 and 2 in flight, the prompts in
// proportion, every prompt sent exactly once, each pod's in the trial's order.
func TestSplitClosed(t *testing.T) {
	spec := load.TrialSpec{Concurrency: 7, Warmup: texts("w", 5), Measured: texts("m", 64), OutputTokens: 8, MeasuredOutputTokens: make([]int, 64)}
	shares := splitClosed(spec, 3)
	var conc []int
	var warm, meas []string
	for _, s := range shares {
		c := s.Closed
		conc = append(conc, c.Concurrency)
		warm, meas = append(warm, c.Warmup...), append(meas, c.Measured...)
		if len(c.MeasuredOutputTokens) != len(c.Measured) || c.WarmupOutputTokens != nil {
			t.Errorf("per-prompt output tokens %d for %d prompts", len(c.MeasuredOutputTokens), len(c.Measured))
		}
	}
	if !slices.Equal(conc, []int{3, 2, 2}) || !slices.Equal(warm, spec.Warmup) || !slices.Equal(meas, spec.Measured) {
		t.Errorf("concurrency %v; warmups %v; measured in order: %v", conc, warm, slices.Equal(meas, spec.Measured))
	}
	if got := []int{len(shares[0].Closed.Measured), len(shares[1].Closed.Measured), len(shares[2].Closed.Measured)}; !slices.Equal(got, []int{28, 18, 18}) {
		t.Errorf("measured per pod %v, want 28 18 18 (27.43, 18.29, 18.29)", got)
	}
	// Concurrency 1 over 2 pods: the second pod sits the trial out.
	if s := splitClosed(load.TrialSpec{Concurrency: 1, Measured: texts("m", 8), OutputTokens: 8}, 2); s[0].Closed == nil || len(s[0].Closed.Measured) != 8 || !s[1].empty() {
		t.Errorf("concurrency 1 over 2 pods: %+v", s)
	}
}

// gaps is a schedule's intervals in seconds.
func gaps(s []time.Duration) []float64 {
	var out []float64
	for i := 1; i < len(s); i++ {
		out = append(out, (s[i] - s[i-1]).Seconds())
	}
	return out
}

func meanCV(xs []float64) (mean, cv float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(v/float64(len(xs))) / mean
}

// An open-loop rate split over pods: the union of the pods' arrivals is the trial's one
// schedule exactly, for every pattern. Poisson dealt by a seeded draw gives each pod a
// Poisson stream of its own at rate/N (exponential gaps: mean N/rate, coefficient of
// variation 1); constant dealt in turn gives each pod a constant stream at rate/N.
func TestSplitOpenKeepsTheArrivalProcess(t *testing.T) {
	const rate, n, pods = 40.0, 20000, 4
	for _, tc := range []struct {
		arrival  load.Arrival
		podCV    float64 // each pod's gaps
		podCVTol float64
	}{
		{load.Arrival{Pattern: load.ArrivalPoisson}, 1, 0.05},
		{load.Arrival{Pattern: load.ArrivalConstant}, 0, 1e-9},
		{load.Arrival{Pattern: load.ArrivalGamma, Burstiness: 0.25}, 0, -1}, // a thinned gamma stream: not gamma; only the union is
	} {
		t.Run(tc.arrival.Pattern, func(t *testing.T) {
			schedule, err := tc.arrival.Schedule(rate, n, 7)
			if err != nil {
				t.Fatal(err)
			}
			spec := load.OpenSpec{Schedule: schedule, Warmup: texts("w", 100), Measured: texts("m", n-100), OutputTokens: 8, MaxInFlight: 10}
			deal := dealArrivals(n, pods, tc.arrival.Pattern, 99)
			if again := dealArrivals(n, pods, tc.arrival.Pattern, 99); !slices.Equal(deal, again) {
				t.Fatal("the deal is not reproducible from its seed")
			}
			shares := splitOpen(spec, deal, pods)
			var union []time.Duration
			var caps, sent int
			for p, s := range shares {
				o := s.Open
				if len(o.Schedule) != len(o.Warmup)+len(o.Measured) || !slices.IsSorted(o.Schedule) {
					t.Fatalf("pod %d: %d arrivals for %d prompts, sorted %v", p, len(o.Schedule), len(o.Warmup)+len(o.Measured), slices.IsSorted(o.Schedule))
				}
				union = append(union, o.Schedule...)
				caps += o.MaxInFlight
				sent += len(o.Warmup) + len(o.Measured)
				mean, cv := meanCV(gaps(o.Schedule))
				if math.Abs(mean*rate/pods-1) > 0.05 {
					t.Errorf("pod %d: mean gap %.4f s, want %.4f (rate/N)", p, mean, pods/rate)
				}
				if tc.podCVTol >= 0 && math.Abs(cv-tc.podCV) > tc.podCVTol {
					t.Errorf("pod %d: gaps' coefficient of variation %.3f, want %.3f", p, cv, tc.podCV)
				}
			}
			slices.Sort(union)
			if !slices.Equal(union, schedule) || sent != n || caps != 10 {
				t.Errorf("the pods' arrivals together are not the trial's schedule (%d arrivals, %d sent, cap %d)", len(union), sent, caps)
			}
			// Independent streams: neighbouring gaps of one pod are uncorrelated for Poisson.
			if tc.arrival.Pattern == load.ArrivalPoisson {
				g := gaps(shares[0].Open.Schedule)
				mean, _ := meanCV(g)
				var cov, v float64
				for i := 1; i < len(g); i++ {
					cov += (g[i] - mean) * (g[i-1] - mean)
					v += (g[i] - mean) * (g[i] - mean)
				}
				if r := cov / v; math.Abs(r) > 0.05 {
					t.Errorf("pod 0's neighbouring gaps correlate %.3f", r)
				}
			}
		})
	}
}

// A replayed trace over pods: every session's requests on one pod, in their recorded order,
// the pods balanced by requests.
func TestDealSessionsKeepsSessionsWhole(t *testing.T) {
	var reqs []trace.Request
	sessions := []string{"a", "b", "a", "c", "", "a", "b", "d", "", "c", "a", ""}
	for i, s := range sessions {
		reqs = append(reqs, trace.Request{Line: i + 1, Offset: time.Duration(i) * time.Second, Session: s})
	}
	deal := dealSessions(reqs, 2)
	pod := map[string]int{}
	count := make([]int, 2)
	for i, s := range sessions {
		count[deal[i]]++
		if s == "" {
			continue
		}
		if p, ok := pod[s]; ok && p != deal[i] {
			t.Errorf("session %q split over pods %d and %d", s, p, deal[i])
		}
		pod[s] = deal[i]
	}
	// a (4) to pod 0, b (2), c (2) to pod 1, d (1) and the three lone requests to the lighter.
	if count[0] != 6 || count[1] != 6 {
		t.Errorf("requests per pod %v, want 6 and 6", count)
	}
	spec := load.OpenSpec{Schedule: make([]time.Duration, len(reqs)), Warmup: texts("w", 2), Measured: texts("m", len(reqs)-2), OutputTokens: 8}
	for i, r := range reqs {
		spec.Schedule[i] = r.Offset
	}
	for p, s := range splitOpen(spec, deal, 2) {
		if !slices.IsSorted(s.Open.Schedule) {
			t.Errorf("pod %d sends out of the recorded order: %v", p, s.Open.Schedule)
		}
	}
}

// A users trial over pods: users evenly, measured turns in proportion, each pod's pools its
// own and disjoint, every pod but the first with a seed of its own.
func TestSplitUsers(t *testing.T) {
	spec := load.UsersSpec{Users: 5, Measured: 12, WarmupConversations: 1, Seed: 42, Think: load.Think{Distribution: load.ThinkConstant}}
	turns := 3
	pools := usersPools{system: "sys", warm: texts("w", 5*1*turns), measured: texts("m", (12+5)*turns), turns: turns}
	shares := splitUsers(spec, pools, 8, 2)
	u0, u1 := shares[0].Users, shares[1].Users
	if u0.Users != 3 || u1.Users != 2 || u0.Measured+u1.Measured != 12 || u0.Seed != 42 || u1.Seed == 42 {
		t.Fatalf("users %d+%d, measured %d+%d, seeds %d %d", u0.Users, u1.Users, u0.Measured, u1.Measured, u0.Seed, u1.Seed)
	}
	if len(u0.Warm) != 9 || len(u1.Warm) != 6 || len(u0.MeasuredPool) != (u0.Measured+3)*turns || len(u1.MeasuredPool) != (u1.Measured+2)*turns {
		t.Errorf("pools: warm %d %d, measured %d %d", len(u0.Warm), len(u1.Warm), len(u0.MeasuredPool), len(u1.MeasuredPool))
	}
	if slices.ContainsFunc(u1.MeasuredPool, func(s string) bool { return slices.Contains(u0.MeasuredPool, s) }) {
		t.Error("two pods share a measured message")
	}
}
