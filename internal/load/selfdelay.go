package load

import (
	"slices"
	"time"
)

// SelfDelay is what the client added to a trial's measured requests itself, from their
// records: how late it sent them once it was ready to (RequestResult.SendDelay), and how far
// behind it read what the socket already held (RequestResult.ReadLagMax). A client that
// keeps up adds well under a millisecond to either; one short of CPU adds its stalls to
// every latency it measures.
type SelfDelay struct {
	// Sends counts the measured requests whose send delay is known; SendMean, SendP99 and
	// SendMax are its mean and percentiles over them.
	Sends                      int
	SendMean, SendP99, SendMax time.Duration
	// Reads counts the measured requests whose reads were timed; ReadMean, ReadP99 and
	// ReadMax are the mean and percentiles over them of each request's worst read lag.
	Reads                      int
	ReadMean, ReadP99, ReadMax time.Duration
}

// MeasureSelfDelay reads the client's own delays off a trial's measured requests (warmups
// are skipped; cancelled requests count: their sends and reads were the client's too).
// Percentiles interpolate between closest ranks, as every percentile here does.
func MeasureSelfDelay(requests []RequestResult) SelfDelay {
	var d SelfDelay
	var sends, reads []time.Duration
	for _, r := range requests {
		if r.Warmup {
			continue
		}
		if s, ok := r.SendDelay(); ok {
			sends = append(sends, s)
		}
		if r.ReadsTimed > 0 {
			reads = append(reads, r.ReadLagMax)
		}
	}
	d.Sends, d.SendMean, d.SendP99, d.SendMax = spread(sends)
	d.Reads, d.ReadMean, d.ReadP99, d.ReadMax = spread(reads)
	return d
}

// spread is the count, mean, 99th percentile and maximum of ds (sorted in place).
func spread(ds []time.Duration) (n int, mean, p99, most time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return len(ds), sum / time.Duration(len(ds)), durationPercentile(ds, 99), ds[len(ds)-1]
}
