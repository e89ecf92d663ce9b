package provider

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// TestAccCapacityBenchmark_forgedJournal: the journal is evidence, not authority. A finished
// run's journal is reopened as an unfinished one (its completion marker removed) with a
// confirmation trial copied with a halved p95, a failing confirmation trial turned into a
// pass and a note typed into the file; the replaced resource resumes from it. The forged
// lines are measured again, the log names each by its line number and why, the note is
// counted, and results_json passes the document checks with every trial once.
func TestAccCapacityBenchmark_forgedJournal(t *testing.T) {
	t.Parallel()
	engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim-qwen"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(engine)
	defer srv.Close()
	dir := t.TempDir()
	progress, log := filepath.Join(dir, "progress.jsonl"), filepath.Join(dir, "progress.log")
	config := fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint      = %q
  model         = "sim-qwen"
  workloads     = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos          = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search        = { min_concurrency = 1, max_concurrency = 6 }
  trial         = { warmup_requests = 2, measured_requests = 12, confirmation_trials = 2, cache_flush = "auto" }
  progress_file = %q
  progress_log  = %q
}
`, srv.URL, progress, log)
	var wantInLog []string
	forge := func() {
		raw, err := os.ReadFile(progress)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		passed, failed := false, false
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var e capacity.JournalEntry
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("journal line %q: %v", l, err)
			}
			switch {
			case e.Kind == "run_completed":
				continue // the run is unfinished again
			case e.Kind == "confirmation" && e.Pass && !passed:
				passed = true
				lines = append(lines, l)
				m := *e.Metrics
				m.TTFTMs.P95 /= 2
				e.Metrics = &m
				b, _ := json.Marshal(e)
				lines = append(lines, string(b))
				wantInLog = append(wantInLog, fmt.Sprintf("line %d not reused: lines %d, %d record the same trial (workload \"64 / 8\", concurrency %d, confirmation %d): a run records each trial once, so no copy is reused",
					len(lines), len(lines)-1, len(lines), e.Concurrency, e.Index))
				continue
			case e.Kind == "confirmation" && !e.Pass && !failed:
				failed = true
				e.Pass, e.Verdict = true, "pass"
				b, _ := json.Marshal(e)
				lines = append(lines, string(b))
				wantInLog = append(wantInLog, fmt.Sprintf("line %d not reused: it says pass, but its own figures give fail (p95 time_to_first_token", len(lines)))
				continue
			}
			lines = append(lines, l)
		}
		lines = append(lines, "TODO: re-run with the new image")
		wantInLog = append(wantInLog, fmt.Sprintf("1 line not written by this provider (the first: line %d)", len(lines)))
		if !passed || !failed {
			t.Fatalf("the journal holds no passing and failing confirmation trials:\n%s", raw)
		}
		if err := os.WriteFile(progress, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: forge,
				Config:    config,
				Taint:     []string{"llmserve_capacity_benchmark.test"},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						raw, err := os.ReadFile(log)
						if err != nil {
							return err
						}
						for _, want := range wantInLog {
							if !strings.Contains(string(raw), "ignored in "+progress+": "+want) {
								return fmt.Errorf("the progress log does not say %q:\n%s", want, raw)
							}
						}
						doc, err := results.Parse([]byte(s.RootModule().Resources["llmserve_capacity_benchmark.test"].Primary.Attributes["results_json"]))
						if err != nil {
							return fmt.Errorf("results_json fails the document checks: %w", err)
						}
						seen := map[string]bool{}
						for _, tr := range doc.Workloads[0].AllTrials {
							key := fmt.Sprintf("%s %d at concurrency %d", tr.Kind, tr.Trial, tr.Concurrency)
							if seen[key] {
								return fmt.Errorf("results_json holds %s twice", key)
							}
							seen[key] = true
						}
						if w := doc.Workloads[0]; w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 {
							return fmt.Errorf("maximum passing concurrency %v, want 2", w.MaximumPassingConcurrency)
						}
						return nil
					},
				),
			},
		},
	})
}
