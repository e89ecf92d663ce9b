package compare

import (
	"math"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/splitmix"
)

// bootstrapVar is the variance of x (ln of the q-th percentile, negated where higher is
// better) over resamples of one trial's per-request values, drawn with replacement by a
// seeded generator so the same records always give the same estimate. For a per-request
// metric without a percentile (q = 0) the mean is resampled.
func bootstrapVar(values []float64, q float64, higher bool, resamples int, seed uint64) float64 {
	src := splitmix.New(seed)
	n := len(values)
	buf := make([]float64, n)
	xs := make([]float64, 0, resamples)
	for range resamples {
		for i := range buf {
			buf[i] = values[src.Uint64()%uint64(n)]
		}
		var v float64
		if q > 0 {
			slices.Sort(buf)
			v, _ = metrics.Percentile(buf, q)
		} else {
			for _, b := range buf {
				v += b
			}
			v /= float64(n)
		}
		if x, ok := transform(v, higher); ok {
			xs = append(xs, x)
		}
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// tQuantile is the p-quantile of Student's t with df degrees of freedom (the normal's for
// infinite df), found by bisection on the CDF.
func tQuantile(p, df float64) float64 {
	lo, hi := -1e3, 1e3
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCDF is Student's t distribution function.
func tCDF(t, df float64) float64 {
	if math.IsInf(df, 1) {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x)
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// regIncBeta is the regularised incomplete beta function I_x(a, b), by its continued fraction
// (Numerical Recipes, betacf).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		aa := fm * (b - fm) * x / ((qam + 2*fm) * (a + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + 2*fm) * (qap + 2*fm))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 3e-14 {
			break
		}
	}
	return h
}

// fQuantile is the p-quantile of the F distribution with d1 and d2 degrees of freedom, found
// by bisection on its CDF, I_{d1 x/(d1 x + d2)}(d1/2, d2/2).
func fQuantile(p, d1, d2 float64) float64 {
	lo, hi := 0.0, 1e6
	for range 200 {
		mid := (lo + hi) / 2
		if regIncBeta(d1/2, d2/2, d1*mid/(d1*mid+d2)) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
