package capacity

// Measuring against a baseline: after a workload's search, the run measures the levels the
// comparison needs and adds trials one at a time while the verdict is open
// (compare.Measure, the sequential rule), each trial through the one trial pipeline. The
// comparison the provider reports is then compare.Compare(baseline, the document): the
// document records every trial added and at which look (for_comparison).

import (
	"context"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

// measureWorkload is one workload's result: its search, or the delivered result's when the
// configuration carries one (only the baseline changed), then its comparison with the
// baseline when there is one.
func (r *trialRunner) measureWorkload(ctx context.Context, doc *results.Document) (results.Workload, error) {
	s := r.s
	wr, ok := r.delivered()
	if !ok {
		var err error
		if wr, err = s.axis.measure(ctx, r); err != nil {
			return wr, err
		}
	}
	if s.cfg.Baseline == nil {
		return wr, nil
	}
	wr, _, err := compare.Measure(s.cfg.Baseline.Document, doc, wr,
		compare.Plan{ConfirmationTrials: s.cfg.ConfirmationTrials, Budget: s.cfg.ComparisonBudget},
		func(at float64, index int) (results.Trial, error) { return r.comparisonTrial(ctx, at, index) })
	if err != nil {
		return wr, err
	}
	// The trials added get their verdicts and join the noise check; the boundary stays the
	// search's (results.DeriveHeadline leaves them out of it).
	return wr, s.applyHeadline(&wr)
}

// delivered is the workload as the configuration's delivered result has it, without the
// trials an earlier comparison added; ok is false without one.
func (r *trialRunner) delivered() (results.Workload, bool) {
	d := r.s.cfg.Delivered
	if d == nil {
		return results.Workload{}, false
	}
	i := slices.IndexFunc(d.Workloads, func(w results.Workload) bool { return w.Label == r.w.Label })
	if i < 0 {
		return results.Workload{}, false
	}
	return WithoutComparison(&results.Document{SLOs: d.Objectives(), Workloads: []results.Workload{d.Workloads[i]}}).Workloads[0], true
}

// comparisonTrial is the comparison's trial number index at a level: reused when an earlier
// run of this configuration measured it (its journal, or the delivered result), else
// measured now and journaled.
func (r *trialRunner) comparisonTrial(ctx context.Context, level float64, index int) (results.Trial, error) {
	at := trialAt{Kind: search.Confirmation, Index: index, Level: int(level), Value: level, Comparison: true}
	req := search.Request{Concurrency: at.Level, Kind: search.Confirmation, Index: index}
	o, e, ok := r.reusedComparison(at)
	if !ok {
		var err error
		// A comparison cannot weigh a trial that measured its client: one client-bound
		// twice stops the run with the figures (runJudgeable).
		if o, err = r.runJudgeable(ctx, at); err != nil {
			return results.Trial{}, err
		}
		o.Request = req
		e = r.entry(o)
		e.Kind = kindComparison
	}
	r.finished(o, e)
	t := *o.Detail
	t.Kind, t.StoppedEarly = search.Confirmation.String(), false
	return t, nil
}

// reusedComparison finds the comparison trial at in the journal (an interrupted run of this
// configuration) or in the delivered result: full, without failed requests, and not one whose
// load generator was the bottleneck (which a comparison must never weigh: it is measured again).
func (r *trialRunner) reusedComparison(at trialAt) (outcome, JournalEntry, bool) {
	for _, e := range r.s.cfg.History {
		if e.Kind == kindComparison && e.Workload == r.w.Label && e.Concurrency == at.Level && e.Index == at.Index && !e.remeasured() && e.Metrics != nil {
			o := e.outcome()
			o.Kind, o.Resumed = search.Confirmation, true
			return o, e, true
		}
	}
	if d := r.s.cfg.Delivered; d != nil {
		for _, w := range d.Workloads {
			if w.Label != r.w.Label {
				continue
			}
			for _, t := range w.AllTrials {
				if t.ForComparison > 0 && max(t.Concurrency, t.Users) == at.Level && t.Trial == at.Index && t.Correctness.Errors == 0 && !t.ClientBound() {
					t.ForComparison = 0
					o := outcome{Request: search.Request{Concurrency: at.Level, Kind: search.Confirmation, Index: at.Index},
						Pass: t.Verdict == results.VerdictPass, Detail: &t, Resumed: true}
					e := r.entry(o)
					e.Kind = kindComparison
					return o, e, true
				}
			}
		}
	}
	return outcome{}, JournalEntry{}, false
}

// WithoutComparison is doc as its searches left it: without the trials a comparison added
// (for_comparison) and without aiperf.comparison_budget, its noise found again without them.
// What a benchmark reports when its baseline is removed; it sends nothing.
func WithoutComparison(doc *results.Document) *results.Document {
	out := *doc
	out.AIPerf.ComparisonBudget = 0
	out.Workloads = make([]results.Workload, len(doc.Workloads))
	for i, w := range doc.Workloads {
		w.AllTrials = slices.DeleteFunc(slices.Clone(w.AllTrials), func(t results.Trial) bool { return t.ForComparison > 0 })
		w.TrialDisagreements = results.Disagreements(doc.Objectives(), w)
		out.Workloads[i] = w
	}
	return &out
}
