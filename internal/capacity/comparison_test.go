package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/search"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// A run given a baseline measures the levels the comparison needs where its own search
// did not (the baseline's first failing level, above its own boundary), journals them as
// comparison trials, lists them in the document at look 1 without moving its capacity, and
// its comparison is what compare reads from the document after a round trip. Given its own
// delivered result and another baseline, it measures no search trial again.
func TestRunMeasuresAgainstBaseline(t *testing.T) {
	t.Parallel()
	engine := func(slots int) string {
		m := simengine.TwoSlotModel()
		m.Slots = slots
		e, err := simengine.NewServer(simengine.Options{Model: m, ModelName: "sim"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	three, two := engine(3), engine(2)
	base, _ := runRecorded(t, testConfig(three))
	if mp, ff := base.Workloads[0].MaximumPassingConcurrency, base.Workloads[0].FirstFailingConcurrency; mp == nil || *mp != 3 || ff == nil || *ff != 4 {
		t.Fatalf("the 3-slot baseline's boundary %v / %v, want 3 / 4", mp, ff)
	}

	cfg := testConfig(two)
	cfg.Baseline, cfg.ComparisonBudget = &Document{base}, 4
	doc, journal := runRecorded(t, cfg)
	w := doc.Workloads[0]
	if mp := w.MaximumPassingConcurrency; mp == nil || *mp != 2 {
		t.Fatalf("the 2-slot run's capacity %v, want 2: trials added for the comparison never move it", mp)
	}
	var added []results.Trial
	for _, tr := range w.AllTrials {
		if tr.ForComparison > 0 {
			added = append(added, tr)
		}
	}
	// The run confirmed 2 and 3 itself; the baseline's 4 it measures for the comparison, up
	// to trial.confirmation_trials (2), at look 1.
	if len(added) < 2 || added[0].Concurrency != 4 || added[1].Concurrency != 4 || added[0].ForComparison != 1 || added[1].ForComparison != 1 ||
		added[0].Trial != 1 || added[1].Trial != 2 || added[0].Kind != "confirmation" || !strings.Contains(added[0].RecordsFile, "comparison") {
		t.Fatalf("trials added for the comparison %+v", added)
	}
	comparisons := slices.DeleteFunc(slices.Clone(journal), func(e JournalEntry) bool { return e.Kind != kindComparison })
	if len(comparisons) != len(added) || comparisons[0].Concurrency != 4 || comparisons[0].Index != 1 {
		t.Errorf("journaled comparison trials %+v, want the %d added", comparisons, len(added))
	}
	if doc.AIPerf.ComparisonBudget != 4 {
		t.Errorf("aiperf.comparison_budget %d, want 4", doc.AIPerf.ComparisonBudget)
	}
	parsed := roundTrip(t, doc)
	got, want := compare.Compare(base, parsed, compare.Options{}), compare.Compare(base, doc, compare.Options{})
	if got.Summary() != want.Summary() || got.Workloads[0].Verdict != compare.Regressed {
		t.Errorf("compare after a round trip: %s\nbefore: %s", got.Summary(), want.Summary())
	}

	// An interrupted run of this configuration resumes every trial from its journal, the
	// comparison's too (at concurrency 4, outside nothing: a comparison's levels are the
	// baseline's, wherever the search's bounds lie).
	path := filepath.Join(t.TempDir(), "progress.jsonl")
	j, err := OpenJournal(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range journal {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	measured := 0
	resumed := cfg
	resumed.RecordsDirectory = t.TempDir()
	rep, err := Resume(context.Background(), resumed, Files{ProgressFile: path, Trial: func(JournalEntry) { measured++ }})
	if err != nil {
		t.Fatal(err)
	}
	if measured != 0 || rep.Resumed.Trials != len(journal) || len(rep.Resumed.Ignored) != 0 {
		t.Errorf("resumed %d of %d journaled trials, measured %d, ignored %q", rep.Resumed.Trials, len(journal), measured, rep.Resumed.Ignored)
	}
	if got := compare.Compare(base, rep.Document, compare.Options{}); got.Summary() != want.Summary() {
		t.Errorf("the resumed run's comparison: %s\nwant: %s", got.Summary(), want.Summary())
	}

	// The baseline travels to a runner as its JSON, and comes back the same document.
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if a, b := mustMarshal(t, back.Baseline.Document), mustMarshal(t, base); !bytes.Equal(a, b) {
		t.Error("the baseline changed on its way to a runner")
	}

	// Only the baseline changes: the delivered searches stand, the comparison is measured
	// again against the new baseline (the 2-slot run itself, whose levels the run has).
	again := testConfig(two)
	again.Baseline, again.Delivered, again.ComparisonBudget = &Document{parsed}, &Document{parsed}, 4
	redo, journal := runRecorded(t, again)
	for _, e := range journal {
		if e.Kind != kindComparison {
			t.Errorf("a search trial measured again: %+v", e)
		}
	}
	if !slices.EqualFunc(searchTrials(redo.Workloads[0]), searchTrials(w), func(a, b results.Trial) bool { return a.RecordsSHA256 == b.RecordsSHA256 }) {
		t.Error("the delivered search's trials are not the ones reported")
	}
}

func searchTrials(w results.Workload) []results.Trial {
	return slices.DeleteFunc(slices.Clone(w.AllTrials), func(t results.Trial) bool { return t.ForComparison > 0 })
}

func mustMarshal(t *testing.T, d *results.Document) []byte {
	t.Helper()
	raw, err := results.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// A resumed run reuses a comparison trial from the journal or the delivered result only
// when its load generator kept up: a client-bound one (which a comparison must never weigh)
// is measured again, as the search's own client-bound trials are.
func TestResumeNeverReusesAClientBoundComparisonTrial(t *testing.T) {
	t.Parallel()
	trial := func(bound bool) *results.Trial {
		tr := results.Trial{Trial: 1, Concurrency: 4, Verdict: results.VerdictPass, ForComparison: 1, Kind: "confirmation"}
		if bound {
			tr.Verdict = "client_bound"
			tr.Client = &results.ClientTrial{Bound: true}
		}
		return &tr
	}
	at := trialAt{Kind: search.Confirmation, Index: 1, Level: 4, Value: 4, Comparison: true}
	for _, bound := range []bool{false, true} {
		journal := &trialRunner{w: Workload{Label: "chat"}, s: &session{cfg: Config{History: []JournalEntry{
			{Kind: kindComparison, Workload: "chat", Concurrency: 4, Index: 1, Metrics: trial(bound)}}}}}
		if _, _, ok := journal.reusedComparison(at); ok == bound {
			t.Errorf("journal, client-bound %v: reused %v", bound, ok)
		}
		delivered := &trialRunner{w: Workload{Label: "chat"}, s: &session{cfg: Config{Delivered: &Document{&results.Document{
			Workloads: []results.Workload{{Label: "chat", AllTrials: []results.Trial{*trial(bound)}}}}}}}}
		if _, _, ok := delivered.reusedComparison(at); ok == bound {
			t.Errorf("delivered result, client-bound %v: reused %v", bound, ok)
		}
	}
}
