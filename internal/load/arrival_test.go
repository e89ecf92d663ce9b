package load

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The gaps' mean is 1/rate for every pattern, and their coefficient of variation is
// 1/sqrt(shape) for gamma (Poisson: 1, constant: 0), which is what burstiness means.
func TestArrivalScheduleMoments(t *testing.T) {
	t.Parallel()
	const rate, n = 20.0, 40001
	for _, tc := range []struct {
		name   string
		a      Arrival
		wantCV float64
	}{
		{"constant", Arrival{Pattern: ArrivalConstant}, 0},
		{"poisson", Arrival{Pattern: ArrivalPoisson}, 1},
		{"gamma bursty", Arrival{Pattern: ArrivalGamma, Burstiness: 0.25}, 2},
		{"gamma one is poisson", Arrival{Pattern: ArrivalGamma, Burstiness: 1}, 1},
		{"gamma regular", Arrival{Pattern: ArrivalGamma, Burstiness: 4}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.a.Schedule(rate, n, 7)
			if err != nil {
				t.Fatal(err)
			}
			if s[0] != 0 {
				t.Fatalf("first send at %s, want 0", s[0])
			}
			var sum, sq float64
			for i := 1; i < n; i++ {
				g := (s[i] - s[i-1]).Seconds()
				if g < 0 {
					t.Fatalf("gap %d is negative: %g", i, g)
				}
				sum += g
				sq += g * g
			}
			m := sum / (n - 1)
			cv := math.Sqrt(sq/(n-1)-m*m) / m
			// 40 000 gaps: the mean within 2 %, the CV within 5 % (gamma 0.25 has heavy tails).
			if math.Abs(m*rate-1) > 0.02 {
				t.Errorf("mean gap %g s, want %g s", m, 1/rate)
			}
			if math.Abs(cv-tc.wantCV) > 0.05*math.Max(tc.wantCV, 0.02) {
				t.Errorf("coefficient of variation %.4f, want %.4f", cv, tc.wantCV)
			}
		})
	}
}

func TestArrivalScheduleConstantAndSeeded(t *testing.T) {
	t.Parallel()
	s, err := Arrival{Pattern: ArrivalConstant}.Schedule(3, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 333333333, 666666667, time.Second}
	for i := range want {
		if s[i] != want[i] {
			t.Fatalf("constant 3/s: %v, want %v", s, want)
		}
	}
	a := Arrival{Pattern: ArrivalGamma, Burstiness: 0.5}
	x, _ := a.Schedule(10, 50, 42)
	y, _ := a.Schedule(10, 50, 42)
	z, _ := a.Schedule(10, 50, 43)
	same, differ := true, false
	for i := range x {
		same = same && x[i] == y[i]
		differ = differ || x[i] != z[i]
	}
	if !same || !differ {
		t.Fatalf("a seed must fix the schedule and another seed change it: same=%v differ=%v", same, differ)
	}
	// Fixed forever (SplitMix64): the first Poisson gap of seed 1 at 1/s.
	p, _ := Arrival{Pattern: ArrivalPoisson}.Schedule(1, 2, 1)
	if p[1] != firstPoissonGapSeed1 {
		t.Fatalf("first Poisson gap of seed 1 is %d ns; the generator changed (was %d)", p[1], firstPoissonGapSeed1)
	}
}

// firstPoissonGapSeed1 pins the generator: -ln(u) with u = (SplitMix64(seed 1) >> 11 + 1) / 2^53,
// computed apart from this code (in Python).
const firstPoissonGapSeed1 = time.Duration(568169510)

func TestArrivalValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    Arrival
		rate float64
		want string
	}{
		{Arrival{Pattern: "uniform"}, 1, `pattern "uniform"`},
		{Arrival{Pattern: ArrivalGamma}, 1, "burstiness must be a positive"},
		{Arrival{Pattern: ArrivalGamma, Burstiness: math.Inf(1)}, 1, "burstiness must be a positive"},
		{Arrival{Pattern: ArrivalPoisson}, 0, "rate must be a positive"},
		{Arrival{Pattern: ArrivalPoisson}, math.NaN(), "rate must be a positive"},
	} {
		_, err := tc.a.Schedule(tc.rate, 3, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v at %g: error %v, want it to contain %q", tc.a, tc.rate, err, tc.want)
		}
	}
}
