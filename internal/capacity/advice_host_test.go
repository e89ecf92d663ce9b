package capacity

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// A failing trial that ran while the host held a machine's worth more load than the
// workload's quietest trial is named with the recorded figures, even when the load did not
// rise within the trial (which the busy-host warning needs); the same trial on a host only a
// little busier says nothing.
func TestHostLoadBesideDecidingTrialsWarns(t *testing.T) {
	t.Parallel()
	host := func(start, end, busy float64) *results.HostLoad {
		return &results.HostLoad{CPUs: 2, LoadAvg1mStart: start, LoadAvg1mEnd: end, BusyPercent: busy}
	}
	trial := func(c int, p95 float64, verdict string, h *results.HostLoad) results.Trial {
		tr := at(c, noiseTrial(1, p95))
		tr.Verdict, tr.Host = verdict, h
		return tr
	}
	warnings := func(failing *results.HostLoad) []string {
		w := results.Workload{Label: "chat", AllTrials: []results.Trial{
			trial(1, 100, "pass", host(0.4, 0.35, 20)), trial(2, 300, "pass", host(0.5, 0.6, 30)), trial(3, 600, "fail", failing)}}
		h, err := results.DeriveHeadline([]results.SLO{noiseSLO}, w)
		if err != nil {
			t.Fatal(err)
		}
		h.Apply(&w)
		var out []string
		for _, p := range (Config{}).ResultWarnings(&results.Document{SLOs: []results.SLO{noiseSLO}, Workloads: []results.Workload{w}}) {
			if strings.Contains(p.Summary, "more loaded host") {
				out = append(out, p.Detail)
			}
		}
		return out
	}
	got := warnings(host(2.6, 2.7, 96))
	if len(got) != 1 || !strings.Contains(got[0], "confirmation trial 1 at concurrency 3 failed with a 1-minute load average of 2.60 to 2.70 on 2 CPUs (96 % busy), where the quietest trial saw 0.40") {
		t.Errorf("loaded failing trial: %q", got)
	}
	if got := warnings(host(1.2, 1.3, 70)); len(got) != 0 {
		t.Errorf("a failing trial under a CPU's worth of load warns: %q", got)
	}
}

// A users workload's disagreement is at users, never "at concurrency".
func TestUsersDisagreementSaysUsers(t *testing.T) {
	t.Parallel()
	users := func(n, index int, p95 float64) results.Trial {
		tr := noiseTrial(index, p95)
		tr.Users = n
		tr.Conversations = &results.ConversationTrial{MeasuredTurns: 64}
		return tr
	}
	w := results.Workload{Label: "chat", AllTrials: []results.Trial{users(1, 1, 100), users(1, 2, 104), users(2, 1, 120), users(2, 2, 200)}}
	h, err := results.DeriveHeadline([]results.SLO{noiseSLO}, w)
	if err != nil {
		t.Fatal(err)
	}
	h.Apply(&w)
	w.TrialDisagreements = results.Disagreements([]results.SLO{noiseSLO}, w)
	if len(w.TrialDisagreements) != 1 {
		t.Fatalf("disagreements %+v", w.TrialDisagreements)
	}
	found := false
	for _, p := range (Config{}).ResultWarnings(&results.Document{SLOs: []results.SLO{noiseSLO}, Workloads: []results.Workload{w}}) {
		if strings.Contains(p.Summary, "disagree") {
			found = true
			if !strings.Contains(p.Detail, "at 2 users, p95") || strings.Contains(p.Detail, "concurrency") {
				t.Errorf("users disagreement reads %q", p.Detail)
			}
		}
	}
	if !found {
		t.Error("no disagreement warning")
	}
}

// A grid of one level asks whether it holds: when it does, the apply does not call the
// capacity bounded by the search (the quickstart's pace); with two levels, or when the one
// level failed (bounded below, or no capacity), it still warns.
func TestOneLevelGridThatHoldsIsNoBoundedSearch(t *testing.T) {
	t.Parallel()
	bounded := func(levels []int, verdicts ...string) bool {
		var trials []results.Trial
		for i, v := range verdicts {
			p95 := 100.0
			if v == "fail" {
				p95 = 600 // above the objective, as in the test above
			}
			tr := at(levels[i], noiseTrial(1, p95))
			tr.Verdict = v
			trials = append(trials, tr)
		}
		w := results.Workload{Label: "chat", AllTrials: trials}
		h, err := results.DeriveHeadline([]results.SLO{noiseSLO}, w)
		if err != nil {
			t.Fatal(err)
		}
		h.Apply(&w)
		for _, p := range (Config{ConcurrencyLevels: levels}).ResultWarnings(&results.Document{SLOs: []results.SLO{noiseSLO}, Workloads: []results.Workload{w}}) {
			if strings.Contains(p.Summary, "bounded by the search") || strings.Contains(p.Summary, "has no capacity") {
				return true
			}
		}
		return false
	}
	if bounded([]int{1}, "pass") {
		t.Error("one level that held: warned as bounded by the search")
	}
	if !bounded([]int{1, 2}, "pass", "pass") {
		t.Error("two levels that held: no bounded-search warning")
	}
	if !bounded([]int{4}, "fail") {
		t.Error("one level that failed: no warning")
	}
}
