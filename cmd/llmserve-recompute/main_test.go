package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// The keys of every records line of a run with record_chunk_times, as issue 11 lists them.
var lineKeys = []string{
	"workload", "concurrency", "trial", "kind", "index", "sent_ns", "headers_ns", "first_token_ns", "last_token_ns",
	"chunks", "prompt_tokens", "completion_tokens", "cached_tokens", "finish_reason", "http_status", "error_kind", "error",
	"chunk_offsets_ns",
	"prompt_hash", "output_hash", "output_code_points", "dominant_code_point", "dominant_code_points", "output_head",
}

// TestRecomputeMatchesTheBenchmark runs a real benchmark (closed-loop HTTP against the
// simulated engine, probes stopped early included) with records, then recomputes every
// trial from its records file: every value must be identical. A changed number in the
// document, or a changed records file, is caught.
func TestRecomputeMatchesTheBenchmark(t *testing.T) {
	engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	defer srv.Close()
	dir := t.TempDir()
	cfg := capacity.Config{
		Endpoint: srv.URL, Model: "sim", API: "chat",
		Workloads: []capacity.Workload{{Label: "64 / 8", InputTokens: 64, OutputTokens: 8}},
		SLOs: []results.SLO{
			{Metric: results.MetricTTFT, Percentile: 95, ThresholdMs: 150},
			{Metric: results.MetricGoodput, ThresholdMs: 50},
		},
		// Wide enough for the search to probe: it walks up narrow ranges with confirmation trials.
		MinConcurrency: 1, MaxConcurrency: 16,
		WarmupRequests: 1, MeasuredRequests: 8, ConfirmationTrials: 2,
		CacheFlush: "auto", Seed: 1,
		RecordsDirectory: filepath.Join(dir, "records"), RecordChunkTimes: true,
	}
	doc, raw, resultsPath := runToFile(t, cfg, dir)

	trials := doc.Workloads[0].AllTrials
	probes := 0
	for _, tr := range trials {
		if tr.RecordsFile == "" || len(tr.RecordsSHA256) != 64 {
			t.Fatalf("trial %+v names no records file", tr)
		}
		if tr.Kind == "probe" {
			probes++
		}
		checkLines(t, filepath.Join(cfg.RecordsDirectory, tr.RecordsFile), tr)
	}
	if probes == 0 {
		t.Fatal("the search ran no probe; the test must cover one")
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"-results", resultsPath, "-records", cfg.RecordsDirectory, "-check"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	var out output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	// Connection set-up is measured but not in the records: said, printed nowhere.
	if !strings.Contains(stderr.String(), "connection_setup_ms is not derivable") || strings.Contains(stdout.String(), "connection_setup_ms") {
		t.Errorf("connection_setup_ms not declared underivable:\nstderr %s", stderr.String())
	}
	if trials[0].ConnectionSetupMs == nil {
		t.Error("the benchmark reported no connection_setup_ms")
	}
	if len(out.Workloads) != 1 || len(out.Workloads[0].Trials) != len(trials) {
		t.Fatalf("recomputed %d workloads, want 1 with %d trials", len(out.Workloads), len(trials))
	}
	// Spot-check the printed form against the document, beyond the -check comparison.
	for i, got := range out.Workloads[0].Trials {
		if want := trials[i]; got.TTFTMs.P95 != want.TTFTMs.P95 || got.BenchmarkDurationS != want.BenchmarkDurationS || got.Concurrency != want.Concurrency {
			t.Errorf("trial %d printed as p95 %v duration %v at %d, document %v %v at %d", i, got.TTFTMs.P95, got.BenchmarkDurationS, got.Concurrency,
				want.TTFTMs.P95, want.BenchmarkDurationS, want.Concurrency)
		}
	}

	// A changed number in the document is a difference.
	tampered := *doc
	tampered.Workloads = slices.Clone(doc.Workloads)
	tampered.Workloads[0].AllTrials = slices.Clone(trials)
	tampered.Workloads[0].AllTrials[0].ITLMs.P90 += 1e-9
	raw2, _ := results.Marshal(&tampered)
	if err := os.WriteFile(resultsPath, raw2, 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"-results", resultsPath, "-records", cfg.RecordsDirectory, "-check"}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "itl_ms.p90") {
		t.Fatalf("tampered document: exit %d, stderr %s", code, stderr.String())
	}

	forgedHeadline(t, doc, raw, resultsPath, cfg.RecordsDirectory)

	// A changed records file no longer matches its checksum.
	if err := os.WriteFile(resultsPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	recPath := filepath.Join(cfg.RecordsDirectory, trials[0].RecordsFile)
	body, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recPath, bytes.Replace(body, []byte(`"workload":"64 / 8"`), []byte(`"workload":"64 / 9"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"-results", resultsPath, "-records", cfg.RecordsDirectory}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "SHA-256") {
		t.Fatalf("changed records file: exit %d, stderr %s", code, stderr.String())
	}
}

// forgedHeadline: a maximum_passing_concurrency edited upwards (its trials still showing
// the level above it failing) fails -check naming the workload, the field, the stated and
// the derived value; so does a document forged consistently (a failing level's trials
// rewritten to pass, and the headline with them), which only the records can refute.
func forgedHeadline(t *testing.T, doc *results.Document, raw []byte, resultsPath, recordsDir string) {
	t.Helper()
	w := doc.Workloads[0]
	if w.MaximumPassingConcurrency == nil || w.FirstFailingConcurrency == nil {
		t.Fatalf("the run found no boundary to forge: %v %v", w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
	}
	mp, ff := *w.MaximumPassingConcurrency, *w.FirstFailingConcurrency
	stated := fmt.Sprintf(`"maximum_passing_concurrency": %d`, mp)
	forged := strings.Replace(string(raw), stated, fmt.Sprintf(`"maximum_passing_concurrency": %d`, mp+2), 1)
	if forged == string(raw) {
		t.Fatalf("document lacks %s", stated)
	}
	if err := os.WriteFile(resultsPath, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run([]string{"-results", resultsPath, "-records", recordsDir, "-check"}, &bytes.Buffer{}, &stderr)
	want := fmt.Sprintf(`workloads[0].maximum_passing_concurrency: workload "64 / 8": maximum_passing_concurrency states %d, but its trials give %d`, mp+2, mp)
	if code != 1 || !strings.Contains(stderr.String(), want) {
		t.Fatalf("forged headline: exit %d, stderr %s\nwant %s", code, stderr.String(), want)
	}

	// Consistent forgery: the first failing level's confirmation trials now pass.
	tampered := *doc
	tampered.Workloads = slices.Clone(doc.Workloads)
	tw := &tampered.Workloads[0]
	tw.AllTrials = slices.Clone(w.AllTrials)
	for i := range tw.AllTrials {
		tr := &tw.AllTrials[i]
		if tr.Concurrency != ff || tr.Kind != "confirmation" {
			continue
		}
		tr.SLOs = []results.SLOResult{{Metric: results.MetricTTFT, Percentile: 95, Value: 1, Met: true}, {Metric: results.MetricGoodput, Value: 100, Met: true}}
		tr.Correctness.Errors = 0
	}
	h, err := results.DeriveHeadline(tampered.Objectives(), *tw)
	if err != nil {
		t.Fatal(err)
	}
	h.Apply(tw)
	tw.PassingTrials, tw.FailingTrials = nil, nil
	body, err := results.Marshal(&tampered)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := results.Parse(body); err != nil {
		t.Fatalf("the consistent forgery must read: %v", err)
	}
	if err := os.WriteFile(resultsPath, body, 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code = run([]string{"-results", resultsPath, "-records", recordsDir, "-check"}, &bytes.Buffer{}, &stderr)
	if h.MaximumPassingConcurrency == nil || *h.MaximumPassingConcurrency < ff {
		t.Fatalf("the forgery did not move the headline: %v", h.MaximumPassingConcurrency)
	}
	want = fmt.Sprintf(`workloads[0].maximum_passing_concurrency: workload "64 / 8": maximum_passing_concurrency states %d, but its trials give %d`, *h.MaximumPassingConcurrency, mp)
	if code != 1 || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "slos: [") {
		t.Fatalf("consistently forged headline: exit %d, stderr %s\nwant %s", code, stderr.String(), want)
	}
}

// checkLines reads a records file: one line per request sent, warmups flagged, each with
// exactly the promised keys, chunk offsets for every content chunk.
func checkLines(t *testing.T, path string, tr results.Trial) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	warmups, measured := 0, 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := slices.Clone(lineKeys)
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Fatalf("%s: keys %v, want %v", path, keys, want)
		}
		if m["kind"] == "warmup" {
			warmups++
		} else {
			measured++
		}
		if offs, ok := m["chunk_offsets_ns"].([]any); ok && len(offs) != int(m["chunks"].(float64)) {
			t.Errorf("%s: %d chunk offsets for %v chunks", path, len(offs), m["chunks"])
		}
		if int(m["concurrency"].(float64)) != tr.Concurrency || int(m["trial"].(float64)) != tr.Trial {
			t.Errorf("%s: line of another trial: %v", path, m)
		}
	}
	if warmups != tr.Correctness.WarmupRecords || measured != tr.Correctness.ProfilingRecords {
		t.Errorf("%s: %d warmup and %d measured lines, the trial counts %d and %d", path, warmups, measured,
			tr.Correctness.WarmupRecords, tr.Correctness.ProfilingRecords)
	}
}

// runToFile runs a real benchmark with cfg and writes its document to dir/result.json, as the
// provider's results_json would be saved, and returns the document, its bytes and the path.
func runToFile(t *testing.T, cfg capacity.Config, dir string) (*results.Document, []byte, string) {
	t.Helper()
	doc, err := capacity.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := results.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	resultsPath := filepath.Join(dir, "result.json")
	if err := os.WriteFile(resultsPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return doc, raw, resultsPath
}
