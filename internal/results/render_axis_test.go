package results

import (
	"encoding/csv"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) *Document {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name + "/result.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The real rate and replay results render as goldens beside the reference (go test -update
// rewrites them).
func TestGoldenRenderingsOfRateAndReplay(t *testing.T) {
	t.Parallel()
	for _, fixture := range []string{"rate", "replay"} {
		d := readFixture(t, fixture)
		for ext, render := range map[string]func(*Document) string{"md": Markdown, "csv": CSV, "prom": OpenMetrics, "svg": SVG} {
			t.Run(fixture+"."+ext, func(t *testing.T) { golden(t, fixture+"."+ext+".golden", render(d)) })
		}
	}
}

// A rate result in Markdown: headings on its own axis, both sides of its boundary rounded to
// three significant digits, each trial's rate (not "?"), offered and completed rates, and a
// failing trial that met its objective says which guard failed it.
func TestMarkdownOfARateResult(t *testing.T) {
	t.Parallel()
	md := Markdown(readFixture(t, "rate"))
	for _, want := range []string{
		"| Workload | ISL / OSL | Maximum passing request rate | First failing request rate | Bound by |",
		"| 64 / 8 by rate | 64 / 8 | 5.86 requests/s | 7.32 requests/s | completion rate (did not keep up) |",
		"Maximum passing request rate **5.86 requests/s**, first failing **7.32 requests/s**, bound by completion rate (did not keep up).",
		"| Side | Rate (requests/s) | Trial | Offered / completed (requests/s) |",
		"| passing | 5.86 | 1 | 5.86 / 5.92 |",
		"| failing | 7.32 | 1 | 7.32 / 6.91 | 77.1 | 133.2 | 141.5 | 40.51 | 51.8 | 24.7 | fail: completions 6.91/s &lt; 7.32/s offered |",
		"(passing trial 1 at request rate 5.86 requests/s)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"concurrency", "5.859375", "first failing **none**", "| ? |", "at concurrency ?"} {
		if strings.Contains(strings.ToLower(md), strings.ToLower(bad)) {
			t.Errorf("Markdown of a rate result says %q:\n%s", bad, md)
		}
	}
}

// A replay in Markdown: the speed-up with its rate, and the trace's mean lengths called
// what they are, not "configured".
func TestMarkdownOfAReplay(t *testing.T) {
	t.Parallel()
	md := Markdown(readFixture(t, "replay"))
	for _, want := range []string{
		"| Workload | ISL / OSL | Maximum passing speed-up | First failing speed-up | Bound by |",
		"| recorded | 64 / 8 | 1.22× (6.1 requests/s) | 1.53× (7.63 requests/s) | p95 TTFT, completion rate (did not keep up) |",
		"Replay of the recorded trace `trace.jsonl`: 64 input / 8 output tokens per request on average, 5 requests/s as recorded",
		"Maximum passing speed-up **1.22× (6.1 requests/s)**, first failing **1.53× (7.63 requests/s)**",
		"| failing | 1.53× | 1 | 7.63 / 6.92 |",
		"fail: p95 TTFT 246.8 ms, not under 150 ms; completions 6.92/s &lt; 7.63/s offered |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"configured", "concurrency", "1.220703125"} {
		if strings.Contains(strings.ToLower(md), bad) {
			t.Errorf("Markdown of a replay says %q:\n%s", bad, md)
		}
	}
}

// Three significant digits, more only where two levels would read the same.
func TestLevelRounding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      float64
		digits int
		want   string
	}{
		{5.859375, 3, "5.86"}, {3, 3, "3"}, {12, 3, "12"}, {0.48828125, 3, "0.488"}, {1234.6, 3, "1235"}, {1.5295114312695302, 3, "1.53"},
	} {
		if got := significant(tc.v, tc.digits); got != tc.want {
			t.Errorf("significant(%v, %d) = %q, want %q", tc.v, tc.digits, got, tc.want)
		}
	}
	r := func(v float64) *float64 { return &v }
	// 1.5295 and 1.5301 both read 1.53 at three (and four) digits: the axis writes five.
	w := Workload{MaximumPassingRequestRate: r(1.5295114312695302), FirstFailingRequestRate: r(1.5301)}
	if mp, ff := capacityText(w, "none"), firstFailingText(w, "none"); mp != "1.5295 requests/s" || ff != "1.5301 requests/s" {
		t.Errorf("boundary reads %q and %q, want 1.5295 and 1.5301 requests/s", mp, ff)
	}
}

var svgX = regexp.MustCompile(`<(?:circle|path) class="(passing|failing|not-kept-up|passing probe|failing probe|unjudged probe)" (?:cx="([0-9.]+)"|d="M([0-9.]+) )[^>]*><title>`)

