package search

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// The search touches only the levels it tries: bounds billions apart cost a few dozen
// trials and no time in between, and a huge minimum is tried as given.
func TestSearchFarBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		min, max  int
		boundary  int
		wantPass  *int
		wantFail  *int
		maxTrials int
	}{
		// Galloping from 1 doubles the step: the boundary 37 is bracketed by 63, then
		// bisected; about 2·log2(37) probes plus 2×3 confirmations.
		{name: "max at the limit", min: 1, max: MaxLevel, boundary: 37, wantPass: intp(37), wantFail: intp(38), maxTrials: 25},
		{name: "min near the limit fails at once", min: MaxLevel - 1, max: MaxLevel, boundary: 5, wantFail: intp(MaxLevel - 1), maxTrials: 4},
		{name: "everything passes up to the limit", min: 1, max: MaxLevel, boundary: MaxLevel, wantPass: intp(MaxLevel), maxTrials: 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &scripted{t: t, pass: upTo(tc.boundary)}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := Run(ctx, Config{Min: tc.min, Max: tc.max, ConfirmationTrials: 3}, r)
			if err != nil {
				t.Fatal(err)
			}
			if !eqPtr(res.MaximumPassing, tc.wantPass) || !eqPtr(res.FirstFailing, tc.wantFail) {
				t.Fatalf("boundary %v/%v, want %v/%v", deref(res.MaximumPassing), deref(res.FirstFailing), deref(tc.wantPass), deref(tc.wantFail))
			}
			if len(r.ran) > tc.maxTrials {
				t.Fatalf("%d trials, want at most %d", len(r.ran), tc.maxTrials)
			}
		})
	}
}

func TestSearchRejectsMaxAboveLimit(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Config{Min: 1, Max: math.MaxInt, ConfirmationTrials: 1}, &scripted{t: t, pass: upTo(3)})
	if err == nil || !strings.Contains(err.Error(), "above") {
		t.Fatalf("err = %v, want the maximum refused", err)
	}
}

// A trial that failed because requests failed is no evidence of a non-monotone curve.
func TestNonMonotoneIgnoresServerFailures(t *testing.T) {
	t.Parallel()
	all := []Outcome{
		{Request: Request{Concurrency: 4, Kind: Probe, Index: 1}, Pass: false, Failed: 1},
		{Request: Request{Concurrency: 5, Kind: Probe, Index: 1}, Pass: true},
		{Request: Request{Concurrency: 6, Kind: Probe, Index: 1}, Pass: false},
		{Request: Request{Concurrency: 7, Kind: Probe, Index: 1}, Pass: true},
	}
	got := nonMonotone(all)
	if len(got) != 1 || got[0] != (NonMonotone{Passed: 7, Failed: 6}) {
		t.Fatalf("nonMonotone = %v, want only 7 over 6", got)
	}
}

func eqPtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
