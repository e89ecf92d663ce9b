package records

import (
	"fmt"
	"slices"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Verification is what the records of a result say about it.
type Verification struct {
	// Trials are the recomputed trials, in the document's order.
	Trials []Recomputed
	// Differences lists every recomputed value that differs from the document's, as
	// "workload file: path: reported vs recomputed".
	Differences []string
	// Contradictions are the headline values (boundary, bound, bound_by, verdicts) the
	// document states that its trials, recomputed from their records, do not give.
	Contradictions []results.Contradiction
}

// OK reports whether the records reproduce the document: every value and the headline.
func (v Verification) OK() bool { return len(v.Differences) == 0 && len(v.Contradictions) == 0 }

// Verify recomputes every trial of doc that names a records file under dir (Recompute:
// checksums first), then derives each workload's headline from its trials with the
// recomputed ones in their place (results.CheckHeadline), so a headline is checked against
// the requests themselves, not only against the trial metrics the document states. It is an
// error when the document names no records file at all.
func Verify(doc *results.Document, dir string) (Verification, error) {
	got, err := Recompute(doc, dir)
	if err != nil {
		return Verification{}, err
	}
	if len(got) == 0 {
		return Verification{}, fmt.Errorf("the document names no records file: it was written without records_directory, so there is nothing under %s to verify it by", dir)
	}
	return verify(doc, got), nil
}

// VerifyPresent is Verify over the records files that exist under dir: a missing one is left
// out (a comparison's baseline falls back on its trials' spread there), but one that is there
// must be the document's, by its SHA-256, its recomputed metrics and the headline, as Verify
// holds a current run's. No records file at all verifies nothing and is no error.
func VerifyPresent(doc *results.Document, dir string) (Verification, error) {
	got, err := recompute(doc, dir, true)
	if err != nil {
		return Verification{}, err
	}
	return verify(doc, got), nil
}

func verify(doc *results.Document, got []Recomputed) Verification {
	var v Verification
	v.Trials = got
	for _, r := range got {
		for _, d := range r.Differences {
			v.Differences = append(v.Differences, fmt.Sprintf("%s %s: %s", r.Workload, r.File, d))
		}
	}
	objectives := doc.Objectives()
	for i, w := range doc.Workloads {
		w.AllTrials = slices.Clone(w.AllTrials)
		for j, t := range w.AllTrials {
			for _, r := range got {
				if r.Workload == w.Label && r.File == t.RecordsFile && t.RecordsFile != "" {
					w.AllTrials[j] = r.Recomputed
				}
			}
		}
		v.Contradictions = append(v.Contradictions, results.CheckHeadline(objectives, i, w)...)
	}
	return v
}
