package capacity

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

func probeEntry(c int) JournalEntry { return measuredEntry(c, "probe", 1, 100) }

// measuredEntry is a full trial of testConfig's workload as a run journals it: 8 measured
// requests whose TTFT is p95 ms every one (so every statistic is p95), judged against
// testConfig's objective, p95 TTFT under 150 ms.
func measuredEntry(c int, kind string, index int, p95 float64) JournalEntry {
	pass := p95 < 150
	st := results.Stats{Avg: p95, Min: p95, Max: p95, P1: p95, P5: p95, P10: p95, P25: p95, P50: p95, P75: p95, P90: p95, P95: p95, P99: p95}
	slos := []results.SLOResult{{Metric: "time_to_first_token", Percentile: 95, Value: p95, Met: pass}}
	m := &results.Trial{Trial: index, Concurrency: c, TTFTMs: st, RequestLatencyMs: st, SLOs: slos,
		Correctness: results.Correctness{WarmupRecords: 1, ProfilingRecords: 8, HTTP200: 9}}
	e := JournalEntry{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Workload: "64 / 8", Concurrency: c, Kind: kind, Index: index,
		Pass: pass, SLOs: slos, Closeness: p95 / 150, Requests: 9, Metrics: m}
	e.Verdict = e.verdict()
	return e
}

