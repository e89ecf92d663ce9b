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

func probeEntry(c int) JournalEntry {
	return JournalEntry{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Workload: "64 / 8", Concurrency: c, Kind: "probe", Index: 1, Pass: true}
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
		want    []int // concurrencies of the history after appending a record at 9
		wantErr string
	}{
		{name: "new file", want: []int{9}},
		{name: "empty file", content: "", want: []int{9}},
		{
			name:    "truncated last line does not swallow the next record",
			content: ours(1) + "\n" + ours(2)[:40],
			want:    []int{1, 9},
		},
		{
			name:    "lines of another configuration and another program are skipped",
			content: ours(1) + "\n" + journalLineOf(t, other, probeEntry(2)) + "\n" + `{"fingerprint":"` + cfg.Fingerprint() + `","kind":"probe","concurrency":3}` + "\nplain text\n",
			want:    []int{1, 9},
		},
		{
			name:    "an over-long line is skipped, not fatal",
			content: ours(1) + "\n" + journalPrefix + strings.Repeat("x", maxJournalLine+10) + "\n" + ours(2) + "\n",
			want:    []int{1, 2, 9},
		},
		{
			name:    "records no run could have produced are skipped",
			content: ours(0) + "\n" + ours(-4) + "\n" + strings.Replace(ours(3), `"kind":"probe"`, `"kind":"warmup"`, 1) + "\n" + ours(1) + "\n",
			want:    []int{1, 9},
		},
		{
			name:    "a completed run is not replayed",
			content: ours(1) + "\n" + journalLineOf(t, cfg, JournalEntry{Kind: kindRunCompleted}) + "\n" + ours(2) + "\n",
			want:    []int{2, 9},
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
			if err := j.Append(probeEntry(9)); err != nil {
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
