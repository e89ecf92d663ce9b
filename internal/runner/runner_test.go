package runner

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/load"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

func testConfig(endpoint string) capacity.Config {
	return capacity.Config{
		Endpoint: endpoint, Model: "sim", API: "chat", APIKey: "sk-runner-secret", AdminAPIKey: "sk-admin-secret",
		Workloads:      []capacity.Workload{{Label: "64 / 8", InputTokens: 64, OutputTokens: 8, SharedPrefixTokens: 16, InputTokensStddev: 1.5}},
		SLOs:           []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 150, Comparison: "strictly_less_than"}},
		MinConcurrency: 1, MaxConcurrency: 5,
		WarmupRequests: 1, MeasuredRequests: 8, ConfirmationTrials: 2,
		CacheFlush: "auto", Seed: 1,
		StallTimeout: 30 * time.Second, RequestTimeout: time.Minute,
		Triggers:   map[string]string{"server": "abc"},
		Experiment: &results.Experiment{Model: "sim", TensorParallelism: 1},
	}
}

// The spec crosses the container boundary as JSON: what the runner reads must be the run the
// provider planned (same fingerprint, so the journals of both sides agree), with its keys.
func TestSpecRoundTrip(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:30000")
	cfg.OpenLoop = &capacity.OpenLoop{Arrival: load.Arrival{Pattern: "gamma", Burstiness: 0.5}, MinRate: 0.5, MaxRate: 8, Tolerance: 0.1}
	cfg.Progress = func(capacity.JournalEntry) {} // the caller's callbacks stay behind
	raw, err := json.Marshal(Spec{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Config.Fingerprint(), cfg.Fingerprint(); got != want {
		t.Errorf("fingerprint after the round trip = %s, want %s", got, want)
	}
	if back.Config.APIKey != "sk-runner-secret" || back.Config.AdminAPIKey != "sk-admin-secret" {
		t.Errorf("keys after the round trip = %q, %q", back.Config.APIKey, back.Config.AdminAPIKey)
	}
	if back.Key() != (Spec{Config: cfg}).Key() {
		t.Error("the key changed in the round trip")
	}
}

func TestKey(t *testing.T) {
	base := Spec{Config: testConfig("http://127.0.0.1:30000")}
	otherKey := base
	otherKey.Config.APIKey = "sk-another"
	if otherKey.Key() != base.Key() {
		t.Error("a new API key must not make another run (the key is left out, as from the fingerprint)")
	}
	if strings.Contains(base.Key(), "secret") {
		t.Error("key holds the secret")
	}
	changes := map[string]func(c *capacity.Config){
		"measured requests": func(c *capacity.Config) { c.MeasuredRequests = 9 },
		"records":           func(c *capacity.Config) { c.RecordsDirectory = RecordsPath },
		"telemetry":         func(c *capacity.Config) { c.TelemetryEndpoints = []string{"http://127.0.0.1:9400"} },
		"provider version":  func(c *capacity.Config) { c.ToolVersion = "1.2.3" },
	}
	for name, change := range changes {
		s := Spec{Config: testConfig("http://127.0.0.1:30000")}
		change(&s.Config)
		if s.Key() == base.Key() {
			t.Errorf("%s: same key as the base run; a runner of the old configuration would be attached to", name)
		}
	}
}

// The runner mode (Main) against a simulated engine: the result, the events on stdout, the
// journal beside the spec, and the spec (with its keys) gone once read.
func TestRunnerMode(t *testing.T) {
	engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	defer srv.Close()
	dir := t.TempDir()
	cfg := testConfig(srv.URL)
	cfg.APIKey, cfg.AdminAPIKey = "", ""
	cfg.RecordsDirectory = filepath.Join(dir, "records")
	spec := filepath.Join(dir, "spec.json")
	raw, _ := json.Marshal(Spec{Config: cfg})
	if err := os.WriteFile(spec, raw, 0o400); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{spec}, &stdout, &stderr); code != ExitFinished {
		res, _ := os.ReadFile(filepath.Join(dir, resultName))
		t.Fatalf("exit %d, stderr %s, result %.2000s", code, stderr.String(), res)
	}
	if _, err := os.Stat(spec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spec is still there after the run (%v): it holds the API keys", err)
	}
	var trials, lines int
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("stdout line %q is not an event: %v", sc.Text(), err)
		}
		if e.Trial != nil {
			trials++
		}
		if e.Line != "" {
			lines++
		}
	}
	if trials < 4 || lines < trials {
		t.Errorf("%d trial events and %d lines on stdout; want every trial (at least 4: two confirmations each side) and its line", trials, lines)
	}
	resRaw, err := os.ReadFile(filepath.Join(dir, resultName))
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(resRaw, &res); err != nil {
		t.Fatal(err)
	}
	rep, err := res.Report("the runner's journal")
	if err != nil {
		t.Fatal(err)
	}
	w := rep.Document.Workloads[0]
	if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
		t.Errorf("maximum passing concurrency %v, want 2 (the two-slot engine's boundary)", w.MaximumPassingConcurrency)
	}
	journal, _ := os.ReadFile(filepath.Join(dir, journalName))
	if got := strings.Count(string(journal), `"kind":"probe"`) + strings.Count(string(journal), `"kind":"confirmation"`); got != trials {
		t.Errorf("journal holds %d trials, stdout said %d", got, trials)
	}
	files := 0
	_ = filepath.WalkDir(cfg.RecordsDirectory, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && d.Type().IsRegular() {
			files++
		}
		return nil
	})
	if files != trials {
		t.Errorf("%d records files for %d trials", files, trials)
	}
}

