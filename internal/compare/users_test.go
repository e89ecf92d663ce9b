package compare_test

import (
	"os"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// usersDoc is the recorded concurrency fixture read as a search by users (each trial's
// concurrency becomes its users): maximum passing 4 users, first failing 5.
func usersDoc(t *testing.T) *results.Document {
	t.Helper()
	raw, err := os.ReadFile("../results/testdata/recorded/result.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := results.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	w := &d.Workloads[0]
	for _, ts := range [][]results.Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for i := range ts {
			ts[i].Users, ts[i].Concurrency = ts[i].Concurrency, 0
		}
	}
	w.MaximumPassingUsers, w.FirstFailingUsers = w.MaximumPassingConcurrency, w.FirstFailingConcurrency
	w.MaximumPassingConcurrency, w.FirstFailingConcurrency = nil, nil
	return d
}

// Two searches by users compare on their own axis: levels matched on users, the maximum
// passing users as the capacity, in words that say users.
func TestCompareUsers(t *testing.T) {
	t.Parallel()
	r := compare.Compare(usersDoc(t), usersDoc(t), compare.Options{})
	if len(r.Refused) > 0 || len(r.Workloads) != 1 {
		t.Fatalf("refused %v, %d workloads", r.Refused, len(r.Workloads))
	}
	w := r.Workloads[0]
	if w.Axis != compare.AxisUsers {
		t.Fatalf("axis %q, want users", w.Axis)
	}
	if w.BaselineMaximumPassing == nil || *w.BaselineMaximumPassing != 4 || w.CurrentMaximumPassing == nil || *w.CurrentMaximumPassing != 4 {
		t.Errorf("maximum passing %v → %v, want 4 → 4", w.BaselineMaximumPassing, w.CurrentMaximumPassing)
	}
	if len(w.Objectives) == 0 || len(w.Objectives[0].Levels) == 0 {
		t.Fatal("no level matched on users")
	}
	for _, l := range w.Objectives[0].Levels {
		if l.At < 1 || l.Concurrency != 0 {
			t.Errorf("level at %g users, concurrency %d", l.At, l.Concurrency)
		}
	}
	if w.Verdict == "" {
		t.Error("no verdict")
	}
}
