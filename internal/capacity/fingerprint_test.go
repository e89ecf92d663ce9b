package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Lines of another configuration are not reused, and the warning says which setting
// differed; lines written before the journal recorded the parts keep the general sentence.
func TestIgnoredLinesNameTheDifferingSetting(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "progress.jsonl")
	a := testConfig("http://127.0.0.1:1")
	j, err := OpenJournal(path, a)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := j.Append(JournalEntry{Workload: "64 / 8", Concurrency: 1, Kind: "confirmation", Index: i, Pass: true}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"workloads", func(c *Config) { c.Workloads[0].InputTokens = 128 }, "2 trials of another configuration (workloads differs), not reused"},
		{"objective and trial", func(c *Config) { c.SLOs[0].ThresholdMs = 200; c.MeasuredRequests = 16 }, "2 trials of another configuration (slos and trial differ), not reused"},
		{"endpoint", func(c *Config) { c.Endpoint = "http://127.0.0.1:2" }, "2 trials of another configuration (endpoint differs), not reused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testConfig("http://127.0.0.1:1")
			b.Workloads = append([]Workload(nil), b.Workloads...)
			tc.change(&b)
			j, err := OpenJournal(path, b)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if got := strings.Join(j.Ignored(), "; "); !strings.Contains(got, tc.want) {
				t.Errorf("Ignored() = %q, want %q", got, tc.want)
			}
		})
	}

	// A line without the parts (an older journal) cannot say which setting differed.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old.jsonl")
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	i := strings.Index(lines[0], `,"fingerprint_parts":`)
	if i < 0 {
		t.Fatalf("a journal line without its fingerprint parts: %s", lines[0])
	}
	end := strings.Index(lines[0][i+1:], "}") + i + 2
	if err := os.WriteFile(old, []byte(lines[0][:i]+lines[0][end:]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := testConfig("http://127.0.0.1:2")
	j2, err := OpenJournal(old, b)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if got := strings.Join(j2.Ignored(), "; "); !strings.Contains(got, "1 trial of another configuration (endpoint, model, workloads, objectives, search or trial settings, triggers or experiment differ)") {
		t.Errorf("older line: Ignored() = %q", got)
	}
}
