package results

// Bound says whether a workload's capacity lies outside the concurrencies its search tried,
// so the reported numbers are a bound rather than the boundary.
type Bound string

const (
	// BoundNone means the boundary was found (or the capacity is zero: even one request failed).
	BoundNone Bound = ""
	// BoundCeiling means every level tried passed; the capacity is at least MaximumPassingConcurrency.
	BoundCeiling Bound = "ceiling"
	// BoundFloor means even the lowest level tried, above 1, failed; the capacity is below
	// FirstFailingConcurrency and may be anything from 0 up.
	BoundFloor Bound = "floor"
)

// SearchBound reads the bound from the boundary alone, so an archived document says it as
// well as a fresh run: no failure means the search stopped at its ceiling; no pass with the
// first failure above 1 means it started above the capacity. A first failure at 1 is a real
// answer (zero users), not a bound.
func (w Workload) SearchBound() Bound {
	if w.MaximumPassingRequestRate != nil || w.FirstFailingRequestRate != nil {
		// A search by rate has no "1 request" floor: any failure at its lowest rate tried
		// leaves the capacity below that rate.
		switch {
		case w.FirstFailingRequestRate == nil:
			return BoundCeiling
		case w.MaximumPassingRequestRate == nil:
			return BoundFloor
		}
		return BoundNone
	}
	if w.MaximumPassingUsers != nil || w.FirstFailingUsers != nil {
		// Users count like concurrency: a first failure at 1 user is a real answer.
		switch {
		case w.FirstFailingUsers == nil:
			return BoundCeiling
		case w.MaximumPassingUsers == nil && *w.FirstFailingUsers > 1:
			return BoundFloor
		}
		return BoundNone
	}
	switch {
	case w.MaximumPassingConcurrency != nil && w.FirstFailingConcurrency == nil:
		return BoundCeiling
	case w.MaximumPassingConcurrency == nil && w.FirstFailingConcurrency != nil && *w.FirstFailingConcurrency > 1:
		return BoundFloor
	}
	return BoundNone
}
