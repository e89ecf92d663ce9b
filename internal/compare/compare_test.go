package compare

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var ttft = results.SLO{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 1000, Comparison: results.StrictlyLessThan}

// trials builds full confirmation trials at level c with the given p95 TTFT values.
func trials(c int, values ...float64) []results.Trial {
	out := make([]results.Trial, len(values))
	for i, v := range values {
		out[i] = results.Trial{Trial: i + 1, Concurrency: c, Kind: "confirmation", Verdict: "pass",
			SLOs: []results.SLOResult{{Metric: ttft.Metric, Percentile: 95, Value: v, Met: v < ttft.ThresholdMs}}}
	}
	return out
}

func ptr(v int) *int { return &v }

func doc(capacity int, ts ...[]results.Trial) *results.Document {
	w := results.Workload{Label: "2K / 512", ConfiguredISL: 2048, ConfiguredOSL: 512,
		MaximumPassingConcurrency: ptr(capacity), FirstFailingConcurrency: ptr(capacity + 1)}
	for _, t := range ts {
		w.AllTrials = append(w.AllTrials, t...)
	}
	return &results.Document{SchemaVersion: 1, Experiment: results.Experiment{Model: "m", ImageTag: "lmsysorg/sglang:v0.5.1"},
		AIPerf: results.Protocol{ArrivalPattern: "closed-loop concurrency burst", Streaming: true, IgnoreEOS: true,
			WarmupsPerTrial: 8, MeasuredRequestsPerTrial: 64, IndependentTrialsPerBoundarySide: 3},
		SLOs: []results.SLO{ttft}, Workloads: []results.Workload{w}}
}

func TestCompareVerdicts(t *testing.T) {
	t.Parallel()
	base := doc(4, trials(4, 900, 904.5, 895.5), trials(5, 1100, 1105.5, 1094.5))
	tests := []struct {
		name    string
		current *results.Document
		verdict string
		// change is the expected relative change, computed by hand: geometric means of
		// the current over the baseline trials, pooled with equal weights over the levels.
		change float64
	}{
		{"identical", base, Unchanged, 0},
		// Every value 15 % higher: the spread within a level (±2 %) is far below it.
		{"15 % slower", doc(3, trials(4, 1035, 1055.7, 1014.3), trials(5, 1265, 1290.3, 1239.7)), Regressed, 0.15},
		{"15 % faster", doc(5, trials(4, 765, 780.3, 749.7), trials(5, 935, 953.7, 916.3)), Improved, -0.15},
		// 3 % higher with trials within ±0.5 %: beyond the noise (t ≈ 7), but below the 5 %
		// that counts.
		{"3 % slower", doc(4, trials(4, 927, 931.635, 922.365), trials(5, 1133, 1138.665, 1127.335)), Unchanged, 0.03},
		// 15 % higher on average, but the trials spread ±30 %: not beyond the noise, and not
		// shown within ±10 % either (its interval runs from -17 to +49 %).
		{"noisy", doc(4, trials(4, 1035*0.7, 1035, 1035*1.3), trials(5, 1265*0.7, 1265, 1265*1.3)), Inconclusive, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Compare(base, tc.current, Options{})
			if len(r.Refused) != 0 || len(r.Workloads) != 1 {
				t.Fatalf("refused %q, %d workloads", r.Refused, len(r.Workloads))
			}
			w := r.Workloads[0]
			if w.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %s", w.Verdict, tc.verdict, w.Reason)
			}
			ob := w.Objectives[0]
			wantSource := "trials"
			if tc.name == "identical" {
				// The same document twice is one measurement read twice: no uncertainty.
				wantSource = "identical"
			}
			if len(ob.Levels) != 2 || ob.Levels[0].Concurrency != 4 || ob.Levels[1].Concurrency != 5 || ob.NoiseSource != wantSource {
				t.Errorf("levels %+v, noise from %q", ob.Levels, ob.NoiseSource)
			}
			if !math.IsNaN(tc.change) && math.Abs(ob.Change-tc.change) > 0.001 {
				t.Errorf("change %.4f, want %.4f", ob.Change, tc.change)
			}
			if tc.name == "3 % slower" && ob.T < ob.Critical {
				t.Errorf("t = %.2f below %.2f: the case should be decided by the 5 %% floor, not the noise", ob.T, ob.Critical)
			}
			if !strings.Contains(w.Reason, "p95 time_to_first_token") || !strings.Contains(w.Reason, "capacity 4 →") {
				t.Errorf("reason %q does not name the objective and the capacities", w.Reason)
			}
		})
	}
}

