package results

import (
	"encoding/csv"
	"encoding/xml"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current renderings")

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/results -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; if the change is intended, rerun with -update and review the diff.\ngot:\n%s", path, got)
	}
}

func TestGoldenRenderings(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	cases := []struct {
		name   string
		render func(*Document) string
	}{
		{"reference.md.golden", Markdown},
		{"reference.csv.golden", CSV},
		{"reference.prom.golden", OpenMetrics},
		{"reference.svg.golden", SVG},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, tc.render(d))
		})
	}
}

func TestCSVShape(t *testing.T) {
	t.Parallel()
	out := CSV(parseReference(t))
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Written out by hand: scripts read these columns by position, so any change must be
	// a deliberate append.
	const header = "workload,configured_isl,configured_osl,side,trial,concurrency,slo_value_ms,verdict," +
		"ttft_ms_p50,ttft_ms_p95,ttft_ms_p99,request_latency_ms_p50,request_latency_ms_p95,request_latency_ms_p99," +
		"itl_ms_p50,itl_ms_p95,itl_ms_p99,output_throughput_tps," +
		"per_user_output_throughput_tps_avg,per_user_output_throughput_tps_p50,per_user_output_throughput_tps_p95," +
		"request_throughput_rps,benchmark_duration_s,server_prompt_tokens_min,server_prompt_tokens_max," +
		"server_completion_tokens_min,server_completion_tokens_max,warmup_records,unique_warmup_prompts," +
		"warmup_profile_prompt_overlap,profiling_records,http_200,unique_prompts,unique_outputs,generated_chunks," +
		"generated_utf8_bytes,completion_tokens_total,finish_reason_length,errors,cancelled,output_length_mismatches," +
		"kind,stopped_early,request_rate,speedup," +
		"offered_rate,completion_rate,backlog_growth,backlog_allowance,kept_up,missed_guards," +
		"users,first_turn_ttft_ms_p50,first_turn_ttft_ms_p95,later_turn_ttft_ms_p50,later_turn_ttft_ms_p95," +
		"in_flight_mean,in_flight_peak,context_tokens_max,later_turn_cached_percent,turns_cached_beyond_history"
	if got := strings.Join(rows[0], ","); got != header {
		t.Errorf("header =\n%s\nwant\n%s", got, header)
	}
	if len(rows) != 1+18 {
		t.Fatalf("got %d rows, want a header and 3 workloads x 6 trials", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	cases := []struct {
		row       int
		column    string
		want      string
		reasoning string
	}{
		{1, "workload", "2K / 512", "first row is the first workload's first passing trial"},
		{1, "concurrency", "11", "no concurrency in the trial: the passing boundary"},
		{1, "ttft_ms_p99", "11215.331829699991", "unrounded, as in the file"},
		{1, "server_prompt_tokens_min", "2099", "2099.0 in the file"},
		{4, "side", "failing", "fourth row is the first failing trial"},
		{4, "concurrency", "12", "the first failing boundary"},
		{4, "slo_value_ms", "11401.869745", "p95 TTFT"},
		{4, "verdict", "fail", "11401.9 ms is not under 10000 ms"},
		{18, "workload", "16K / 2K", "last row"},
		{18, "trial", "3", "last failing trial"},
		{18, "generated_utf8_bytes", "489594", "from the file's last trial"},
		{18, "cancelled", "false", ""},
	}
	for _, tc := range cases {
		if got := rows[tc.row][col[tc.column]]; got != tc.want {
			t.Errorf("row %d %s = %q, want %q (%s)", tc.row, tc.column, got, tc.want, tc.reasoning)
		}
	}
}

func parseOpenMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Error("OpenMetrics text does not end with # EOF")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus text parser rejects the output: %v\n%s", err, text)
	}
	return fams
}