// journalLineOf is the line a journal of cfg writes for t.
func journalLineOf(t *testing.T, cfg Config, r JournalEntry) string {
	t.Helper()
	r.Format, r.Fingerprint = journalFormat, cfg.Fingerprint()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The journal survives what a crash, a neighbour program or a wrong path leave in the file,
// and keeps every record of its own that can be read.
func TestJournalRobustness(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://a:1")
	other := cfg
	other.Endpoint = "http://b:1"
	ours := func(c int) string { return journalLineOf(t, cfg, probeEntry(c)) }
	tests := []struct {
		name    string
		content string
		want    []int // concurrencies of the history after appending a record at 4
		wantErr string
	}{
		{name: "new file", want: []int{4}},
		{name: "empty file", content: "", want: []int{4}},
		{
			name:    "truncated last line does not swallow the next record",
			content: ours(1) + "\n" + ours(2)[:40],
			want:    []int{1, 4},
		},
		{
			name:    "lines of another configuration and another program are skipped",
			content: ours(1) + "\n" + journalLineOf(t, other, probeEntry(2)) + "\n" + `{"fingerprint":"` + cfg.Fingerprint() + `","kind":"probe","concurrency":3}` + "\nplain text\n",
			want:    []int{1, 4},
		},
		{
			name:    "an over-long line is skipped, not fatal",
			content: ours(1) + "\n" + journalPrefix + strings.Repeat("x", maxJournalLine+10) + "\n" + ours(2) + "\n",
			want:    []int{1, 2, 4},
		},
		{
			name:    "records no run could have produced are skipped",
			content: ours(0) + "\n" + ours(-4) + "\n" + strings.Replace(ours(3), `"kind":"probe"`, `"kind":"warmup"`, 1) + "\n" + ours(1) + "\n",
			want:    []int{1, 4},
		},
		{
			name:    "a completed run is not replayed",
			content: ours(1) + "\n" + journalLineOf(t, cfg, JournalEntry{Kind: kindRunCompleted}) + "\n" + ours(2) + "\n",
			want:    []int{2, 4},
		},
		{
			name:    "a file that is not a journal is never appended to",
			content: "export PATH=/usr/bin\nalias ll='ls -l'\n",
			wantErr: "holds no line of a progress journal",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "progress.jsonl")
			if tc.name != "new file" {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			j, err := OpenJournal(path, cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if after, _ := os.ReadFile(path); string(after) != tc.content {
					t.Fatal("the file was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Append(probeEntry(4)); err != nil {
				t.Fatal(err)
			}
			j.Close()
			again, err := OpenJournal(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			var got []int
			for _, r := range again.History() {
				got = append(got, r.Concurrency)
			}
			if !equalInts(got, tc.want) {
				t.Fatalf("history %v, want %v", got, tc.want)
			}
		})
	}
}

// Only regular files are journals: a FIFO would block the apply, a device would never end.
func TestJournalRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", dir} {
		done := make(chan error, 1)
		go func() {
			_, err := OpenJournal(path, testConfig("http://a:1"))
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: err = %v, want refused as not a regular file", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: OpenJournal did not return", path)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzJournalRead: whatever a file holds, reading it neither panics nor keeps an impossible
// record, and a record appended after it is read back as the last one.
func FuzzJournalRead(f *testing.F) {
	cfg := testConfig("http://a:1")
	line := func(r JournalEntry) string {
		r.Format, r.Fingerprint = journalFormat, cfg.Fingerprint()
		b, _ := json.Marshal(r)
		return string(b)
	}
	f.Add([]byte(line(probeEntry(1)) + "\n"))
	f.Add([]byte(line(probeEntry(1)) + "\n" + line(probeEntry(2))[:50]))
	f.Add([]byte(line(JournalEntry{Kind: kindRunCompleted}) + "\n" + line(probeEntry(3)) + "\r\n"))
	f.Add([]byte(journalPrefix + `,"concurrency":1e400}` + "\n"))
	f.Add([]byte("\x00\xff{\"format\":null}\n\n\n"))
	f.Add([]byte(line(measuredEntry(2, "confirmation", 1, 100)) + "\nTODO\n" + line(measuredEntry(2, "confirmation", 1, 90)) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fp := cfg.Fingerprint()
		read, err := readJournal(bytes.NewReader(data), fp)
		if err != nil {
			t.Fatal(err)
		}
		if read.bytes != int64(len(data)) {
			t.Fatalf("read %d of %d bytes", read.bytes, len(data))
		}
		for _, r := range read.history {
			if r.Concurrency < 1 || (r.Kind != "probe" && r.Kind != "confirmation") || r.Fingerprint != fp {
				t.Fatalf("impossible record kept: %+v", r)
			}
		}
		// Every trial read has its line number, and vetting them never panics and keeps only
		// lines it read.
		if len(read.lines) != len(read.history) {
			t.Fatalf("%d line numbers for %d trials", len(read.lines), len(read.history))
		}
		kept, suspect := vetHistory(read.history, read.lines, cfg)
		if len(kept)+len(suspect) > len(read.history) {
			t.Fatalf("vetting %d trials kept %d and set aside %d", len(read.history), len(kept), len(suspect))
		}
		next := append([]byte(nil), data...)
		if read.unterminated {
			next = append(next, '\n')
		}
		next = append(next, line(probeEntry(7))+"\n"...)
		again, err := readJournal(bytes.NewReader(next), fp)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(again.history); n == 0 || again.history[n-1].Concurrency != 7 {
			t.Fatalf("appended record lost: %+v", again.history)
		}
	})
}

// The triggers key a run: equal triggers resume, other triggers measure again. The
// fingerprints are the ones the previous run key (Terraform's display of the triggers map)
// gave for the same configuration, so a journal interrupted before the upgrade still resumes.
func TestFingerprintTriggers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		triggers map[string]string
		want     string
	}{
		{name: "no triggers", triggers: nil, want: "144b2778c2f39a3c"},
		{name: "empty triggers", triggers: map[string]string{}, want: "a3a948350eaa5133"},
		{name: "one trigger", triggers: map[string]string{"server": "one"}, want: "944adc503ac70f1f"},
		{name: "keys sorted, nothing HTML-escaped", triggers: map[string]string{"server": "é x", "image": "a<b>&c"}, want: "6de6b1b00ae21741"},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("http://127.0.0.1:9")
			cfg.Triggers = tc.triggers
			if got := cfg.Fingerprint(); got != tc.want {
				t.Errorf("fingerprint = %s, want %s", got, tc.want)
			}
			if other, dup := seen[tc.want]; dup {
				t.Errorf("same fingerprint as %q", other)
			}
			seen[tc.want] = tc.name
		})
	}
}