// The critical t for 8 degrees of freedom (2 levels × 2 runs × (3 − 1)) at a two-sided 5 %
// is 2.306 (tables); the noise is the pooled spread over √(Σ weights) = √3.
func TestCompareStatistics(t *testing.T) {
	t.Parallel()
	base := doc(4, trials(4, 900, 918, 882), trials(5, 1100, 1122, 1078))
	cur := doc(3, trials(4, 1035, 1055.7, 1014.3), trials(5, 1265, 1290.3, 1239.7))
	ob := Compare(base, cur, Options{}).Workloads[0].Objectives[0]
	if math.Abs(ob.Critical-2.306) > 0.001 {
		t.Errorf("critical t %.4f, want 2.306", ob.Critical)
	}
	// Each level's values are m·(1, 1.02, 0.98): in logs, deviations from their mean.
	l := []float64{math.Log(1), math.Log(1.02), math.Log(0.98)}
	mean := (l[0] + l[1] + l[2]) / 3
	ss := 0.0
	for _, x := range l {
		ss += (x - mean) * (x - mean)
	}
	s := math.Sqrt(4 * ss / 8) // four level-runs alike, 8 degrees of freedom
	if want := math.Expm1(s / math.Sqrt(3)); math.Abs(ob.Noise-want) > 1e-9 {
		t.Errorf("noise %.6f, want %.6f", ob.Noise, want)
	}
}

func TestTQuantile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ p, df, want float64 }{
		{0.975, 4, 2.7764}, {0.995, 10, 3.1693}, {0.975, math.Inf(1), 1.9600}, {0.9975, 20, 3.1534}, {0.5, 3, 0},
	} {
		if got := tQuantile(tc.p, tc.df); math.Abs(got-tc.want) > 0.0005 {
			t.Errorf("t(%v, %v) = %.4f, want %.4f", tc.p, tc.df, got, tc.want)
		}
	}
}

// F quantiles from tables.
func TestFQuantile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ p, d1, d2, want float64 }{
		{0.95, 4, 8, 3.8379}, {0.95, 2, 20, 3.4928}, {0.99, 5, 10, 5.6363}, {0.95, 3, 1e6, 2.6049},
	} {
		if got := fQuantile(tc.p, tc.d1, tc.d2); math.Abs(got-tc.want) > 0.001 {
			t.Errorf("F(%v; %v, %v) = %.4f, want %.4f", tc.p, tc.d1, tc.d2, got, tc.want)
		}
	}
}

func TestCompareRefusesOtherProtocols(t *testing.T) {
	t.Parallel()
	base := doc(4, trials(4, 900, 918, 882))
	tests := []struct {
		name   string
		change func(d *results.Document)
		want   string // in Refused
	}{
		{"objective", func(d *results.Document) { d.SLOs[0].Metric = results.MetricITL }, "objectives differ"},
		{"percentile", func(d *results.Document) { d.SLOs[0].Percentile = 99 }, "objectives differ"},
		{"measured requests", func(d *results.Document) { d.AIPerf.MeasuredRequestsPerTrial = 32 }, "measured requests per trial differ: baseline 64, current 32"},
		{"model", func(d *results.Document) { d.Experiment.Model = "other" }, `model differs: baseline "m", current "other"`},
		{"engine", func(d *results.Document) { d.Experiment.ImageTag = "vllm/vllm-openai:v0.11.0" }, "engine image differs: baseline lmsysorg/sglang, current vllm/vllm-openai"},
		{"arrival", func(d *results.Document) { d.AIPerf.ArrivalPattern = "open-loop poisson" }, "arrival pattern differs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := doc(4, trials(4, 1500, 1500, 1500))
			tc.change(cur)
			r := Compare(base, cur, Options{})
			if len(r.Refused) != 1 || !strings.Contains(r.Refused[0], tc.want) {
				t.Fatalf("refused %q, want one saying %q", r.Refused, tc.want)
			}
			if r.Workloads[0].Verdict != Incomparable || len(r.Regressed()) != 0 {
				t.Errorf("verdict %s, want incomparable", r.Workloads[0].Verdict)
			}
			if !strings.Contains(r.Summary(), "not compared: "+tc.want) {
				t.Errorf("summary %q", r.Summary())
			}
		})
	}
}

