package results

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promtool is Prometheus' own checker (Debian's prometheus package; scripts/setup-host.sh
// installs it). Unit runs without it skip; CI runs with TF_ACC=1, where its absence fails.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("TF_ACC") != "" {
			t.Fatal("promtool not found: install Debian's prometheus package (scripts/setup-host.sh does)")
		}
		t.Skip("promtool not found (TF_ACC unset); scripts/setup-host.sh installs it")
	}
	return p
}

// promtool check metrics reports nothing on the renderings of the reference, of a
// multi-objective recorded run and of a replay by speedup (its rate and speedup families) (it found 163 problems before: a quantile label on gauges).
func TestOpenMetricsPassesPromtoolCheck(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	raw, err := ReadFile(filepath.Join("testdata", "replay", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	replay, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*Document{"reference": parseReference(t), "recorded": readRecorded(t), "replay": replay} {
		cmd := exec.Command(bin, "check", "metrics")
		cmd.Stdin = strings.NewReader(OpenMetrics(d))
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s", name, err, out)
		}
	}
}

// An archived result stamped with the time it was measured backfills into a Prometheus
// TSDB block with promtool tsdb create-blocks-from openmetrics; unstamped, it is refused.
func TestOpenMetricsBackfillsWithPromtool(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	dir := t.TempDir()
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	stamped := OpenMetricsAt(parseReference(t), at)
	if !strings.Contains(stamped, `llmserve_maximum_passing_concurrency{workload="8K / 1K"} 7 1796117400`+"\n") {
		t.Fatalf("sample not stamped in seconds:\n%s", stamped[:min(len(stamped), 2000)])
	}
	in := filepath.Join(dir, "stamped.om")
	if err := os.WriteFile(in, []byte(stamped), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := filepath.Join(dir, "blocks")
	if out, err := exec.Command(bin, "tsdb", "create-blocks-from", "openmetrics", in, blocks).CombinedOutput(); err != nil {
		t.Fatalf("create-blocks-from: %v\n%s", err, out)
	}
	// tsdb dump opens the directory as a whole database, which has a WAL.
	if err := os.MkdirAll(filepath.Join(blocks, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "tsdb", "dump", "--min-time=1796117399000", "--max-time=1796117401000", blocks).CombinedOutput()
	if err != nil {
		t.Fatalf("tsdb dump: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `{__name__="llmserve_maximum_passing_concurrency", workload="8K / 1K"} 7 1796117400000`) {
		t.Fatalf("the block lacks the stamped capacity:\n%s", out[:min(len(out), 3000)])
	}
	// Without timestamps there is nothing to place the samples at.
	plain := filepath.Join(dir, "plain.om")
	if err := os.WriteFile(plain, []byte(OpenMetrics(parseReference(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "tsdb", "create-blocks-from", "openmetrics", plain, filepath.Join(dir, "plain")).CombinedOutput(); err == nil {
		t.Errorf("promtool backfilled unstamped text; OpenMetricsAt is then not needed:\n%s", out)
	}
}
