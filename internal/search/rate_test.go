package search_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/search"
)

func TestLadder(t *testing.T) {
	t.Parallel()
	l := search.Ladder{Min: 1, Max: 10, Tolerance: 0.25}
	// 1, 1.25, 1.5625, 1.953, 2.441, 3.052, 3.815, 4.768, 5.960, 7.451, 9.313, then 10.
	if l.Rungs() != 12 || l.Rate(1) != 1 || l.Rate(2) != 1.25 || l.Rate(12) != 10 || math.Abs(l.Rate(11)-9.31322574615479) > 1e-9 {
		t.Fatalf("rungs %d: %g %g %g %g", l.Rungs(), l.Rate(1), l.Rate(2), l.Rate(11), l.Rate(12))
	}
	for i := 1; i <= l.Rungs(); i++ {
		if got, ok := l.Rung(l.Rate(i)); !ok || got != i {
			t.Errorf("Rung(Rate(%d)) = %d, %v", i, got, ok)
		}
	}
	if _, ok := l.Rung(1.1); ok {
		t.Error("1.1 is not on the ladder")
	}
	// A whole number of steps needs no extra rung: 1 × 2^3 = 8.
	if n := (search.Ladder{Min: 1, Max: 8, Tolerance: 1 - 1e-12}).Rungs(); n != 4 {
		t.Errorf("1..8 doubling: %d rungs, want 4", n)
	}
	if n := (search.Ladder{Min: 3, Max: 3, Tolerance: 0.05}).Rungs(); n != 1 {
		t.Errorf("a single rate: %d rungs", n)
	}
	for _, bad := range []search.Ladder{{Min: 0, Max: 1, Tolerance: 0.05}, {Min: 2, Max: 1, Tolerance: 0.05},
		{Min: 1, Max: 2, Tolerance: 0}, {Min: 1, Max: 1e9, Tolerance: 1e-6}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// The rate search is the level search over the ladder's rungs: it reports rates, resumes
// from outcomes recorded by rate, and names the rate of a failed trial.
func TestRunRate(t *testing.T) {
	t.Parallel()
	const capacity = 7.0
	l := search.Ladder{Min: 1, Max: 100, Tolerance: 0.05}
	runs := 0
	run := func(_ context.Context, q search.RateRequest) (search.Outcome, error) {
		runs++
		return search.Outcome{Pass: q.Rate <= capacity, Cost: 1}, nil
	}
	res, err := search.RunRate(context.Background(), search.RateConfig{Ladder: l, ConfirmationTrials: 2}, run)
	if err != nil {
		t.Fatal(err)
	}
	// Rungs: 1.05^39 = 6.704 passes, 1.05^40 = 7.040 fails.
	if res.MaximumPassing == nil || math.Abs(*res.MaximumPassing-math.Pow(1.05, 39)) > 1e-9 ||
		res.FirstFailing == nil || math.Abs(*res.FirstFailing-math.Pow(1.05, 40)) > 1e-9 {
		t.Fatalf("boundary %v .. %v", res.MaximumPassing, res.FirstFailing)
	}
	if len(res.PassingTrials) != 2 || len(res.FailingTrials) != 2 || res.PassingTrials[0].Rate != *res.MaximumPassing {
		t.Fatalf("confirmation trials %+v / %+v", res.PassingTrials, res.FailingTrials)
	}
	if runs > 20 || res.Cost != float64(runs) {
		t.Errorf("%d trials for 95 rungs, cost %g", runs, res.Cost)
	}

	// Resumed: the same outcomes by rate, plus one whose rate is off the ladder.
	history := append(res.All, search.RateOutcome{Rate: 6.9, OutcomeOf: search.Outcome{Pass: true}})
	runs = 0
	again, err := search.RunRate(context.Background(), search.RateConfig{Ladder: l, ConfirmationTrials: 2, History: history}, run)
	if err != nil || runs != 0 || *again.MaximumPassing != *res.MaximumPassing || len(again.All) != len(res.All)+1 {
		t.Fatalf("resume: %d trials run, err %v, %d outcomes", runs, err, len(again.All))
	}

	boom := errors.New("boom")
	_, err = search.RunRate(context.Background(), search.RateConfig{Ladder: l, ConfirmationTrials: 1},
		func(context.Context, search.RateRequest) (search.Outcome, error) { return search.Outcome{}, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "at 1 requests/s") {
		t.Errorf("error %v", err)
	}
}