func TestCompareFlagsSetupDifferences(t *testing.T) {
	t.Parallel()
	base := doc(4, trials(4, 900, 918, 882))
	cur := doc(4, trials(4, 900, 918, 882))
	cur.Experiment.ImageTag = "lmsysorg/sglang:v0.5.2" // a new release of the same engine: the point of comparing
	cur.SLOs[0].ThresholdMs = 2000
	cur.AIPerf.IndependentTrialsPerBoundarySide = 5
	r := Compare(base, cur, Options{})
	if len(r.Refused) != 0 || len(r.Flagged) != 2 || r.Workloads[0].Verdict != Unchanged {
		t.Fatalf("refused %q flagged %q verdict %s", r.Refused, r.Flagged, r.Workloads[0].Verdict)
	}
	if !strings.Contains(r.Flagged[0], "p95 TTFT < 1000 ms") || !strings.Contains(r.Flagged[1], "confirmation trials per boundary side: baseline 3, current 5") {
		t.Errorf("flagged %q", r.Flagged)
	}
	// Each side is judged by its own threshold: 900 ms misses neither 1000 nor 2000 ms, but
	// 1500 ms misses the baseline's 1000 ms and meets the current's 2000 ms.
	base.Workloads[0].AllTrials = append(base.Workloads[0].AllTrials, trials(6, 1500, 1500, 1500)...)
	cur.Workloads[0].AllTrials = append(cur.Workloads[0].AllTrials, trials(6, 1500, 1500, 1500)...)
	levels := Compare(base, cur, Options{}).Workloads[0].Objectives[0].Levels
	if l := levels[len(levels)-1]; l.Concurrency != 6 || l.BaselinePass || !l.CurrentPass {
		t.Errorf("level %+v: the baseline missed its 1000 ms, the current met its 2000 ms", l)
	}
}

func TestCompareWorkloads(t *testing.T) {
	t.Parallel()
	base := doc(4, trials(4, 900, 918, 882))
	other := base.Workloads[0]
	other.Label = "8K / 1K"
	base.Workloads = append(base.Workloads, other)
	cur := doc(4, trials(4, 900, 918, 882))
	longer := cur.Workloads[0]
	longer.ConfiguredOSL = 1024
	longer.Label = "16K / 2K"
	cur.Workloads = append(cur.Workloads, longer)
	cur.Workloads[0].ConfiguredISL = 4096
	r := Compare(base, cur, Options{})
	if len(r.Workloads) != 1 || r.Workloads[0].Verdict != Incomparable || !strings.Contains(r.Workloads[0].Reason, "input tokens: baseline 2048, current 4096") {
		t.Fatalf("workloads %+v", r.Workloads)
	}
	if len(r.OnlyInBaseline) != 1 || r.OnlyInBaseline[0] != "8K / 1K" || len(r.OnlyInCurrent) != 1 || r.OnlyInCurrent[0] != "16K / 2K" {
		t.Errorf("only in baseline %q, only in current %q", r.OnlyInBaseline, r.OnlyInCurrent)
	}
}

// Without a level in common the boundaries decide, and the workload says so.
func TestCompareBoundariesAlone(t *testing.T) {
	t.Parallel()
	base := doc(8, trials(8, 900, 918, 882), trials(9, 1100, 1122, 1078))
	tests := []struct {
		name    string
		current *results.Document
		verdict string
	}{
		{"fails where the baseline passed", doc(5, trials(5, 900, 918, 882), trials(6, 1100, 1122, 1078)), Regressed},
		{"passes where the baseline failed", doc(11, trials(11, 900, 918, 882), trials(12, 1100, 1122, 1078)), Improved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Compare(base, tc.current, Options{}).Workloads[0]
			if w.Verdict != tc.verdict || len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "boundaries alone") {
				t.Errorf("verdict %s (%s), notes %q", w.Verdict, w.Reason, w.Notes)
			}
		})
	}
}

