package load

import (
	"fmt"
	"math"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// Arrival patterns of an open-loop trial, named as vLLM, AIPerf and guidellm name them.
const (
	// ArrivalConstant sends one request every 1/rate seconds.
	ArrivalConstant = "constant"
	// ArrivalPoisson draws exponential gaps of mean 1/rate (gamma with shape 1).
	ArrivalPoisson = "poisson"
	// ArrivalGamma draws gamma gaps of shape Burstiness and scale 1/(rate·Burstiness): mean
	// 1/rate whatever the burstiness; below 1 burstier than Poisson, above 1 more regular.
	ArrivalGamma = "gamma"
)

// ArrivalPatterns lists the patterns Schedule accepts.
var ArrivalPatterns = []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma}

// Arrival is how an open-loop trial spaces its requests in time.
type Arrival struct {
	Pattern string // one of ArrivalPatterns
	// Burstiness is the gamma shape (ArrivalGamma only): vLLM's --burstiness. 1 is Poisson.
	Burstiness float64
}

// Validate reports a pattern Schedule would refuse.
func (a Arrival) Validate() error {
	switch a.Pattern {
	case ArrivalConstant, ArrivalPoisson:
		return nil
	case ArrivalGamma:
		if !(a.Burstiness > 0) || math.IsInf(a.Burstiness, 0) {
			return fmt.Errorf("arrival: gamma burstiness must be a positive number, got %g", a.Burstiness)
		}
		return nil
	}
	return fmt.Errorf("arrival: pattern %q is not one of %q", a.Pattern, ArrivalPatterns)
}

// Schedule returns when each of n requests is due, as offsets from the trial's start: the
// first at 0, then one gap after another, each gap drawn as the pattern says for rate requests
// per second (vLLM's get_request: constant 1/rate; gamma with shape = burstiness and
// scale = 1/(rate·burstiness), Poisson being shape 1). The draws come from a SplitMix64 stream
// seeded with seed, so a schedule is a pure function of its arguments, fixed forever.
func (a Arrival) Schedule(rate float64, n int, seed uint64) ([]time.Duration, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("arrival: rate must be a positive number of requests per second, got %g", rate)
	}
	if n < 0 {
		return nil, fmt.Errorf("arrival: %d requests", n)
	}
	shape := 1.0
	switch a.Pattern {
	case ArrivalGamma:
		shape = a.Burstiness
	}
	g := gammaSource{src: splitmix.New(seed)}
	out := make([]time.Duration, n)
	at := 0.0 // seconds
	for i := range out {
		if i > 0 {
			if a.Pattern == ArrivalConstant {
				at = float64(i) / rate // no accumulated rounding over long schedules
			} else {
				at += g.gamma(shape) / (rate * shape)
			}
		}
		out[i] = time.Duration(math.Round(at * float64(time.Second)))
	}
	return out, nil
}

// gammaSource draws gamma variates from a SplitMix64 stream with Marsaglia and Tsang's method
// (2000), their boost for shapes below 1, and Box-Muller normals: every step is written out
// here, so the draws do not change with the standard library's.
type gammaSource struct {
	src   splitmix.Source
	spare float64
	has   bool
}

// uniform returns a value in (0, 1].
func (g *gammaSource) uniform() float64 { return (float64(g.src.Uint64()>>11) + 1) / (1 << 53) }

func (g *gammaSource) normal() float64 {
	if g.has {
		g.has = false
		return g.spare
	}
	r := math.Sqrt(-2 * math.Log(g.uniform()))
	t := 2 * math.Pi * g.uniform()
	g.spare, g.has = r*math.Sin(t), true
	return r * math.Cos(t)
}

// gamma draws from Gamma(shape, 1).
func (g *gammaSource) gamma(shape float64) float64 {
	if shape == 1 {
		return -math.Log(g.uniform()) // exponential: exact and cheaper
	}
	if shape < 1 {
		// Gamma(a) = Gamma(a+1) · U^(1/a).
		return g.gamma(shape+1) * math.Pow(g.uniform(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := g.normal()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := g.uniform()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
