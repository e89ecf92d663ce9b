package results

import (
	"slices"
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
	type level struct {
		conf, confPass int
		probe, probeOK bool
	}
	levels := map[float64]*level{}
	for _, ht := range trials {
		if !(ht.rate > 0) {
			continue
		}
		l := levels[ht.rate]
		if l == nil {
			l = &level{}
			levels[ht.rate] = l
		}
		pass := ht.verdict == VerdictPass
		if ht.probe {
			l.probe, l.probeOK = pass, true
			continue
		}
		l.conf++
		if pass {
			l.confPass++
		}
	}
	order := make([]float64, 0, len(levels))
	for r := range levels {
		order = append(order, r)
	}
	slices.Sort(order)
	belief := func(r float64) (pass, ok bool) {
		switch l := levels[r]; {
		case l.conf > 0:
			return l.confPass == l.conf, true
		case l.probeOK:
			return l.probe, true
		}
		return false, false
	}
	for _, r := range order {
		if pass, ok := belief(r); ok && !pass {
			h.FirstFailingRequestRate = ptrFloat(r)
			break
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		r := order[i]
		if h.FirstFailingRequestRate != nil && r >= *h.FirstFailingRequestRate {
			continue
		}
		if pass, ok := belief(r); ok && pass {
			h.MaximumPassingRequestRate = ptrFloat(r)
			break
		}
	}
	h.Bound = Workload{MaximumPassingRequestRate: h.MaximumPassingRequestRate, FirstFailingRequestRate: h.FirstFailingRequestRate}.SearchBound()
	ff := h.FirstFailingRequestRate
	if ff == nil {
		return
	}
	missed := make([]bool, len(objectives))
	errs := false
	var guards []string
	for _, ht := range trials {
		if ht.rate != *ff || ht.probe {
			continue
		}
		errs = errs || ht.trial.Correctness.Errors > 0
		for i, s := range objectives {
			if met, ok := s.Met(ht.trial); ok && !met {
				missed[i] = true
			}
		}
		if ol := ht.trial.OpenLoop; ol != nil {
			for _, g := range ol.Missed {
				if !slices.Contains(guards, g) {
					guards = append(guards, g)
				}
			}
		}
	}
	for i, s := range objectives {
		if missed[i] {
			h.BoundBy = append(h.BoundBy, s.Key())
		}
	}
	if errs {
		h.BoundBy = append(h.BoundBy, BoundByErrors)
	}
	for _, g := range []string{"completion_rate", "backlog"} {
		if slices.Contains(guards, g) {
			h.BoundBy = append(h.BoundBy, g)
		}
	}
}

func ptrFloat(f float64) *float64 { return &f }

func floatOrNull(f *float64) string {
	if f == nil {
		return "null"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}
