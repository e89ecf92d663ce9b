package results

// Side says on which side of the boundary a confirmation trial ran.
type Side string

// The two sides, as the document spells them.
const (
	SidePassing Side = "passing"
	SideFailing Side = "failing"
)

// SideTrial is one confirmation trial with the context every rendering needs.
type SideTrial struct {
	Side Side
	// Concurrency the trial ran at; 0 when neither the trial nor its side's boundary says.
	Concurrency int
	Trial       Trial
}

// Trials lists the workload's confirmation trials, passing side first. Reference documents
// carry no per-trial concurrency: a side's trials all ran at that side's boundary.
func (w Workload) Trials() []SideTrial {
	out := make([]SideTrial, 0, len(w.PassingTrials)+len(w.FailingTrials))
	add := func(side Side, boundary *int, ts []Trial) {
		for _, t := range ts {
			c := t.Concurrency
			if c == 0 && boundary != nil {
				c = *boundary
			}
			out = append(out, SideTrial{Side: side, Concurrency: c, Trial: t})
		}
	}
	add(SidePassing, w.MaximumPassingConcurrency, w.PassingTrials)
	add(SideFailing, w.FirstFailingConcurrency, w.FailingTrials)
	return out
}