// A stopped run crosses as a StoppedError again; a failed one as its message.
func TestResultReport(t *testing.T) {
	_, err := Result{Stopped: &Stopped{Why: capacity.StopServerGone, Where: "between trials", Kept: 3, LastErr: "connection refused"}}.Report("the journal of runner abc")
	var stopped *capacity.StoppedError
	if !errors.As(err, &stopped) || stopped.Kept != 3 || !strings.Contains(err.Error(), "3 finished trials are kept in the journal of runner abc") {
		t.Errorf("stopped result = %v", err)
	}
	_, err = Result{Error: "workload \"a\": the server refused"}.Report("j")
	if err == nil || err.Error() != `workload "a": the server refused` {
		t.Errorf("failed result = %v", err)
	}
	if _, err := (Result{}).Report("j"); err == nil {
		t.Error("an empty result must not read as a finished run")
	}
}

// Attaching again replays the runner's events from its start: the local files get each once.
func TestMirrorSkipsWhatItHas(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig("http://127.0.0.1:30000")
	progress, logPath := filepath.Join(dir, "p.jsonl"), filepath.Join(dir, "p.log")
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 123456789, time.UTC)
	events := []Event{
		{Line: "10:00:00  started"},
		{Trial: &capacity.JournalEntry{Time: t0, Workload: "64 / 8", Concurrency: 1, Kind: "probe", Pass: true}},
		{Line: "10:00:01  probe at 1: pass"},
		{Trial: &capacity.JournalEntry{Time: t0.Add(time.Second), Workload: "64 / 8", Concurrency: 2, Kind: "probe", Pass: true}},
	}
	var said []string
	for attach, n := range []int{3, 4} { // interrupted after 3 events, then attached again
		m, err := OpenMirror(cfg, progress, logPath, func(s string) { said = append(said, s) })
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events[:n] {
			m.Event(e)
		}
		if attach == 1 {
			if err := m.Complete(); err != nil {
				t.Fatal(err)
			}
		}
		m.Close()
	}
	journal, _ := os.ReadFile(progress)
	if got := strings.Count(string(journal), `"kind":"probe"`); got != 2 {
		t.Errorf("journal holds %d probes, want 2:\n%s", got, journal)
	}
	if !strings.Contains(string(journal), `"kind":"run_completed"`) {
		t.Error("the finished run is not marked complete in the local journal")
	}
	log, _ := os.ReadFile(logPath)
	if want := "10:00:00  started\n10:00:01  probe at 1: pass\n"; string(log) != want {
		t.Errorf("log = %q, want %q", log, want)
	}
	if len(said) != 2 {
		t.Errorf("said %q, want each line once", said)
	}
}

func TestElfArch(t *testing.T) {
	if _, err := elfArch([]byte("#!/bin/sh\necho not a binary\n")); err == nil || !strings.Contains(err.Error(), "not a Linux executable") {
		t.Errorf("a script: %v", err)
	}
	for engine, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "s390x": "s390x"} {
		if got := goArch(engine); got != want {
			t.Errorf("goArch(%q) = %q, want %q", engine, got, want)
		}
	}
}

// The records come back confined to records_directory: a link planted where a record goes is
// replaced by the record (its target outside is untouched), and a link to a directory outside
// is refused, not followed.
func TestExtractRecordsConfined(t *testing.T) {
	archive := func(files map[string]string) *bytes.Buffer {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for name, data := range files {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		return &buf
	}
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "64-8"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "64-8", "c1.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := extractRecords(archive(map[string]string{"records/64-8/c1.jsonl": "record", "records/../../escape": "x"}), dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the link's target outside records_directory was written: %q", got)
	}
	fi, err := os.Lstat(filepath.Join(dir, "64-8", "c1.jsonl"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the record is not a regular file in records_directory: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "64-8", "c1.jsonl")); string(got) != "record" {
		t.Errorf("record = %q", got)
	}

	// A directory of records linked out of records_directory.
	dir2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir2, "64-8")); err != nil {
		t.Fatal(err)
	}
	err = extractRecords(archive(map[string]string{"records/64-8/victim": "record"}), dir2)
	if err == nil || !strings.Contains(err.Error(), "records_directory") {
		t.Errorf("a record through a link out of records_directory: err %v, want refused", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file outside records_directory was written through a linked directory: %q", got)
	}
}

// The relay mode copies stdin to the server's port and the answer back, and says why when
// the port cannot be reached.
func TestRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got, _ := io.ReadAll(c) // the relay closes its write side once stdin ends
		_, _ = c.Write(append([]byte("echo: "), got...))
	}()
	var out, errOut bytes.Buffer
	if code := relay(context.Background(), ln.Addr().String(), strings.NewReader("GET /health"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if out.String() != "echo: GET /health" {
		t.Errorf("relayed %q", out.String())
	}

	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no retries: the port refuses
	out.Reset()
	errOut.Reset()
	if code := relay(ctx, addr, strings.NewReader(""), &out, &errOut); code == 0 || errOut.Len() == 0 {
		t.Errorf("a closed port: exit %d, stderr %q; want a failure saying why", code, errOut.String())
	}
}
