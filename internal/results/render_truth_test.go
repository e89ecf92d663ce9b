package results

import (
	"encoding/csv"
	"strings"
	"testing"
)

// With several objectives the Markdown verdict names the objective that failed, with its
// value, not whichever objective no column shows; the summary shows bound_by.
func TestMarkdownNamesTheFailingObjective(t *testing.T) {
	t.Parallel()
	d := readRecorded(t) // p95 TTFT < 300 ms and p95 ITL < 1000 ms; 5 fails on TTFT
	md := Markdown(d)
	for _, want := range []string{
		"| Workload | ISL / OSL | Maximum passing concurrency | First failing concurrency | Bound by |",
		"| 64 / 8 | 64 / 8 | 4 | 5 | p95 TTFT |",
		"Maximum passing concurrency **4**, first failing **5**, bound by p95 TTFT.",
		"| fail: p95 TTFT ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		// The client table's rows (the server-side view's have no verdict).
		if strings.HasPrefix(line, "| failing |") && !strings.Contains(line, "| – | – |") && (!strings.Contains(line, "fail: p95 TTFT") || strings.Contains(line, "ITL p95")) {
			t.Errorf("failing trial's verdict does not name TTFT alone: %s", line)
		}
	}

	// The case the other way round: ITL missed, TTFT met.
	objs := []SLO{ttft95, itl95}
	tr := ht("confirmation", 2, 50, 12)
	tr.Correctness.ProfilingRecords = 8
	if got, want := verdictText(objs, tr), "fail: p95 ITL 12.0 ms, not under 10 ms"; got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	tr = ht("confirmation", 2, 150, 12)
	if got, want := verdictText(objs, tr), "fail: p95 TTFT 150.0 ms, not under 100 ms; p95 ITL 12.0 ms, not under 10 ms"; got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	if got, want := verdictText(objs, ht("confirmation", 1, 50, 5)), "pass (ITL p95 5.0 ms)"; got != strings.Replace(want, "ITL p95", "p95 ITL", 1) {
		t.Errorf("verdict %q, want %q", got, want)
	}
}

