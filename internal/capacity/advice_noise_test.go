package capacity

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

var noiseSLO = results.SLO{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 500, Comparison: results.StrictlyLessThan}

// noiseTrial is a confirmation trial of 64 requests whose TTFT percentiles are scaled from one
// shape, so its p95 is p95.
func noiseTrial(index int, p95 float64) results.Trial {
	f := p95 / 100
	return results.Trial{Kind: "confirmation", Trial: index,
		TTFTMs:      results.Stats{Min: 40 * f, P1: 41 * f, P5: 45 * f, P10: 50 * f, P25: 60 * f, P50: 70 * f, P75: 85 * f, P90: 95 * f, P95: 100 * f, P99: 108 * f, Max: 110 * f, Avg: 72 * f, Std: 20 * f},
		SLOs:        []results.SLOResult{{Metric: noiseSLO.Metric, Percentile: 95, Value: p95, Met: noiseSLO.Meets(p95)}},
		Correctness: results.Correctness{ProfilingRecords: 64, HTTP200: 64}}
}

func at(c int, t results.Trial) results.Trial { t.Concurrency = c; return t }
func atRate(r float64, t results.Trial) results.Trial {
	t.RequestRate = r
	t.OpenLoop = &results.OpenLoopTrial{KeptUp: true}
	return t
}
func atSpeedup(x float64, t results.Trial) results.Trial { t = atRate(5*x, t); t.Speedup = x; return t }

// A curve that goes up and down warns at apply, on every axis, naming the levels in the
// axis' words, at the workload's boundary attribute.
func TestNonMonotoneWarnsOnEveryAxis(t *testing.T) {
	t.Parallel()
	fail := func(tr results.Trial) results.Trial {
		tr.SLOs[0].Value, tr.SLOs[0].Met = 600, false
		tr.TTFTMs.P95 = 600
		return tr
	}
	conc := results.Workload{Label: "users", AllTrials: []results.Trial{at(2, noiseTrial(1, 100)), at(3, fail(noiseTrial(1, 100))), at(4, noiseTrial(1, 100)), at(5, fail(noiseTrial(1, 100)))}}
	rate := results.Workload{Label: "rate", AllTrials: []results.Trial{atRate(2.676, fail(noiseTrial(1, 100))), atRate(3.076, noiseTrial(1, 100)), atRate(3.5, fail(noiseTrial(1, 100)))}}
	replay := results.Workload{Label: "replay", AllTrials: []results.Trial{atSpeedup(1, fail(noiseTrial(1, 100))), atSpeedup(1.25, noiseTrial(1, 100)), atSpeedup(1.5, fail(noiseTrial(1, 100)))}}
	doc := &results.Document{SLOs: []results.SLO{noiseSLO}, Workloads: []results.Workload{conc, rate, replay}}
	for i := range doc.Workloads {
		h, err := results.DeriveHeadline(doc.SLOs, doc.Workloads[i])
		if err != nil {
			t.Fatal(err)
		}
		h.Apply(&doc.Workloads[i])
	}
	got := Config{}.ResultWarnings(doc)
	for _, want := range []struct{ path, says string }{
		{`maximum_passing_concurrency["users"]`, "concurrency 4 passed although concurrency 3 failed"},
		{`maximum_passing_request_rate["rate"]`, "3.08 requests/s passed although 2.68 requests/s failed"},
		{`maximum_passing_speedup["replay"]`, "speed-up 1.25× (6.25 requests/s) passed although speed-up 1× (5 requests/s) failed"},
	} {
		found := false
		for _, p := range got {
			found = found || p.Warning && p.Path.String() == want.path && strings.Contains(p.Detail, want.says) && strings.Contains(p.Summary, "goes up and down")
		}
		if !found {
			t.Errorf("no warning at %s saying %q; got %+v", want.path, want.says, got)
		}
	}
}

// Confirmation trials at one level whose p95 lie farther apart than 64 requests each explain,
// and by more than the 10 % band, are a disagreement the document records and the apply
// warns about; trials 4 % apart are not.
func TestDisagreeingTrialsWarn(t *testing.T) {
	t.Parallel()
	w := results.Workload{Label: "chat", AllTrials: []results.Trial{
		at(4, noiseTrial(1, 100)), at(4, noiseTrial(2, 104)), // 4 %: within noise and the band
		at(5, noiseTrial(1, 120)), at(5, noiseTrial(2, 200)), // 67 %: beyond both
	}}
	ds := results.Disagreements([]results.SLO{noiseSLO}, w)
	if len(ds) != 1 {
		t.Fatalf("disagreements %+v, want one at concurrency 5", ds)
	}
	d := ds[0]
	// By hand: CV = 20/72 · √(64/63), σ = √ln(1 + CV²) = 0.27471; se = σ · √(0.95 · 0.05/64) /
	// φ(1.6449) = 0.072564 per trial; the intervals part at c = 2.3263/√2 = 1.6450 standard
	// errors: 120 · e^(1.6450 · 0.072564) = 135.21 and 200 · e^(−1.6450 · 0.072564) = 177.50.
	if d.Concurrency != 5 || d.Low != 120 || d.High != 200 || d.LowTrial != 1 || d.HighTrial != 2 || d.Requests != 64 ||
		math.Abs(d.LowUpper-135.21) > 0.01 || math.Abs(d.HighLower-177.50) > 0.01 || d.Objective != "p95 time_to_first_token" {
		t.Errorf("disagreement %+v", d)
	}
	w.TrialDisagreements = ds
	doc := &results.Document{SLOs: []results.SLO{noiseSLO}, Workloads: []results.Workload{w}}
	found := false
	for _, p := range (Config{}).ResultWarnings(doc) {
		found = found || strings.Contains(p.Summary, `Confirmation trials of workload "chat" disagree beyond their size`) &&
			strings.Contains(p.Detail, "at concurrency 5, p95 time_to_first_token was 120 ms in trial 1 but 200 ms in trial 2 (+67 %: beyond what their 64 requests explain")
	}
	if !found {
		t.Errorf("no disagreement warning: %+v", (Config{}).ResultWarnings(doc))
	}
}

