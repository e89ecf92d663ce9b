package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// -check holds on every recorded fixture, one per load axis (concurrency, request rate, a
// trace's speedup), and on the open-loop ones it checks the open_loop figures too: a
// document whose completion rate was changed is caught.
func TestCheckHoldsOnEveryAxis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		trials  int
	}{{"recorded", 11}, {"rate", 7}, {"replay", 7}} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", "..", "internal", "results", "testdata", tc.fixture)
			doc, recs := filepath.Join(dir, "result.json"), filepath.Join(dir, "records")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"-results", doc, "-records", recs, "-check"}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if want := fmt.Sprintf("%d trials recomputed, every value identical", tc.trials); !strings.Contains(stderr.String(), want) {
				t.Fatalf("stderr does not say %q:\n%s", want, stderr.String())
			}
			var out struct {
				Workloads []struct{ Trials []results.Trial }
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Workloads) != 1 || len(out.Workloads[0].Trials) != tc.trials {
				t.Fatalf("output %v: %s", err, stdout.String())
			}
			if tc.fixture == "recorded" {
				return
			}
			for _, tr := range out.Workloads[0].Trials {
				if tr.OpenLoop == nil || tr.RequestRate <= 0 || (tc.fixture == "replay") != (tr.Speedup > 0) {
					t.Errorf("%s: request_rate %g, speedup %g, open_loop %+v", tr.RecordsFile, tr.RequestRate, tr.Speedup, tr.OpenLoop)
				}
			}
			raw, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			d, err := results.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			d.Workloads[0].AllTrials[0].OpenLoop.CompletionRate *= 1.01
			forged, err := results.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			forgedPath := filepath.Join(t.TempDir(), "result.json")
			if err := os.WriteFile(forgedPath, forged, 0o644); err != nil {
				t.Fatal(err)
			}
			stderr.Reset()
			if code := run([]string{"-results", forgedPath, "-records", recs, "-check"}, &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "open_loop") {
				t.Errorf("a changed completion rate: exit %d, %s", code, stderr.String())
			}
		})
	}
}
