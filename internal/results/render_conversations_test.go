package results

import (
	"encoding/csv"
	"reflect"
	"strings"
	"testing"
)

// usersDocument is the recorded concurrency fixture read as a users search: each trial's
// concurrency becomes its users, the boundary maximum_passing_users 4 / first_failing_users
// 5, and the passing side's first trial carries conversations as real llama.cpp gave them
// (first turns 2417 / 3735 ms, later turns 1413 / 3056 ms, 73.2 % of later turns' prompt
// cached).
func usersDocument(t *testing.T) (*Document, *ConversationTrial) {
	t.Helper()
	d := readFixture(t, "recorded")
	w := &d.Workloads[0]
	conv := &ConversationTrial{MeasuredTurns: 12, FirstTurns: 4, FirstTurnTTFTP50Ms: 2417, FirstTurnTTFTP95Ms: 3735,
		LaterTurnTTFTP50Ms: 1413, LaterTurnTTFTP95Ms: 3056, InFlightMean: 1.82, InFlightPeak: 2, ContextTokensMax: 1303,
		LaterTurnCachedPercent: ptr(73.2), TurnsCachedBeyondHistory: 0}
	first := true
	for _, ts := range [][]Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for i := range ts {
			ts[i].Users, ts[i].Concurrency = ts[i].Concurrency, 0
			if ts[i].Users == 4 && ts[i].Kind != "probe" && ts[i].Trial == 1 && (first || &ts[0] == &w.PassingTrials[0]) {
				ts[i].Conversations = conv
				first = false
			}
		}
	}
	w.PassingTrials[0].Conversations = conv
	w.MaximumPassingUsers, w.FirstFailingUsers = w.MaximumPassingConcurrency, w.FirstFailingConcurrency
	w.MaximumPassingConcurrency, w.FirstFailingConcurrency = nil, nil
	raw, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(raw) // verifies the headline: the users boundary follows from the trials
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Marshal(back); string(again) != string(raw) {
		t.Error("the document does not round-trip byte for byte")
	}
	return back, conv
}

// A users search reads whole on its own axis: the boundary in users, each trial's users,
// the conversations table, CSV's users columns and OpenMetrics' users families; the SVG
// plots against users. A headline that states another users boundary than its trials give
// is refused, as on every axis.
func TestUsersSearchRenders(t *testing.T) {
	t.Parallel()
	d, conv := usersDocument(t)
	w := d.Workloads[0]
	if got := *w.MaximumPassingUsers; got != 4 || *w.FirstFailingUsers != 5 || w.MaximumPassingConcurrency != nil {
		t.Fatalf("boundary %v / %v users, concurrency %v", w.MaximumPassingUsers, w.FirstFailingUsers, w.MaximumPassingConcurrency)
	}
	if got := *w.PassingTrials[0].Conversations; !reflect.DeepEqual(got, *conv) {
		t.Fatalf("conversations %+v", got)
	}
	if mp, ff := w.BoundaryText(); mp != "4" || ff != "5" {
		t.Errorf("boundary text %q / %q", mp, ff)
	}

	md := Markdown(d)
	for _, want := range []string{
		"Maximum passing users **4**, first failing **5**",
		"| 64 / 8 | 64 / 8 | 4 | 5 | p95 TTFT |",
		"(passing trial 1 at users 4)",
		"| Side | Users | Trial | Users | Measured turns (first) | First-turn TTFT p50 / p95 (ms) | Later-turn TTFT p50 / p95 (ms) |",
		"| passing | 4 | 1 | 4 | 12 (4) | 2417.0 / 3735.0 | 1413.0 / 3056.0 | 73.2 % | 1.82 / 2 | 1303 | 0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(strings.ToLower(md), "passing concurrency") || strings.Contains(md, "at concurrency") {
		t.Errorf("Markdown of a users search says concurrency:\n%s", md)
	}

	rows, err := csv.NewReader(strings.NewReader(CSV(d))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	found := false
	for _, r := range rows[1:] {
		if r[col["users"]] == "" || r[col["concurrency"]] != "" {
			t.Errorf("CSV row users %q concurrency %q", r[col["users"]], r[col["concurrency"]])
		}
		if r[col["side"]] == "passing" && r[col["trial"]] == "1" {
			found = true
			for name, want := range map[string]string{"users": "4", "first_turn_ttft_ms_p95": "3735", "later_turn_ttft_ms_p50": "1413",
				"in_flight_mean": "1.82", "in_flight_peak": "2", "context_tokens_max": "1303", "later_turn_cached_percent": "73.2", "turns_cached_beyond_history": "0"} {
				if got := r[col[name]]; got != want {
					t.Errorf("CSV %s = %q, want %q", name, got, want)
				}
			}
		}
	}
	if !found {
		t.Error("CSV has no passing trial 1")
	}

	prom := OpenMetrics(d)
	for _, want := range []string{
		`llmserve_maximum_passing_users{workload="64 / 8"} 4`,
		`llmserve_first_failing_users{workload="64 / 8"} 5`,
		`llmserve_trial_users{workload="64 / 8",side="passing",trial="1"} 4`,
		`llmserve_trial_first_turn_time_to_first_token_seconds{workload="64 / 8",side="passing",trial="1",percentile="95"} 3.735`,
		`llmserve_trial_later_turn_time_to_first_token_seconds{workload="64 / 8",side="passing",trial="1",percentile="50"} 1.413`,
		`llmserve_trial_later_turn_cached_ratio{workload="64 / 8",side="passing",trial="1"} 0.732`,
		`llmserve_trial_turns_cached_beyond_history{workload="64 / 8",side="passing",trial="1"} 0`,
		`llmserve_trial_in_flight_requests_peak{workload="64 / 8",side="passing",trial="1"} 2`,
	} {
		if !strings.Contains(prom, want) {
			t.Errorf("OpenMetrics lacks %q", want)
		}
	}
	if strings.Contains(OpenMetrics(readFixture(t, "recorded")), "users") {
		t.Error("a concurrency document gained the users families")
	}
	if svg := SVG(d); !strings.Contains(svg, "Users (conversations with think time)") {
		t.Error("the SVG's x axis is not users")
	}

	raw, _ := Marshal(d)
	bad := strings.Replace(string(raw), `"maximum_passing_users": 4`, `"maximum_passing_users": 5`, 1)
	if bad == string(raw) {
		t.Fatal("no maximum_passing_users in the document")
	}
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "maximum_passing_users") {
		t.Errorf("a users boundary its trials contradict was read: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
