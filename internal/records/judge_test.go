package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// fixture reads a recorded benchmark result of internal/results/testdata and its records
// directory: "recorded" (concurrency), "rate" (request rate) or "replay" (trace speedup).
func fixture(t *testing.T, name string) (*results.Document, string) {
	t.Helper()
	dir := filepath.Join("..", "results", "testdata", name)
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := results.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d, filepath.Join(dir, "records")
}

// benchmarkOnly is a trial with what only the running benchmark saw cleared: the server's
// and the accelerators' figures, the replicas, the host, the timing, the notes, and the
// connection set-up a records file has no key for.
func benchmarkOnly(t results.Trial) results.Trial {
	t.Server, t.Accelerators, t.Replicas, t.Host, t.Timing, t.Notes, t.ConnectionSetupMs = nil, nil, nil, nil, nil, nil, nil
	return t
}

// Every recorded fixture, one per load axis, verifies against its records, and each trial
// recomputed from its file is the document's trial byte for byte, less what only the
// running benchmark saw.
func TestRecomputeEveryAxisByteForByte(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		trials  int
	}{{"recorded", 11}, {"rate", 7}, {"replay", 7}} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			d, dir := fixture(t, tc.fixture)
			v, err := Verify(d, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !v.OK() || len(v.Trials) != tc.trials {
				t.Fatalf("%d trials, differences %v, contradictions %v", len(v.Trials), v.Differences, v.Contradictions)
			}
			for _, r := range v.Trials {
				want, err := json.Marshal(benchmarkOnly(r.Reported))
				if err != nil {
					t.Fatal(err)
				}
				got, err := json.Marshal(r.Recomputed)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: recomputed\n%s\ndocument\n%s", r.File, got, want)
				}
			}
		})
	}
}

// The benchmark's judge (metrics.Judge), given a recorded trial's records and how its run
// ended, gives the document's trial on every axis: the verdict the search saw (pass, or
// error when requests failed, or fail), the SLO results and goodput, and an open-loop
// trial's open_loop figures (schedule fidelity, both keep-up guards). Recompute goes
// through the same function, so a recompute cannot drift from the benchmark.
func TestTheBenchmarksJudgeGivesTheDocument(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"recorded", "rate", "replay"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, dir := fixture(t, name)
			n := 0
			for _, w := range d.Workloads {
				osl := w.ConfiguredOSL
				if w.TraceFile != "" {
					osl = 0 // a replayed request asks for its own output length
				}
				for _, tr := range w.AllTrials {
					lines, _, err := Read(filepath.Join(dir, tr.RecordsFile))
					if err != nil {
						t.Fatal(err)
					}
					recs := make([]load.RequestResult, len(lines))
					for i, l := range lines {
						recs[i] = l.RequestResult()
					}
					run := metrics.TrialRun{Records: recs, SLOs: d.Objectives(), RequestedOSL: osl, Confirmation: tr.Kind == "confirmation",
						Stopped: tr.StoppedEarly, WaitedOut: tr.StoppedEarly && tr.GoodputPercent == nil}
					if tr.OpenLoop != nil {
						run.OpenLoop = &metrics.OpenLoopRun{Arrival: tr.OpenLoop.Arrival, Rate: tr.RequestRate}
					}
					j, err := metrics.Judge(run)
					if err != nil {
						t.Fatalf("%s: %v", tr.RecordsFile, err)
					}
					verdict := "fail"
					switch {
					case j.Pass:
						verdict = "pass"
					case j.Failed > 0:
						verdict = "error"
					}
					if verdict != tr.Verdict {
						t.Errorf("%s: judged %s (%+v), the document says %s", tr.RecordsFile, verdict, j, tr.Verdict)
					}
					if !reflect.DeepEqual(j.Trial.SLOs, tr.SLOs) || !reflect.DeepEqual(j.Trial.GoodputPercent, tr.GoodputPercent) {
						t.Errorf("%s: judged SLOs %+v goodput %v, the document %+v %v", tr.RecordsFile, j.Trial.SLOs, j.Trial.GoodputPercent, tr.SLOs, tr.GoodputPercent)
					}
					if !reflect.DeepEqual(j.Trial.OpenLoop, tr.OpenLoop) {
						t.Errorf("%s: judged open_loop %+v, the document %+v", tr.RecordsFile, j.Trial.OpenLoop, tr.OpenLoop)
					}
					if (name == "recorded") != (tr.OpenLoop == nil) {
						t.Errorf("%s: open_loop %+v on the %s axis", tr.RecordsFile, tr.OpenLoop, name)
					}
					n++
				}
			}
			if n == 0 {
				t.Fatal("no trials")
			}
		})
	}
}

// Every recorded trial's records_file is the one rule's name for it: FileName by
// concurrency, RateFileName by request rate or, for a replay, by speedup.
func TestFileNamesOfEveryAxis(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"recorded", "rate", "replay"} {
		d, _ := fixture(t, name)
		for i, w := range d.Workloads {
			for _, tr := range w.AllTrials {
				var want string
				switch {
				case tr.Speedup > 0:
					want = RateFileName(i, w.Label, tr.Kind, tr.Speedup, tr.Trial)
				case tr.RequestRate > 0:
					want = RateFileName(i, w.Label, tr.Kind, tr.RequestRate, tr.Trial)
				default:
					want = FileName(i, w.Label, tr.Kind, tr.Concurrency, tr.Trial)
				}
				if filepath.ToSlash(want) != tr.RecordsFile {
					t.Errorf("%s: %s %d named %s, the document %s", name, tr.Kind, tr.Trial, want, tr.RecordsFile)
				}
			}
		}
	}
}

// A probe the benchmark kept although its metrics could not be computed (the server sent no
// usage) recomputes from its file as the benchmark judged it: the judge's rule, that only a
// confirmation's metrics must compute, is the recompute's too. Before the one judge, the
// recompute refused it ("server sent no usage").
func TestRecomputeProbeWithoutUsage(t *testing.T) {
	t.Parallel()
	sent := time.Unix(1_800_000_000, 0)
	var recs []load.RequestResult
	for i := range 4 {
		s := sent.Add(time.Duration(i) * 100 * time.Millisecond)
		recs = append(recs, load.RequestResult{Index: i, Sent: s, Headers: s.Add(time.Millisecond), FirstContent: s.Add(20 * time.Millisecond),
			LastContent: s.Add(200 * time.Millisecond), Done: s.Add(201 * time.Millisecond), HTTPStatus: 200, FinishReason: "stop", ContentChunks: 8})
	}
	slos := []results.SLO{{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 100}}
	j, err := metrics.Judge(metrics.TrialRun{Records: recs, SLOs: slos, RequestedOSL: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.Summarize(recs, 8); !errors.Is(err, metrics.ErrNoUsage) {
		t.Fatalf("the records' metrics compute: %v", err)
	}
	trial := j.Trial
	trial.RecordsFile, trial.Trial, trial.Concurrency, trial.Kind, trial.Verdict = "p.jsonl", 1, 4, "probe", "pass"
	dir := t.TempDir()
	if _, err := Write(dir, trial.RecordsFile, FromLoad(Trial{Workload: "w", Concurrency: 4, Index: 1}, recs)); err != nil {
		t.Fatal(err)
	}
	doc := &results.Document{SLOs: slos, Workloads: []results.Workload{{Label: "w", ConfiguredOSL: 8, AllTrials: []results.Trial{trial}}}}
	got, err := Recompute(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Differences) > 0 {
		t.Fatalf("recomputed %+v", got)
	}
}