// A capacity the search did not bound prints as "≥ N"; one below the lowest level tried
// says so.
func TestMarkdownBoundedCapacity(t *testing.T) {
	t.Parallel()
	objs := []SLO{ttft95, itl95}
	ceiling := Workload{Label: "c", MaximumPassingConcurrency: intp(16), AllTrials: []Trial{ht("confirmation", 16, 10, 1)}}
	floor := Workload{Label: "f", FirstFailingConcurrency: intp(8), BoundBy: []string{"p95 time_to_first_token"}, AllTrials: []Trial{ht("confirmation", 8, 200, 1)}}
	md := Markdown(&Document{SLOs: objs, Workloads: []Workload{ceiling, floor}})
	for _, want := range []string{
		"| c | 0 / 0 | ≥ 16 | none within the bounds | – |",
		"| f | 0 / 0 | none (even the lowest failed), below 8 | 8 | p95 TTFT |",
		"Maximum passing concurrency **≥ 16**, first failing **none**.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

// CSV has one row per trial, every trial: the recorded run's 11 (probes, one stopped early,
// and confirmation trials at every level), not the 4 at its boundary.
func TestCSVEveryTrial(t *testing.T) {
	t.Parallel()
	d := readRecorded(t)
	rows, err := csv.NewReader(strings.NewReader(CSV(d))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+11 {
		t.Fatalf("%d rows, want a header and 11 trials", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	kinds, sides := map[string]int{}, map[string]int{}
	for _, r := range rows[1:] {
		kinds[r[col["kind"]]]++
		sides[r[col["side"]]]++
	}
	// 2 probes (4 and 8), 9 confirmations; 2 at each boundary side, 5 elsewhere.
	if kinds["probe"] != 2 || kinds["confirmation"] != 9 || sides["passing"] != 2 || sides["failing"] != 2 || sides[""] != 7 {
		t.Errorf("kinds %v, sides %v", kinds, sides)
	}
	if r := rows[4]; r[col["kind"]] != "probe" || r[col["concurrency"]] != "8" || r[col["stopped_early"]] != "true" || r[col["verdict"]] != "fail" {
		t.Errorf("row 4 = %v", r)
	}
}

// A workload searched by request rate renders its rates, bounded or not, without the
// concurrency it does not have.
func TestRenderingsOfARateSearch(t *testing.T) {
	t.Parallel()
	objs := []SLO{ttft95, itl95}
	rate := func(r float64) *float64 { return &r }
	found := Workload{Label: "r", MaximumPassingRequestRate: rate(2.5), FirstFailingRequestRate: rate(3)}
	ceiling := Workload{Label: "c", MaximumPassingRequestRate: rate(8)}
	floor := Workload{Label: "f", FirstFailingRequestRate: rate(0.5)}
	d := &Document{SLOs: objs, Workloads: []Workload{found, ceiling, floor}}
	md := Markdown(d)
	for _, want := range []string{
		"| r | 0 / 0 | 2.5 requests/s | 3 requests/s |",
		"| c | 0 / 0 | ≥ 8 requests/s | none within the bounds |",
		"| f | 0 / 0 | none (even the lowest failed), below 0.5 requests/s | 0.5 requests/s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if svg := SVG(d); !strings.Contains(svg, "max. passing ≥ 8 requests/s") {
		t.Errorf("SVG does not state the rate ceiling:\n%s", svg)
	}
}

// A replay searched by speedup: Markdown states the speedup with its rate, CSV each trial's
// rate and speedup and the boundary's sides, OpenMetrics both boundaries as gauges.
func TestRenderingsOfASpeedupSearch(t *testing.T) {
	t.Parallel()
	objs := []SLO{ttft95}
	trial := func(n int, rate, speedup, ttft float64, missed ...string) Trial {
		return Trial{Kind: "confirmation", Trial: n, RequestRate: rate, Speedup: speedup,
			SLOs:     []SLOResult{{Metric: ttft95.Metric, Percentile: ttft95.Percentile, Value: ttft, Met: ttft95.Meets(ttft)}},
			OpenLoop: &OpenLoopTrial{Arrival: "trace", KeptUp: len(missed) == 0, Missed: missed}}
	}
	w := Workload{Label: "recorded", AllTrials: []Trial{trial(1, 6.25, 1.25, 50), trial(1, 7.5, 1.5, 60, "backlog")}}
	h, err := DeriveHeadline(objs, w)
	if err != nil {
		t.Fatal(err)
	}
	h.Apply(&w)
	if w.MaximumPassingSpeedup == nil || *w.MaximumPassingSpeedup != 1.25 || *w.FirstFailingSpeedup != 1.5 || *w.MaximumPassingRequestRate != 6.25 {
		t.Fatalf("headline %+v", h)
	}
	d := &Document{SLOs: objs, Workloads: []Workload{w}}
	if md := Markdown(d); !strings.Contains(md, "| 1.25× (6.25 requests/s) | 1.5× (7.5 requests/s) |") {
		t.Errorf("Markdown lacks the speedups:\n%s", md)
	}
	rows, err := csv.NewReader(strings.NewReader(CSV(d))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for i, want := range [][3]string{{"passing", "6.25", "1.25"}, {"failing", "7.5", "1.5"}} {
		if r := rows[1+i]; r[col["side"]] != want[0] || r[col["request_rate"]] != want[1] || r[col["speedup"]] != want[2] || r[col["concurrency"]] != "" {
			t.Errorf("CSV row %d: side %q rate %q speedup %q concurrency %q, want %v", i, r[col["side"]], r[col["request_rate"]], r[col["speedup"]], r[col["concurrency"]], want)
		}
	}
	prom := OpenMetrics(d)
	for _, want := range []string{
		`llmserve_maximum_passing_requests_per_second{workload="recorded"} 6.25`,
		`llmserve_first_failing_requests_per_second{workload="recorded"} 7.5`,
		`llmserve_maximum_passing_speedup{workload="recorded"} 1.25`,
		`llmserve_first_failing_speedup{workload="recorded"} 1.5`,
	} {
		if !strings.Contains(prom, want) {
			t.Errorf("OpenMetrics lacks %q:\n%s", want, prom)
		}
	}
	// A concurrency search's exposition has none of the open-loop families.
	if prom := OpenMetrics(parseReference(t)); strings.Contains(prom, "llmserve_maximum_passing_requests_per_second") || strings.Contains(prom, "speedup") {
		t.Error("the reference document's exposition carries open-loop families")
	}
}
