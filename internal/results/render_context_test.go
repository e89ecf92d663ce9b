package results

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Markdown report says what the apply's warnings say about how a number was made: where
// the load ran, the engine warm-up, levels whose trials disagreed beyond their size (in the
// workload's own unit: users here) and the load generator's host load.
func TestMarkdownSaysWhereAndHowTheLoadRan(t *testing.T) {
	t.Parallel()
	d, _ := usersDocument(t)
	d.AIPerf.Version = "terraform-provider-llmserve 0.1.0"
	d.AIPerf.EngineWarmupRequests = 16
	d.Runner = &Runner{Kind: "docker", Host: "unix:///var/run/docker.sock", Network: "container:0123456789ab"}
	w := &d.Workloads[0]
	w.TrialDisagreements = []TrialDisagreement{{Concurrency: 4, Objective: "p95 time_to_first_token", Low: 1200, High: 2400, LowTrial: 1, HighTrial: 2, LowUpper: 1300, HighLower: 2300, Requests: 32}}
	for i := range w.AllTrials {
		w.AllTrials[i].Host = &HostLoad{CPUs: 2, LoadAvg1mStart: 0.8 + float64(i), LoadAvg1mEnd: 1.1 + float64(i), BusyPercent: 40 + float64(i)}
	}
	md := Markdown(d)
	for _, want := range []string{
		"| Engine warm-up | 16 requests before each workload's first trial |",
		"| Load ran | docker runner on `unix:///var/run/docker.sock`, network `container:0123456789ab` |",
		"- at 4 users, p95 time\\_to\\_first\\_token: 1200 in trial 1 but 2400 in trial 2 (+100 %)",
		"Load generator's host over",
		"1-minute load average 0.80–",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	d.Runner = nil
	if md := Markdown(d); !strings.Contains(md, "| Load ran | in the Terraform process |") {
		t.Errorf("a local run does not say where its load ran:\n%s", md)
	}
}

// The SVG keeps every trial visible and its canvas used: a passing trial just under the
// threshold and a failing one just over it at one level stand side by side (one hid the
// other), the legend shows probe symbols only when there are probes, and a single
// workload's panel spans the width its title needs.
func TestSVGKeepsCloseTrialsApartAndItsCanvasFull(t *testing.T) {
	t.Parallel()
	doc := parseReference(t)
	doc.Workloads = doc.Workloads[:1]
	doc.SLOs = []SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 1500, Comparison: StrictlyLessThan}}
	doc.SLO = nil
	w := &doc.Workloads[0]
	conf := func(c, n int, p95 float64, verdict string) Trial {
		return Trial{Kind: "confirmation", Trial: n, Concurrency: c, Verdict: verdict, TTFTMs: Stats{P95: p95},
			SLOs: []SLOResult{{Metric: "time_to_first_token", Percentile: 95, Value: p95, Met: p95 < 1500}}}
	}
	w.AllTrials = []Trial{conf(2, 1, 900, "pass"), conf(3, 1, 1496.9, "pass"), conf(3, 2, 1502.4, "fail")}
	svg := SVG(doc)
	pass := regexp.MustCompile(`<circle class="passing" cx="([0-9.]+)" cy="([0-9.]+)"[^>]*><title>confirmation[^<]*1496\.9`).FindStringSubmatch(svg)
	fail := regexp.MustCompile(`<path class="failing" d="M([0-9.]+) ([0-9.]+)L[^>]*><title>[^<]*1502\.4`).FindStringSubmatch(svg)
	if pass == nil || fail == nil {
		t.Fatalf("markers not found:\n%s", svg)
	}
	px, _ := strconv.ParseFloat(pass[1], 64)
	fx, _ := strconv.ParseFloat(fail[1], 64) // the cross's left end: its centre is 5 to the right
	if math.Abs((fx+5)-px) < 10 {
		t.Errorf("passing marker at x %.1f and failing one at %.1f overlap", px, fx+5)
	}
	if strings.Contains(svg, "probe met / missed") {
		t.Error("the legend shows probe symbols though no trial is a probe")
	}
	width, _ := strconv.ParseFloat(regexp.MustCompile(`<svg [^>]*width="([0-9.]+)"`).FindStringSubmatch(svg)[1], 64)
	frames := regexp.MustCompile(`<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" fill="none"`).FindAllStringSubmatch(svg, -1)
	if len(frames) != 1 {
		t.Fatalf("%d plot frames", len(frames))
	}
	x, _ := strconv.ParseFloat(frames[0][1], 64)
	fw, _ := strconv.ParseFloat(frames[0][2], 64)
	if right := width - (x + fw); right > 60 {
		t.Errorf("the plot ends %.0f px before the canvas does (width %.0f)", right, width)
	}
}