// A rate result's chart plots p95 TTFT against the offered rate: one marker per trial, in
// the order of their rates, on an axis named for it; a trial that met the objective but did
// not keep up is told apart; no line of text is squeezed or cut.
func TestSVGOfARateResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture, axis, title string
		level                func(Trial) float64
	}{
		{"rate", "Offered request rate (requests/s)", "TTFT p95 against offered request rate", func(tr Trial) float64 { return tr.RequestRate }},
		{"replay", "Speed-up of the recorded trace (×)", "TTFT p95 against speed-up", func(tr Trial) float64 { return tr.Speedup }},
	} {
		d := readFixture(t, tc.fixture)
		svg := SVG(d)
		if !strings.Contains(svg, ">"+tc.axis+"</text>") || strings.Contains(svg, "Concurrency") || !strings.Contains(svg, "<title>"+tc.title) {
			t.Errorf("%s: axis or title wrong:\n%s", tc.fixture, svg)
		}
		if strings.Contains(svg, "textLength") {
			t.Errorf("%s: a line is squeezed to fit", tc.fixture)
		}
		width, texts := svgTexts(t, svg)
		for _, tx := range texts {
			if tx.anchor == "" && tx.x+textWidth(tx.content, tx.size, tx.bold) > width {
				t.Errorf("%s: %q is cut at the width %.0f", tc.fixture, tx.content, width)
			}
		}
		marks := svgX.FindAllStringSubmatch(svg, -1)
		trials := d.Workloads[0].AllTrials
		if len(marks) != len(trials) {
			t.Fatalf("%s: %d markers for %d trials", tc.fixture, len(marks), len(trials))
		}
		// Markers' x follow the trials' levels: sort both and compare the order.
		type mx struct{ level, x float64 }
		var got []mx
		for i, m := range marks {
			x, _ := strconv.ParseFloat(m[2]+m[3], 64)
			if m[3] != "" {
				x += 5 // a cross or diamond path starts left of its centre
			}
			got = append(got, mx{tc.level(trials[i]), x})
		}
		slices.SortFunc(got, func(a, b mx) int {
			if a.level < b.level {
				return -1
			}
			if a.level > b.level {
				return 1
			}
			return 0
		})
		for i := 1; i < len(got); i++ {
			if got[i].level > got[i-1].level && got[i].x <= got[i-1].x {
				t.Errorf("%s: level %g drawn at x %g, left of level %g at %g", tc.fixture, got[i].level, got[i].x, got[i-1].level, got[i-1].x)
			}
		}
	}
	svg := SVG(readFixture(t, "rate"))
	if n := strings.Count(svg, `class="not-kept-up"`); n != 2+1 { // two failing trials and the legend
		t.Errorf("%d not-kept-up markers, want the 2 failing trials at 7.32 requests/s and the legend's", n)
	}
	if !strings.Contains(svg, "max. passing 5.86 requests/s · first failing 7.32 requests/s") ||
		!strings.Contains(svg, "but the server did not keep up: completions 6.91/s &lt; 7.32/s offered") {
		t.Errorf("SVG lacks the boundary line or the guard:\n%s", svg)
	}
}

// CSV and OpenMetrics carry each open-loop trial's guards: offered and completed rate,
// backlog, kept up.
func TestCSVAndOpenMetricsOfARateResult(t *testing.T) {
	t.Parallel()
	d := readFixture(t, "rate")
	rows, err := csv.NewReader(strings.NewReader(CSV(d))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, name := range []string{"offered_rate", "completion_rate", "backlog_growth", "backlog_allowance", "kept_up", "missed_guards"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("CSV lacks %s: %v", name, rows[0])
		}
	}
	failing := 0
	for _, r := range rows[1:] {
		if r[col["side"]] == "failing" {
			failing++
			if r[col["request_rate"]] != "7.32421875" || r[col["kept_up"]] != "false" || r[col["missed_guards"]] != "completion_rate" || !strings.HasPrefix(r[col["completion_rate"]], "6.9") {
				t.Errorf("failing row %v", r)
			}
		}
	}
	if failing != 2 {
		t.Errorf("%d failing rows, want 2", failing)
	}
	fams := parseOpenMetrics(t, OpenMetrics(d))
	for side, want := range map[string]float64{"passing": 1, "failing": 0} {
		if v, ok := gauge(fams, "llmserve_trial_kept_up", map[string]string{"workload": "64 / 8 by rate", "side": side, "trial": "1"}); !ok || v != want {
			t.Errorf("llmserve_trial_kept_up %s = %v (%v), want %v", side, v, ok, want)
		}
	}
	if v, ok := gauge(fams, "llmserve_trial_completed_requests_per_second", map[string]string{"workload": "64 / 8 by rate", "side": "failing", "trial": "1"}); !ok || v < 6.9 || v > 6.92 {
		t.Errorf("completed rate %v", v)
	}
	if v, ok := gauge(fams, "llmserve_first_failing_requests_per_second", map[string]string{"workload": "64 / 8 by rate"}); !ok || v != 7.32421875 {
		t.Errorf("first failing rate %v", v)
	}
}
