package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/metrics"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// degenerateWorkload asks for 32 tokens a request: enough text for the degenerate-output
// rules to judge ("!" is one code point a token; 16 are needed), and for the same-text rule
// (the simulated engine's words are about six code points; 128 are needed).
const degenerateWorkload = `  workloads     = [{ label = "64 / 32", input_tokens = 64, output_tokens = 32 }]`

// TestAccCapacityBenchmark_degenerateOutput: a server that answers HTTP 200 in good time but
// with broken text (every token "!", as llm-scaler #647 reports from B70 hosts, or the same
// text for every prompt) has no capacity: the first trial at the minimum concurrency is an
// error, apply fails naming the degenerate output and quoting it, and the trial is journaled
// with verdict error so a resumed run measures it again.
func TestAccCapacityBenchmark_degenerateOutput(t *testing.T) {
	t.Parallel()
	for fault, want := range map[simengine.OutputFault]string{
		simengine.OutputExclamation: `U\+0021 '!' repeated for 32 of its 32 code points: \\"!!!!`,
		simengine.OutputSame:        `the same \d+ code points for different prompts: \\"`,
		// Issue 41: not one code point, nor the same text checked first: the token itself.
		simengine.OutputUnknownToken: `the token \\"<unk>\\" repeated for 160 of its 160 code points: \\"<unk><unk>`,
	} {
		t.Run(string(fault), func(t *testing.T) {
			t.Parallel()
			engine, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim-qwen", APIKey: benchAPIKey, OutputFault: fault})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(engine)
			defer srv.Close()
			progress := filepath.Join(t.TempDir(), "progress.jsonl")
			config := strings.Replace(faultConfig(srv.URL, progress), `  workloads     = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]`, degenerateWorkload, 1)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: config,
					ExpectError: regexp.MustCompile(strings.ReplaceAll(`most outputs are degenerate: 6 of 6 measured outputs at the minimum concurrency: 6 degenerate_output \(e\.g\. "`+
						want+`(?s).*the server answers HTTP 200 with broken text, so there is no capacity to measure`, " ", `\s+`)),
				}},
			})
			got := journalEntry(t, progress, func(r capacity.JournalEntry) bool { return r.Concurrency == 1 })
			if got.LogFields()["verdict"] != "error" || got.Errors != 6 {
				t.Errorf("aborting trial journaled with verdict %v and %d errors, want error and 6", got.LogFields()["verdict"], got.Errors)
			}
			if d := got.Metrics.Correctness.DegenerateOutputs; d == nil || d.Requests != 6 || d.Checked != 6 {
				t.Errorf("journaled degenerate_outputs = %+v, want 6 of 6", d)
			}
		})
	}
}

