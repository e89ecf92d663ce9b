package results

import (
	"strings"
	"testing"
)

// A rate search's headline comes from its trials' rates and guards, and the Markdown
// report tells its capacity in requests per second, at the search's edges too.
func TestRateHeadlineAndMarkdown(t *testing.T) {
	t.Parallel()
	slos := []SLO{{Metric: MetricTTFT, Percentile: 95, ThresholdMs: 100}}
	trial := func(rate float64, p95 float64, missed ...string) Trial {
		return Trial{Kind: "confirmation", Trial: 1, RequestRate: rate, TTFTMs: Stats{P95: p95},
			SLOs:     []SLOResult{{Metric: MetricTTFT, Percentile: 95, Value: p95, Met: p95 < 100}},
			OpenLoop: &OpenLoopTrial{Arrival: "poisson", KeptUp: len(missed) == 0, Missed: missed}}
	}
	// 4/s passes; 5/s meets the objective but its backlog grew: the guard fails it.
	w := Workload{Label: "w", AllTrials: []Trial{trial(4, 50), trial(5, 60, "backlog")}}
	h, err := DeriveHeadline(slos, w)
	if err != nil {
		t.Fatal(err)
	}
	if h.MaximumPassingRequestRate == nil || *h.MaximumPassingRequestRate != 4 || h.FirstFailingRequestRate == nil || *h.FirstFailingRequestRate != 5 ||
		h.MaximumPassingConcurrency != nil || h.Bound != BoundNone || strings.Join(h.BoundBy, ",") != "backlog" ||
		strings.Join(h.Verdicts, ",") != "pass,fail" {
		t.Fatalf("headline %+v", h)
	}
	h.Apply(&w)
	if len(CheckHeadline(slos, 0, w)) != 0 {
		t.Errorf("contradictions in a derived headline: %v", CheckHeadline(slos, 0, w))
	}
	if got := capacityText(w, "none"); got != "4 requests/s" {
		t.Errorf("capacity %q", got)
	}
	// Every rate passed: the edge of the search, told as such.
	w = Workload{Label: "w", AllTrials: []Trial{trial(4, 50)}}
	h, _ = DeriveHeadline(slos, w)
	h.Apply(&w)
	if h.Bound != BoundCeiling || capacityText(w, "none") != "≥ 4 requests/s" {
		t.Errorf("ceiling: %+v, %q", h, capacityText(w, "none"))
	}
	w = Workload{Label: "w", AllTrials: []Trial{trial(4, 500)}}
	h, _ = DeriveHeadline(slos, w)
	h.Apply(&w)
	if h.Bound != BoundFloor || capacityText(w, "none") != "none, below 4 requests/s" {
		t.Errorf("floor: %+v, %q", h, capacityText(w, "none"))
	}
}