// gauge finds the value of the sample with exactly these labels.
func gauge(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok || f.GetType() != dto.MetricType_GAUGE {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestOpenMetricsParses(t *testing.T) {
	t.Parallel()
	fams := parseOpenMetrics(t, OpenMetrics(parseReference(t)))
	trial := func(w, side, n string, extra ...string) map[string]string {
		l := map[string]string{"workload": w, "side": side, "trial": n}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	cases := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"2K boundary", "llmserve_maximum_passing_concurrency", map[string]string{"workload": "2K / 512"}, 11},
		{"8K boundary", "llmserve_maximum_passing_concurrency", map[string]string{"workload": "8K / 1K"}, 7},
		{"16K first failing", "llmserve_first_failing_concurrency", map[string]string{"workload": "16K / 2K"}, 6},
		{"threshold in seconds", "llmserve_slo_threshold_seconds", map[string]string{"metric": "time_to_first_token", "percentile": "95", "comparison": "strictly_less_than"}, 10},
		{"ttft p95 in seconds", "llmserve_trial_time_to_first_token_seconds", trial("2K / 512", "passing", "1", "percentile", "95"), 7.09503604365},
		{"failing trial concurrency", "llmserve_trial_concurrency", trial("8K / 1K", "failing", "2"), 8},
		{"failing trial missed", "llmserve_trial_slo_met", trial("8K / 1K", "failing", "2"), 0},
		{"passing trial met", "llmserve_trial_slo_met", trial("16K / 2K", "passing", "3"), 1},
		{"per-user avg", "llmserve_trial_per_user_output_throughput_tokens_per_second", trial("2K / 512", "passing", "1", "stat", "avg"), 34.452655714880535},
		{"output throughput", "llmserve_trial_output_throughput_tokens_per_second", trial("2K / 512", "failing", "1"), 261.73996242469195},
		{"duration", "llmserve_trial_duration_seconds", trial("2K / 512", "passing", "1"), 128.36240160100002},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := gauge(fams, tc.metric, tc.labels)
			if !ok {
				t.Fatalf("no gauge %s%v", tc.metric, tc.labels)
			}
			if math.Abs(got-tc.want) > 1e-12*math.Max(1, math.Abs(tc.want)) {
				t.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
			}
		})
	}
	for name := range fams {
		if !strings.HasPrefix(name, "llmserve_") {
			t.Errorf("metric %s is not named llmserve_*", name)
		}
	}
	if n := len(fams["llmserve_trial_time_to_first_token_seconds"].GetMetric()); n != 18*3 {
		t.Errorf("got %d TTFT samples, want 18 trials x 3 quantiles", n)
	}
}

// svgCounts checks the SVG is well-formed XML and counts elements by class.
func svgCounts(t *testing.T, svg string) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	dec.Strict = true
	counts := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Space + " " + se.Name.Local
			}
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					counts[se.Name.Local+"."+a.Value]++
				}
			}
			counts[se.Name.Local]++
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element is %q, want svg in the SVG namespace", root)
	}
	return counts
}

func TestSVGStructure(t *testing.T) {
	t.Parallel()
	svg := SVG(parseReference(t))
	c := svgCounts(t, svg)
	want := map[string]int{
		"g.workload":     3,
		"circle.passing": 9 + 1, // nine trials and the legend's marker
		"path.failing":   9 + 1,
		"line.threshold": 3,
		"title":          1 + 18, // the chart's and one tooltip per trial
	}
	for k, n := range want {
		if c[k] != n {
			t.Errorf("%s: %d, want %d", k, c[k], n)
		}
	}
	for _, label := range []string{"Concurrency (users in flight)", "TTFT p95 (s)", "SLO &lt; 10 s", "SLO threshold", "2K / 512 (ISL 2048 / OSL 512)", "max. passing 11 · first failing 12"} {
		if !strings.Contains(svg, label) {
			t.Errorf("SVG lacks the text %q", label)
		}
	}
}

// With every trial listed, the chart draws every measured level: confirmation trials as
// filled markers by whether they met the objective, probes as rings, a failed probe stopped
// early at its value with an arrow up (a lower bound), not moved onto the threshold.
func TestSVGDrawsEveryTrial(t *testing.T) {
	t.Parallel()
	doc := parseReference(t)
	doc.Workloads = doc.Workloads[:1]
	w := &doc.Workloads[0]
	probe := func(c int, p95 float64, verdict string, stopped bool) Trial {
		return Trial{Kind: "probe", Trial: 1, Concurrency: c, Verdict: verdict, StoppedEarly: stopped, TTFTMs: Stats{P95: p95}}
	}
	conf := func(c, n int, tr Trial, verdict string) Trial {
		tr.Kind, tr.Trial, tr.Concurrency, tr.Verdict = "confirmation", n, c, verdict
		return tr
	}
	w.AllTrials = []Trial{
		probe(1, 900, "pass", false), probe(2, 1800, "pass", false), probe(4, 3000, "pass", false),
		probe(8, 5000, "pass", false), probe(16, 2000, "fail", true), // stopped early: drawn at ≥ 10 s
		conf(11, 1, w.PassingTrials[0], "pass"), conf(11, 2, w.PassingTrials[1], "pass"), conf(11, 3, w.PassingTrials[2], "pass"),
		conf(12, 1, w.FailingTrials[0], "fail"), conf(12, 2, w.FailingTrials[1], "pass"), conf(12, 3, w.FailingTrials[2], "fail"),
	}
	svg := SVG(doc)
	c := svgCounts(t, svg)
	want := map[string]int{
		"circle.passing":       3 + 1, // three at 11 and the legend's
		"path.failing":         3 + 1, // all three at 12 missed 10 s (one states pass: its value says otherwise)
		"circle.passing probe": 4 + 1,
		"circle.failing probe": 1 + 1,
		"path.lower-bound":     1 + 1, // the stopped probe's arrow and the legend's
		"title":                1 + 11,
	}
	for k, n := range want {
		if c[k] != n {
			t.Errorf("%s: %d, want %d", k, c[k], n)
		}
	}
	if !strings.Contains(svg, "probe 1 (stopped early) at concurrency 16: TTFT p95 at least 2000.0 ms") {
		t.Errorf("the stopped probe is not drawn as a lower bound at its value:\n%s", svg)
	}
}