// A trial is named by where it ran: its concurrency, or an open-loop trial by its rate (and a
// replay's by its speedup), never "concurrency 0".
func TestJournalEntryNamesItsLevel(t *testing.T) {
	t.Parallel()
	failed := []results.ErrorCount{{Kind: "http_status", Count: 2, HTTPStatus: 503, Example: "busy"}}
	for _, tc := range []struct {
		e      JournalEntry
		line   string
		fields map[string]any
	}{
		{JournalEntry{Workload: "w", Concurrency: 4, Kind: "probe"}, `workload "w", concurrency 4, probe 1:`, map[string]any{"concurrency": 4}},
		{JournalEntry{Workload: "w", Rate: 2.5, Kind: "confirmation", Index: 2}, `workload "w", rate 2.5 requests/s, confirmation 2:`, map[string]any{"rate": 2.5}},
		{JournalEntry{Workload: "w", Rate: 7.5, Speedup: 1.5, Kind: "confirmation", Index: 1}, `workload "w", speedup 1.5 (rate 7.5 requests/s), confirmation 1:`, map[string]any{"rate": 7.5, "speedup": 1.5}},
	} {
		tc.e.Errors, tc.e.ErrorSummary = 2, failed
		if got := tc.e.FailureLine(); !strings.HasPrefix(got, tc.line) {
			t.Errorf("failure line %q, want it to begin %q", got, tc.line)
		}
		f := tc.e.LogFields()
		for k, v := range tc.fields {
			if f[k] != v {
				t.Errorf("%s: log field %s = %v, want %v", tc.line, k, f[k], v)
			}
		}
		if _, ok := f["concurrency"]; ok != (tc.e.Rate == 0) {
			t.Errorf("%s: log fields %v: concurrency only for a closed-loop trial", tc.line, f)
		}
	}
}