// Probes stopped early and trials with failed requests are not evidence; one trial per level
// and no records leave the noise assumed, which the workload says.
func TestCompareSkipsPartialTrialsAndAssumesNoise(t *testing.T) {
	t.Parallel()
	stopped := trials(4, 5000)
	stopped[0].StoppedEarly, stopped[0].Kind = true, "probe"
	errored := trials(6, 5000)
	errored[0].Verdict = "error"
	base := doc(4, trials(4, 900), trials(6, 1000))
	cur := doc(4, stopped, errored, trials(5, 950), trials(6, 1000))
	w := Compare(base, cur, Options{}).Workloads[0]
	ob := w.Objectives[0]
	if len(ob.Levels) != 1 || ob.Levels[0].Concurrency != 6 || ob.Levels[0].CurrentN != 1 || ob.NoiseSource != "assumed" {
		t.Fatalf("levels %+v, noise from %q", ob.Levels, ob.NoiseSource)
	}
	// One trial a level at an assumed 10 % cannot show a change within ±10 %.
	if w.Verdict != Inconclusive || len(w.Notes) != 2 || !strings.Contains(w.Notes[0], "noise assumed is 10 %") || !strings.Contains(w.Notes[1], "to decide") {
		t.Errorf("verdict %s, notes %q", w.Verdict, w.Notes)
	}
}

// With one trial per level, per-request records give the noise by bootstrap: 64 values
// spread ±1 % make a 15 % change certain; spread over a factor of 20 (e^±1.5), nothing can be
// told.
func TestCompareBootstrapOverRecords(t *testing.T) {
	t.Parallel()
	base := doc(4, trials(4, 900), trials(5, 1100))
	cur := doc(4, trials(4, 1035), trials(5, 1265))
	for _, tc := range []struct {
		name    string
		spread  float64
		verdict string
	}{{"tight", 0.02, Regressed}, {"wide", 3, Inconclusive}} {
		t.Run(tc.name, func(t *testing.T) {
			samples := func(_ string, tr results.Trial, _ string) ([]float64, bool) {
				vs := make([]float64, 64)
				for i := range vs {
					vs[i] = tr.SLOs[0].Value * math.Exp(tc.spread*float64(i-32)/64)
				}
				return vs, true
			}
			ob := Compare(base, cur, Options{Baseline: samples, Current: samples}).Workloads[0].Objectives[0]
			if ob.NoiseSource != "records" || ob.Verdict != tc.verdict {
				t.Errorf("noise from %q (± %.3f), verdict %s, want records and %s", ob.NoiseSource, ob.Noise, ob.Verdict, tc.verdict)
			}
		})
	}
}

// A throughput objective: lower is worse, so a drop is a regression.
func TestCompareHigherIsBetter(t *testing.T) {
	t.Parallel()
	slo := results.SLO{Metric: results.MetricPerUserThroughput, Percentile: 50, ThresholdMs: 10, Comparison: results.GreaterThan}
	mk := func(vals ...float64) *results.Document {
		d := doc(4)
		d.SLOs = []results.SLO{slo}
		for i, v := range vals {
			d.Workloads[0].AllTrials = append(d.Workloads[0].AllTrials, results.Trial{Trial: i + 1, Concurrency: 4, Verdict: "pass",
				SLOs: []results.SLOResult{{Metric: slo.Metric, Percentile: 50, Value: v, Met: true}}})
		}
		return d
	}
	w := Compare(mk(30, 30.6, 29.4), mk(25.5, 26.01, 24.99), Options{}).Workloads[0]
	if w.Verdict != Regressed || math.Abs(w.Objectives[0].Change-(30/25.5-1)) > 0.001 {
		t.Errorf("verdict %s, change %.4f, want regressed and %.4f", w.Verdict, w.Objectives[0].Change, 30/25.5-1)
	}
}

func readDoc(t *testing.T, name string) *results.Document {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := results.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The test documents are capacity runs of the simulated engine through the real run path
// (HTTP, streaming client, search): the same server twice, and once 15 % slower. The same
// server measured +8.3 % with an interval of -9 to +29 %: not a regression, but not shown to be
// unchanged either (it was "unchanged" before issue 32).
func TestCompareRealRuns(t *testing.T) {
	t.Parallel()
	base := readDoc(t, "baseline")
	for _, tc := range []struct {
		name, verdict string
	}{{"same", Inconclusive}, {"slower", Regressed}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compare(base, readDoc(t, tc.name), Options{})
			t.Log("\n" + r.Summary())
			if len(r.Refused) != 0 || len(r.Workloads) != 1 || r.Workloads[0].Verdict != tc.verdict {
				t.Fatalf("want %s:\n%s", tc.verdict, r.Summary())
			}
			// The runs name two tags of one image (v0.5.4, v0.5.5): what is compared, not a
			// difference of setup.
			if len(r.Flagged) != 0 {
				t.Errorf("flagged %q", r.Flagged)
			}
		})
	}
}