// The host's figures: read from a /proc of the test's own, turned into a trial's host block,
// and a busy host (steal, or a load average rising by more than the CPUs) warns at apply.
func TestHostLoadWarns(t *testing.T) {
	t.Parallel()
	proc := func(load, stat string) string {
		dir := t.TempDir()
		for name, body := range map[string]string{"loadavg": load, "stat": stat} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// user nice system idle iowait irq softirq steal; two CPUs.
	start := sampleHostAt(proc("0.50 0.40 0.30 1/100 42\n", "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\ncpu1 50 0 25 400 25 0 0 0 0 0\nintr 1\n"))
	end := sampleHostAt(proc("3.10 1.00 0.50 5/100 43\n", "cpu  250 0 100 900 50 0 0 100 0 0\ncpu0 125 0 50 450 25 0 0 50 0 0\ncpu1 125 0 50 450 25 0 0 50 0 0\n"))
	h := hostLoad(start, end)
	// 400 ticks passed: 100 idle (25 % idle → 75 % busy), 100 steal (25 %).
	if h == nil || h.CPUs != 2 || h.LoadAvg1mStart != 0.5 || h.LoadAvg1mEnd != 3.1 || h.BusyPercent != 75 || h.StealPercent != 25 {
		t.Fatalf("host %+v", h)
	}
	// iowait ran backwards by 50 ticks while 60 were stolen: 10 ticks passed in all. The
	// figures stay within what a results document may hold (100 % busy, steal within it).
	backwards := sampleHostAt(proc("0.50 0.40 0.30 1/100 42\n", "cpu  100 0 50 800 0 0 0 60 0 0\ncpu0 50 0 25 400 0 0 0 30 0 0\ncpu1 50 0 25 400 0 0 0 30 0 0\n"))
	if h := hostLoad(start, backwards); h == nil || h.BusyPercent != 100 || h.StealPercent != 100 {
		t.Errorf("host with a counter running backwards %+v, want 100 %% busy and 100 %% steal", h)
	}
	if hostLoad(start, sampleHostAt(t.TempDir())) != nil {
		t.Error("a /proc that cannot be read gives a host block")
	}
	tr := at(4, noiseTrial(1, 100))
	tr.Host = h
	w := results.Workload{Label: "chat", PassingTrials: []results.Trial{tr}, MaximumPassingConcurrency: new(int)}
	*w.MaximumPassingConcurrency = 4
	found := false
	for _, p := range (Config{}).ResultWarnings(&results.Document{SLOs: []results.SLO{noiseSLO}, Workloads: []results.Workload{w}}) {
		found = found || strings.Contains(p.Detail, "passing trial 1 at concurrency 4: the hypervisor took 25.0 % of the CPUs' time (steal), and the 1-minute load average rose from 0.50 to 3.10 on 2 CPUs")
	}
	if !found {
		t.Error("no busy-host warning")
	}
	if hostBusy(&results.HostLoad{CPUs: 2, LoadAvg1mStart: 1, LoadAvg1mEnd: 2.9, StealPercent: 4.9}) != "" {
		t.Error("a rise within the CPUs and little steal is not busy")
	}

	// A real trial records its host on Linux, and the document round-trips it.
	if _, err := os.Stat("/proc/stat"); err != nil {
		return
	}
	srv := httptest.NewServer(twoSlotEngine(t, simengine.Options{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.MinConcurrency, cfg.MaxConcurrency, cfg.ConfirmationTrials, cfg.MeasuredRequests = 1, 1, 1, 4
	doc, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := doc.Workloads[0].AllTrials[0].Host
	if got == nil || got.CPUs < 1 || got.BusyPercent < 0 || got.BusyPercent > 100 {
		t.Fatalf("a real trial's host %+v", got)
	}
	back := roundTrip(t, doc)
	if h := back.Workloads[0].AllTrials[0].Host; h == nil || *h != *got {
		t.Errorf("host after a round trip %+v, want %+v", h, got)
	}
}