func TestRenderingsOnEdgeDocuments(t *testing.T) {
	t.Parallel()
	base := parseReference(t)
	noneFailed := *base
	noneFailed.Workloads = []Workload{{Label: `a "quoted" <label> & | pipe`, ConfiguredISL: 128, ConfiguredOSL: 16,
		MaximumPassingConcurrency: intp(64), PassingTrials: base.Workloads[0].PassingTrials}}
	evenLowestFailed := *base
	evenLowestFailed.Workloads = []Workload{{Label: "x", FirstFailingConcurrency: intp(1), FailingTrials: base.Workloads[0].FailingTrials}}
	itlSLO := *base
	itlSLO.SLO = &SLO{Metric: "inter_token_latency", Percentile: 50, ThresholdMs: 40, Comparison: "less_than_or_equal"}
	oddSLO := *base
	oddSLO.SLO = &SLO{Metric: "queue_time", Percentile: 90, ThresholdMs: 1, Comparison: "roughly"}
	huge := *base
	hugeSLO := *base.SLO
	hugeSLO.ThresholdMs = 1.7e308
	huge.SLO = &hugeSLO // an axis of 1.1 x this overflows to +Inf
	huge.Workloads = []Workload{{Label: "huge", MaximumPassingConcurrency: intp(1 << 53), PassingTrials: base.Workloads[0].PassingTrials}}
	cases := []struct {
		name string
		doc  *Document
	}{
		{"empty", &Document{}},
		{"values at the float64 limit", &huge},
		{"nothing failed", &noneFailed},
		{"even the lowest failed", &evenLowestFailed},
		{"ITL SLO in ms", &itlSLO},
		{"SLO not in the recorded percentiles", &oddSLO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svgCounts(t, SVG(tc.doc))
			parseOpenMetrics(t, OpenMetrics(tc.doc))
			if _, err := csv.NewReader(strings.NewReader(CSV(tc.doc))).ReadAll(); err != nil {
				t.Errorf("CSV: %v", err)
			}
			md := Markdown(tc.doc)
			if !strings.HasPrefix(md, "# Capacity report") {
				t.Errorf("Markdown starts %q", md[:min(40, len(md))])
			}
		})
	}
	if md := Markdown(&evenLowestFailed); !strings.Contains(md, "| x | 0 / 0 | none (even the lowest failed) | 1 |") {
		t.Errorf("Markdown summary does not say nothing passed:\n%s", md)
	}
	if svg := SVG(&itlSLO); !strings.Contains(svg, "ITL p50 (ms)") || !strings.Contains(svg, "SLO ≤ 40 ms") {
		t.Errorf("ITL chart is not labelled in ms:\n%s", svg)
	}
	if svg := SVG(&oddSLO); strings.Contains(svg, `class="threshold"`) {
		t.Error("a chart of an SLO the trials cannot express draws a threshold")
	}
}

// A trial whose measured requests failed is "error" in the results document; the CSV and
// Markdown say the same, and OpenMetrics counts it as not having met the objectives.
func TestRenderingsCallErroredTrialsError(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	d.Workloads[0].PassingTrials[0].Correctness.Errors = 2 // its percentiles still meet the SLO
	rows, err := csv.NewReader(strings.NewReader(CSV(d))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(rows[0], "verdict")
	if col < 0 {
		t.Fatalf("CSV header %v has no verdict column", rows[0])
	}
	if got := rows[1][col]; got != "error" {
		t.Errorf("CSV verdict of the errored trial = %q, want error", got)
	}
	if got := rows[2][col]; got != "pass" {
		t.Errorf("CSV verdict of the next trial = %q, want pass", got)
	}
	if md := Markdown(d); !strings.Contains(md, "| passing | 11 | 1 | 4364.5 | 7095.0 | 11215.3 | 33.71 | 255.3 | 34.5 | error: 2 of 64 requests failed |\n") {
		t.Errorf("Markdown does not call the errored trial error:\n%s", md)
	}
	fams := parseOpenMetrics(t, OpenMetrics(d))
	w := d.Workloads[0].Label
	if got, ok := gauge(fams, "llmserve_trial_slo_met", map[string]string{"workload": w, "side": "passing", "trial": "1"}); !ok || got != 0 {
		t.Errorf("llmserve_trial_slo_met of the errored trial = %v (present %v), want 0", got, ok)
	}
}

// A workload label with a carriage return or other control characters still gives an
// exposition that parses, with the label neutralised rather than raw.
func TestOpenMetricsNeutralisesControlCharacters(t *testing.T) {
	t.Parallel()
	d := parseReference(t)
	d.Workloads[0].Label = "2K\r\n512\x00\t\"x\"\\"
	out := OpenMetrics(d)
	if strings.ContainsAny(out, "\r\x00\t") {
		t.Fatalf("exposition carries a raw control character: %q", out)
	}
	fams := parseOpenMetrics(t, out)
	want := "2K\n512\ufffd \"x\"\\"
	if _, ok := gauge(fams, "llmserve_maximum_passing_concurrency", map[string]string{"workload": want}); !ok {
		t.Errorf("no boundary gauge labelled %q", want)
	}
}