// exclamationStream answers a streamed request with 32 "!" in 8 chunks and usage counting
// the 8 tokens the workload asks for: what a server whose attention kernel broke under batching sends.
func exclamationStream(w http.ResponseWriter, _ *http.Request) {
	sseHeader(w)
	var b strings.Builder
	for range 8 {
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"content":"!!!!"}}]}` + "\n\n")
	}
	b.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n")
	b.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":75,"completion_tokens":8,"total_tokens":83}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	sseWrite(w, b.String())
}

// TestAccCapacityBenchmark_degenerateAboveMinimum: outputs that turn to "!!!!" only at a
// higher concurrency (a kernel that breaks with the batch) make that level's trial an
// error, not a pass however fast it answered: the boundary stops below it, the note and
// the trial's verdict say why, and results_json counts the degenerate outputs.
func TestAccCapacityBenchmark_degenerateAboveMinimum(t *testing.T) {
	t.Parallel()
	proxy := &faultProxy{next: newBoundaryEngine(t), schedule: func(n int64) fault {
		if n >= faultedRequest {
			return exclamationStream
		}
		return nil
	}}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	progress := filepath.Join(t.TempDir(), "progress.jsonl")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// Every "!!!!" answer meets the TTFT objective: only its text fails the trial.
			Config: faultConfig(srv.URL, progress),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"),
					knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("notes"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringRegexp(regexp.MustCompile(
						`^confirmation 1 at concurrency 3: 6 of 6 measured outputs were degenerate: 6 degenerate_output \(e\.g\. "U\+0021 '!' repeated for 32 of its 32 code points: \\"!!!!`))})),
			},
			Check: func(s *terraform.State) error {
				doc, err := results.Parse([]byte(s.RootModule().Resources["llmserve_capacity_benchmark.test"].Primary.Attributes["results_json"]))
				if err != nil {
					return err
				}
				w := doc.Workloads[0]
				if len(w.FailingTrials) != 1 || results.Verdict(doc.Objectives(), w.FailingTrials[0]) != results.VerdictError {
					return fmt.Errorf("failing trials %+v, want one error", w.FailingTrials)
				}
				for _, tr := range w.AllTrials {
					if tr.Concurrency == 3 && tr.Verdict != "error" {
						return fmt.Errorf("trial at concurrency 3 has verdict %q, want error", tr.Verdict)
					}
				}
				want := results.DegenerateOutputs{Requests: 6, Checked: 6, RepeatedCodePoint: 6, IdenticalAcrossPrompts: 0}
				if d := w.FailingTrials[0].Correctness.DegenerateOutputs; d == nil || *d != want {
					return fmt.Errorf("failing trial's degenerate_outputs = %+v, want %+v", d, want)
				}
				for _, p := range w.PassingTrials {
					if d := p.Correctness.DegenerateOutputs; d == nil || d.Requests != 0 || d.Checked != 6 {
						return fmt.Errorf("passing trial's degenerate_outputs = %+v, want 0 of 6", d)
					}
				}
				if d := doc.CorrectnessTotal.DegenerateOutputs; d == nil || d.Requests != 6 {
					return fmt.Errorf("correctness_total.degenerate_outputs = %+v, want 6 requests", d)
				}
				return nil
			},
		}},
	})
}

// TestAccCapacityBenchmark_healthyOutputLlamaCpp: the real llama.cpp on the generated
// random-weight model (garbage, but varied, text: what a healthy server's greedy decoding is
// to the rules) passes its readiness completion and has no output flagged: the false-alarm
// count on a live healthy server, logged with the number of outputs judged. Outputs are kept
// short (64 greedy tokens) for a shared CI machine; the same model's 256- and 512-token
// greedy outputs, loops included, are judged in internal/degenerate's recorded outputs.
func TestAccCapacityBenchmark_healthyOutputLlamaCpp(t *testing.T) {
	testAccPreCheck(t)
	model := testAccTinyModel(t)
	b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		t.Fatal(err)
	}
	testAccRequireLlamaCppImage(t, b)
	const name = "llmserve-acc-degenerate"
	cfg := tinyLlamaServerHCL(name, model) + `

resource "llmserve_capacity_benchmark" "tiny" {
  endpoint  = llmserve_inference_server.tiny.endpoint
  model     = llmserve_inference_server.tiny.served_model_name
  workloads = [{ label = "64 / 64", input_tokens = 64, output_tokens = 64 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search    = { concurrency_levels = [1, 2] }
  trial     = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 1, cache_flush = "auto" }
  triggers  = { container = llmserve_inference_server.tiny.id }
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: func(s *terraform.State) error {
				doc, err := results.Parse([]byte(s.RootModule().Resources["llmserve_capacity_benchmark.tiny"].Primary.Attributes["results_json"]))
				if err != nil {
					return err
				}
				judged, flagged, trials := 0, 0, 0
				for _, tr := range doc.Workloads[0].AllTrials {
					d := tr.Correctness.DegenerateOutputs
					if d == nil || d.Checked != 8 || tr.Correctness.UniqueOutputs != 8 {
						return fmt.Errorf("trial at concurrency %d: degenerate_outputs %+v, unique_outputs %d; want 8 judged and unique", tr.Concurrency, d, tr.Correctness.UniqueOutputs)
					}
					if d.Requests > 0 {
						return fmt.Errorf("trial at concurrency %d flags healthy outputs: %+v, %s", tr.Concurrency, *d, metrics.DescribeErrors(tr.ErrorSummary))
					}
					judged, flagged, trials = judged+d.Checked, flagged+d.Requests, trials+1
				}
				if trials != 2 {
					return fmt.Errorf("%d trials, want one at each of the 2 levels", trials)
				}
				t.Logf("llama.cpp, tiny model, 64 greedy tokens a request: %d of %d outputs flagged degenerate in %d trials (%d tokens generated)",
					flagged, judged, trials, doc.CorrectnessTotal.CompletionTokensTotal)
				return nil
			},
		}},
	})
}