// TestJournalIsEvidence: a line is reused only when its own figures and the configuration
// bear it out; every other line is named in the warning with its number and why, and every
// line that is not the journal's is counted.
func TestJournalIsEvidence(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://a:1")
	line := func(e JournalEntry) string { return journalLineOf(t, cfg, e) }
	edit := func(e JournalEntry, f func(*JournalEntry)) JournalEntry {
		m := *e.Metrics
		e.Metrics = &m
		f(&e)
		return e
	}
	good1, good2 := probeEntry(1), measuredEntry(2, "confirmation", 1, 100)
	tests := []struct {
		name  string
		lines []string
		want  []int    // concurrencies reused
		warn  []string // in the warning, in order
	}{
		{
			name:  "a duplicated line with an edited p95: neither copy is reused",
			lines: []string{line(good1), line(good2), line(measuredEntry(2, "confirmation", 1, 90))},
			want:  []int{1},
			warn: []string{
				`line 2 not reused: lines 2, 3 record the same trial (workload "64 / 8", concurrency 2, confirmation 1): a run records each trial once, so no copy is reused; its trial is measured again`,
				`line 3 not reused: lines 2, 3 record the same trial`,
			},
		},
		{
			name: "pass beside a p95 ten times the threshold",
			lines: []string{line(good1), line(edit(measuredEntry(2, "confirmation", 1, 1500), func(e *JournalEntry) {
				e.Pass, e.Verdict = true, "pass"
			}))},
			want: []int{1},
			warn: []string{`line 2 not reused: it says pass, but its own figures give fail (p95 time_to_first_token 1500 ms, the objective p95 TTFT < 150 ms); its trial is measured again`},
		},
		{
			name: "a met flag edited beside its value",
			lines: []string{line(edit(measuredEntry(2, "confirmation", 1, 1500), func(e *JournalEntry) {
				e.Pass, e.Verdict, e.Closeness = true, "pass", 0.5
				e.SLOs = []results.SLOResult{{Metric: "time_to_first_token", Percentile: 95, Value: 1500, Met: true}}
				e.Metrics.SLOs = e.SLOs
			}))},
			warn: []string{`line 1 not reused: it says p95 time_to_first_token was met, but its value 1500 ms misses the objective p95 TTFT < 150 ms`},
		},
		{
			name: "an objective value that is not its statistic",
			lines: []string{line(edit(measuredEntry(2, "confirmation", 1, 1500), func(e *JournalEntry) {
				e.Pass, e.Verdict, e.Closeness = true, "pass", 100.0/150
				e.SLOs = []results.SLOResult{{Metric: "time_to_first_token", Percentile: 95, Value: 100, Met: true}}
				e.Metrics.SLOs = e.SLOs
			}))},
			warn: []string{`line 1 not reused: its p95 time_to_first_token value 100 ms is not the p95 time_to_first_token its own statistics give (1500 ms)`},
		},
		{
			name: "percentiles out of order",
			lines: []string{line(edit(good2, func(e *JournalEntry) {
				e.Metrics.TTFTMs.P50 = 120
			}))},
			warn: []string{`line 1 not reused: its metrics cannot be a measurement: trial.ttft_ms.p50: 120 is above p75 100: percentiles rise with the rank`},
		},
		{
			name:  "closeness the values do not give",
			lines: []string{line(edit(good2, func(e *JournalEntry) { e.Closeness = 0.01 }))},
			warn:  []string{`line 1 not reused: it states closeness 0.01, but its objective values give 0.666667`},
		},
		{
			name: "objective values beside the metrics' differ",
			lines: []string{line(edit(good2, func(e *JournalEntry) {
				e.SLOs = []results.SLOResult{{Metric: "time_to_first_token", Percentile: 95, Value: 10, Met: true}}
			}))},
			warn: []string{`line 1 not reused: its objective values differ from those in its metrics`},
		},
		{
			name: "off the configuration: another workload, a level outside the bounds, a confirmation too many, no metrics",
			lines: []string{
				line(edit(good2, func(e *JournalEntry) { e.Workload = "8K / 1K" })),
				line(measuredEntry(9, "probe", 1, 100)),
				line(measuredEntry(2, "confirmation", 3, 100)),
				line(JournalEntry{Workload: "64 / 8", Concurrency: 3, Kind: "probe", Index: 1, Pass: true}),
				line(good1),
			},
			want: []int{1},
			warn: []string{
				`line 1 not reused: workload "8K / 1K" is not one of the configuration's`,
				`line 2 not reused: concurrency 9 lies outside search.min_concurrency to max_concurrency (1 to 5)`,
				`line 3 not reused: it is confirmation 3, but trial.confirmation_trials is 2`,
				`line 4 not reused: it carries no metrics, so its verdict cannot be checked against its figures`,
			},
		},
		{
			name:  "lines that are not the journal's are counted",
			lines: []string{line(good1), "TODO: re-run the 8K workload", "", `{"note":"by hand"}`, line(good2)},
			want:  []int{1, 2},
			warn:  []string{`2 lines not written by this provider (the first: line 2), skipped: only the journal's own lines are read`},
		},
		{
			name:  "a trial with failed requests is kept as a record, whatever it says, and a later good copy is reused",
			lines: []string{line(edit(good2, func(e *JournalEntry) { e.Errors, e.Pass = 3, true })), line(good2)},
			want:  []int{2, 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "p.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			j, err := OpenJournal(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var got []int
			for _, e := range j.History() {
				got = append(got, e.Concurrency)
			}
			if !equalInts(got, tc.want) {
				t.Errorf("reused %v, want %v", got, tc.want)
			}
			warning := strings.Join(j.Ignored(), "\n")
			at := 0
			for _, w := range tc.warn {
				i := strings.Index(warning[at:], w)
				if i < 0 {
					t.Fatalf("warning %q lacks (in order) %q", warning, w)
				}
				at += i + len(w)
			}
			if len(tc.warn) == 0 && warning != "" {
				t.Errorf("warning %q for a journal of good lines", warning)
			}
		})
	}
}
