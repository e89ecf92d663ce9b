package results

import (
	"bytes"
	"math"
	"strconv"
)

// Stats summarises one metric over a trial's requests: mean, extremes, population standard
// deviation and percentiles (numpy's linear interpolation), as AIPerf reports them.
type Stats struct {
	Avg, Min, Max, Std                        float64
	P1, P5, P10, P25, P50, P75, P90, P95, P99 float64

	// has marks the statistics a document read from carried, so that older documents
	// (the reference has only p50/p95/p99, or avg/p50/p95) are written back as they were;
	// zero means every statistic, as this provider writes them.
	has statSet
}

type statSet uint16

// StatKeys are the statistic keys of every metric object, in the order they are written.
var StatKeys = []string{"avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}

// statPercentiles are the percentiles Stats records, in StatKeys order after the first four.
var statPercentiles = []float64{1, 5, 10, 25, 50, 75, 90, 95, 99}

func (s *Stats) field(i int) *float64 {
	return [...]*float64{&s.Avg, &s.Min, &s.Max, &s.Std, &s.P1, &s.P5, &s.P10, &s.P25, &s.P50, &s.P75, &s.P90, &s.P95, &s.P99}[i]
}

// Has reports whether the statistic with the given key is recorded.
func (s Stats) Has(key string) bool {
	for i, k := range StatKeys {
		if k == key {
			return s.has == 0 || s.has&(1<<i) != 0
		}
	}
	return false
}

// Percentile returns the recorded q-th percentile; ok is false when q is not one Stats
// records or the document did not carry it.
func (s Stats) Percentile(q float64) (v float64, ok bool) {
	for i, p := range statPercentiles {
		if p == q && s.Has(StatKeys[4+i]) {
			return *s.field(4 + i), true
		}
	}
	return 0, false
}

// MarshalJSON writes the recorded statistics in StatKeys order, unrounded.
func (s Stats) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i, k := range StatKeys {
		if s.has != 0 && s.has&(1<<i) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		v := *s.field(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0 // JSON has no NaN; a statistic that cannot be computed is written as 0
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
