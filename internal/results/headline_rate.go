package results

import (
	"strconv"
)

// byRate reports whether w was searched by request rate (open loop): it states a rate
// boundary or its trials state their rates.
func (w Workload) byRate() bool {
	if w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil {
		return true
	}
	for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for _, t := range ts {
			if t.RequestRate > 0 {
				return true
			}
		}
	}
	return false
}

// deriveRate is DeriveHeadline's rule over request rates instead of concurrencies: a rate
// fails when any of its confirmation trials does not pass (by the objectives and, for
// open-loop trials, the guards that say the server kept up), a rate with none yet by its
// probe; the first failing rate is the lowest failing one and the maximum passing rate the
// highest passing one below it. bound_by adds, after the objectives and errors, each guard
// the first failing rate's confirmation trials missed.
func (h *Headline) deriveRate(objectives []SLO, trials []headlineTrial) {
	h.MaximumPassingRequestRate, h.FirstFailingRequestRate, h.ClientBound = boundary(trials, func(ht headlineTrial) (float64, bool) { return ht.rate, ht.rate > 0 })
	h.Bound = Workload{MaximumPassingRequestRate: h.MaximumPassingRequestRate, FirstFailingRequestRate: h.FirstFailingRequestRate}.SearchBound()
	if ff := h.FirstFailingRequestRate; ff != nil {
		h.BoundBy = boundBy(objectives, trials, func(ht headlineTrial) bool { return ht.rate == *ff })
	}
	if (Workload{AllTrials: allOf(trials)}).bySpeedup() {
		// A replay's rates are its trace's mean rate times the speedup, so the two boundaries
		// fall on the same trials.
		h.MaximumPassingSpeedup, h.FirstFailingSpeedup, _ = boundary(trials, func(ht headlineTrial) (float64, bool) { return ht.speedup, ht.speedup > 0 })
	}
}

// bySpeedup reports whether w replays a trace searched by speedup.
func (w Workload) bySpeedup() bool {
	if w.MaximumPassingSpeedup != nil || w.FirstFailingSpeedup != nil {
		return true
	}
	for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for _, t := range ts {
			if t.Speedup > 0 {
				return true
			}
		}
	}
	return false
}

func allOf(trials []headlineTrial) []Trial {
	out := make([]Trial, len(trials))
	for i, ht := range trials {
		out[i] = ht.trial
	}
	return out
}

func floatOrNull(f *float64) string {
	if f == nil {
		return "null"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}
