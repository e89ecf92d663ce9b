package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// A recorded trace replayed against the real engine: llama-server (2 slots) with the
// generated model, 12 requests recorded about a second apart (bursts of two included, lengths
// 40 to 112 tokens, sessions sharing 32-token blocks), the speedup searched from 0.5 to 32 at
// 50 %. Asserts a speedup boundary with its confirmation trials, the maps in state equal to
// the document's, every trial's speedup and rate (the trace's mean rate times it), the
// trace's SHA-256, and that the records recompute every trial bit for bit.
func TestAccCapacityBenchmark_replayLlamaCpp(t *testing.T) {
	testAccPreCheck(t)
	model := testAccTinyModel(t)
	b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		t.Fatal(err)
	}
	testAccRequireLlamaCppImage(t, b)
	const name = "llmserve-acc-replay"
	dir := t.TempDir()
	traceFile, recordsDir := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "records")
	lines := []string{
		`{"timestamp": 0, "input_length": 80, "output_length": 8, "hash_ids": [1, 2, 3]}`,
		`{"timestamp": 900, "input_length": 72, "output_length": 6, "hash_ids": [1, 4, 5]}`,
		`{"timestamp": 900, "input_length": 40, "output_length": 8, "hash_ids": [1, 6]}`,
		`{"timestamp": 2100, "input_length": 112, "output_length": 8, "hash_ids": [1, 2, 3, 7]}`,
		`{"timestamp": 3000, "input_length": 64, "output_length": 4, "hash_ids": [1, 8]}`,
		`{"timestamp": 4200, "input_length": 96, "output_length": 8, "hash_ids": [1, 4, 5]}`,
		`{"timestamp": 5000, "input_length": 48, "output_length": 8}`,
		`{"timestamp": 5000, "input_length": 80, "output_length": 6, "hash_ids": [1, 9, 10]}`,
		`{"timestamp": 6300, "input_length": 112, "output_length": 8, "hash_ids": [1, 2, 3, 7]}`,
		`{"timestamp": 7100, "input_length": 64, "output_length": 8, "hash_ids": [1, 11]}`,
		`{"timestamp": 8000, "input_length": 72, "output_length": 8, "hash_ids": [1, 6, 12]}`,
		`{"timestamp": 9200, "input_length": 96, "output_length": 8, "hash_ids": [1, 9, 10]}`,
	}
	if err := os.WriteFile(traceFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	progress := filepath.Join(dir, "progress.jsonl")
	defer func() {
		if raw, err := os.ReadFile(progress); err == nil {
			t.Logf("progress journal:\n%s", raw)
		}
	}()
	cfg := tinyLlamaServerHCL(name, model) + fmt.Sprintf(`

resource "llmserve_capacity_benchmark" "tiny" {
  endpoint  = llmserve_inference_server.tiny.endpoint
  model     = llmserve_inference_server.tiny.served_model_name
  workloads = [{ label = "recorded", trace = { file = %[1]q, block_tokens = 32 } }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 5000 }]
  search    = { speedup = { min = 0.5, max = 32, tolerance = 0.5 } }
  trial     = { warmup_requests = 1, confirmation_trials = 1, cache_flush = "auto" }
  triggers  = { container = llmserve_inference_server.tiny.id }
  progress_file     = %[2]q
  records_directory = %[3]q
}
`, traceFile, progress, recordsDir)
	const bench = "llmserve_capacity_benchmark.tiny"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: func(s *terraform.State) error {
				// The real llama-server of a CPU build lists "Available devices:" and "  (none)":
				// the server's hardware is the accelerator family, not an error or a blank.
				if hw := s.RootModule().Resources["llmserve_inference_server.tiny"].Primary.Attributes["experiment.hardware"]; hw != "cpu" {
					return fmt.Errorf("experiment.hardware = %q, want \"cpu\" (llama-server --list-devices of a CPU build)", hw)
				}
				attrs := s.RootModule().Resources[bench].Primary.Attributes
				doc, err := results.Parse([]byte(attrs["results_json"]))
				if err != nil {
					return err
				}
				w := doc.Workloads[0]
				for _, tr := range w.AllTrials {
					ol := tr.OpenLoop
					if ol == nil || tr.Speedup == 0 || tr.RequestRate == 0 {
						return fmt.Errorf("trial without its speedup: %+v", tr)
					}
					// 11 gaps over 9.2 s recorded: 1.196 requests/s at speedup 1.
					if want := tr.Speedup * 11 / 9.2; tr.RequestRate < want*0.999 || tr.RequestRate > want*1.001 {
						return fmt.Errorf("trial at speedup %g: rate %g, want %g", tr.Speedup, tr.RequestRate, want)
					}
					t.Logf("%s %d at speedup %.3g (%.3g/s): %s, offered %.3g completion %.3g, backlog %+.1f (allowed %.1f), lateness p99 %.2f ms, p95 TTFT %.0f ms, prompt tokens %g..%g, missed %v",
						tr.Kind, tr.Trial, tr.Speedup, tr.RequestRate, tr.Verdict, ol.OfferedRate, ol.CompletionRate, ol.BacklogGrowth,
						ol.BacklogAllowance, ol.SendLatenessP99Ms, tr.TTFTMs.P95, tr.ServerPromptTokens.Min, tr.ServerPromptTokens.Max, ol.Missed)
				}
				if w.MaximumPassingSpeedup == nil && w.FirstFailingSpeedup == nil {
					return fmt.Errorf("no speedup boundary: notes %q", w.Notes)
				}
				for key, v := range map[string]*float64{"maximum_passing_speedup": w.MaximumPassingSpeedup, "first_failing_speedup": w.FirstFailingSpeedup,
					"maximum_passing_request_rate": w.MaximumPassingRequestRate, "first_failing_request_rate": w.FirstFailingRequestRate} {
					got, ok := attrs[key+".recorded"]
					if v == nil && ok && got != "" || v != nil && got != fmt.Sprint(*v) {
						return fmt.Errorf("%s %q in state, document %v", key, got, v)
					}
				}
				if len(w.TraceSHA256) != 64 {
					return fmt.Errorf("trace_sha256 %q", w.TraceSHA256)
				}
				rec, err := records.Recompute(doc, recordsDir)
				if err != nil {
					return err
				}
				for _, r := range rec {
					if len(r.Differences) > 0 {
						return fmt.Errorf("%s recomputes differently: %v", r.File, r.Differences)
					}
				}
				t.Logf("llama.cpp holds speedup %v of the trace (first failing %v, bound by %v); %d trials recomputed bit for bit", derefFloat(w.MaximumPassingSpeedup), derefFloat(w.FirstFailingSpeedup), w.BoundBy, len(rec))
				return nil
			},
		}},
	})
}

func derefFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
