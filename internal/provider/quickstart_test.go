package provider

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The real chain: the quickstart configuration itself, applied by the real Terraform CLI,
// deploys llama.cpp's llama-server (Debian forky's llama.cpp-tools, imported into the local
// dockerd) with the project's generated GGUF model, measures both workloads and gates.
// scripts/test-all.sh builds the image and the model first; run by hand:
//
//	scripts/build-llamacpp-image.sh && scripts/build-model.sh
//	TF_ACC=1 TF_ACC_TERRAFORM_PATH=/usr/local/bin/terraform go test ./internal/provider -run TestAccQuickstart -v
const (
	quickstartImage = "llmserve/llamacpp:latest"
	// Not the quickstart's own name: a quickstart a user left running must survive the test.
	quickstartContainer = "llmserve-acc-quickstart"
	// The model's chat template wraps a user message in 4 tokens (BOS, <|user|>, <|end|>,
	// <|assistant|>); /tokenize counts the message alone.
	quickstartTemplateTokens = 4
	quickstartMeasured       = 16
	quickstartConfirmations  = 2
)

func TestAccQuickstart_llamaCpp(t *testing.T) {
	testAccPreCheck(t)
	model := testAccTinyModel(t)
	b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		t.Fatal(err)
	}
	testAccRequireLlamaCppImage(t, b)
	// The quickstart names its provider registry.terraform.io/llmserve/llmserve, as users do.
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "llmserve")

	const bench = "llmserve_capacity_benchmark.tiny"
	progressLog := filepath.Join(t.TempDir(), "progress.log")
	labels := []string{"256 / 32", "1024 / 32"}
	notNullMap := knownvalue.MapExact(map[string]knownvalue.Check{labels[0]: knownvalue.NotNull(), labels[1]: knownvalue.NotNull()})

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, quickstartContainer),
		Steps: []resource.TestStep{{
			ConfigFile: config.StaticFile("../../examples/quickstart/main.tf"),
			ConfigVariables: config.Variables{
				"name":              config.StringVariable(quickstartContainer),
				"model_path":        config.StringVariable(model),
				"image":             config.StringVariable(quickstartImage),
				"measured_requests": config.IntegerVariable(quickstartMeasured),
				"progress_file":     config.StringVariable(filepath.Join(t.TempDir(), "progress.jsonl")),
				"progress_log":      config.StringVariable(progressLog),
			},
			ConfigStateChecks: []statecheck.StateCheck{
				// Every workload found a failing level within 1..16: llama-server runs 2 slots,
				// so from 3 users on requests queue behind whole requests.
				statecheck.ExpectKnownValue(bench, tfjsonpath.New("first_failing_concurrency"), notNullMap),
				statecheck.ExpectKnownValue("llmserve_inference_server.tiny", tfjsonpath.New("running"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue("llmserve_inference_server.tiny", tfjsonpath.New("command"),
					knownvalue.ListPartial(map[int]knownvalue.Check{0: knownvalue.StringExact("llama-server")})),
				statecheck.ExpectKnownOutputValue("maximum_passing_concurrency", knownvalue.MapSizeExact(2)),
			},
			Check: resource.ComposeTestCheckFunc(checkQuickstartPace(t), checkQuickstartResults(t, bench, labels), checkProgressLog(progressLog)),
		}, {
			// A gate the result cannot meet fails at plan from the result in state (nothing
			// is measured again), with correct plurals and the exact command that recovers.
			ConfigFile: config.StaticFile("../../examples/quickstart/main.tf"),
			ConfigVariables: config.Variables{
				"name":              config.StringVariable(quickstartContainer),
				"model_path":        config.StringVariable(model),
				"image":             config.StringVariable(quickstartImage),
				"measured_requests": config.IntegerVariable(quickstartMeasured),
				"progress_file":     config.StringVariable(filepath.Join(t.TempDir(), "progress.jsonl")),
				"progress_log":      config.StringVariable(progressLog),
				"minimum_capacity":  config.IntegerVariable(99),
			},
			ExpectError: regexp.MustCompile(`(?s)for\s+(1\s+user|(0|[2-9]|[1-9][0-9]+)\s+users)\s+at\s+256\s+in\s+/\s+32\s+out;\s+the\s+gate\s+asks\s+for\s+99\s+users.*` +
				`terraform\s+apply\s+-replace=llmserve_capacity_benchmark.tiny.*scripts/quickstart.sh\s+remeasure.*make\s+quickstart-destroy`),
		}},
	})
}

// checkQuickstartResults reads results_json and asserts what the issue asks of a real run:
// a boundary per workload, confirmation trials with the configured counts, no errors, no
// warmup/measured overlap, every request cut at max_tokens, and prompt lengths within 1 % of
// the configured input plus the chat template.
func checkQuickstartResults(t *testing.T, name string, labels []string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		doc, err := results.Parse([]byte(s.RootModule().Resources[name].Primary.Attributes["results_json"]))
		if err != nil {
			return err
		}
		if len(doc.Workloads) != len(labels) {
			return fmt.Errorf("%d workloads in results_json, want %d", len(doc.Workloads), len(labels))
		}
		for i, w := range doc.Workloads {
			if w.Label != labels[i] {
				return fmt.Errorf("workload %d is %q, want %q", i, w.Label, labels[i])
			}
			for _, tr := range w.AllTrials {
				t.Logf("%s: %s at concurrency %d: %s, p95 TTFT %.0f ms, median request latency %.0f ms", w.Label, tr.Kind, tr.Concurrency, tr.Verdict, tr.TTFTMs.P95, tr.RequestLatencyMs.P50)
			}
			if w.FirstFailingConcurrency == nil {
				return fmt.Errorf("%s: no failing concurrency found up to 16", w.Label)
			}
			ff := *w.FirstFailingConcurrency
			if mp := w.MaximumPassingConcurrency; (mp == nil) != (ff == 1) || (mp != nil && *mp != ff-1) {
				return fmt.Errorf("%s: maximum passing %v does not sit just below first failing %d", w.Label, mp, ff)
			}
			wantPassing := quickstartConfirmations
			if w.MaximumPassingConcurrency == nil {
				wantPassing = 0
			}
			if len(w.PassingTrials) != wantPassing || len(w.FailingTrials) != quickstartConfirmations {
				return fmt.Errorf("%s: %d passing and %d failing confirmation trials, want %d and %d",
					w.Label, len(w.PassingTrials), len(w.FailingTrials), wantPassing, quickstartConfirmations)
			}
			want := float64(w.ConfiguredISL + quickstartTemplateTokens)
			for _, tr := range append(append([]results.Trial{}, w.PassingTrials...), w.FailingTrials...) {
				c := tr.Correctness
				if c.ProfilingRecords != quickstartMeasured || c.WarmupRecords != 2 || c.HTTP200 != quickstartMeasured {
					return fmt.Errorf("%s c=%d: %d measured / %d warmup / %d HTTP 200, want %d / 2 / %d",
						w.Label, tr.Concurrency, c.ProfilingRecords, c.WarmupRecords, c.HTTP200, quickstartMeasured, quickstartMeasured)
				}
				if c.Errors != 0 || c.WarmupProfilePromptOverlap != 0 || c.FinishReasonLength != quickstartMeasured || c.OutputLengthMismatches != 0 {
					return fmt.Errorf("%s c=%d: counters %+v", w.Label, tr.Concurrency, c)
				}
				if c.UniquePrompts != quickstartMeasured || c.CompletionTokensTotal != quickstartMeasured*w.ConfiguredOSL {
					return fmt.Errorf("%s c=%d: %d unique prompts, %d completion tokens", w.Label, tr.Concurrency, c.UniquePrompts, c.CompletionTokensTotal)
				}
				for _, got := range []float64{tr.ServerPromptTokens.Min, tr.ServerPromptTokens.Max} {
					if math.Abs(got-want) > 0.01*want {
						return fmt.Errorf("%s c=%d: server prompt tokens %v, want %v ± 1 %%", w.Label, tr.Concurrency, tr.ServerPromptTokens, want)
					}
				}
			}
			t.Logf("%s: maximum passing %v, first failing %d, server prompt tokens %v",
				w.Label, deref(w.MaximumPassingConcurrency), ff, w.ServerPromptTokens)

		}
		return nil
	}
}

// checkQuickstartPace: with ttft_p95_ms unset the demo's SLO is 2.4 × the median request
// latency one user saw at 1024 in / 32 out on this machine (llmserve_capacity_benchmark.pace),
// which is what keeps its boundaries inside 1..16 on a machine twice as slow.
func checkQuickstartPace(t *testing.T) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		pace, ok := s.RootModule().Resources["llmserve_capacity_benchmark.pace.0"]
		if !ok {
			return fmt.Errorf("no llmserve_capacity_benchmark.pace in state: the SLO was not set from the machine's pace")
		}
		doc, err := results.Parse([]byte(pace.Primary.Attributes["results_json"]))
		if err != nil {
			return err
		}
		w := doc.Workloads[0]
		if len(w.PassingTrials) != 1 || w.PassingTrials[0].Concurrency != 1 {
			return fmt.Errorf("pace: passing trials %+v, want one at concurrency 1", w.PassingTrials)
		}
		p50 := w.PassingTrials[0].RequestLatencyMs.P50
		want := math.Ceil(2.4 * p50)
		got := s.RootModule().Outputs["ttft_p95_ms"]
		if got == nil || fmt.Sprint(got.Value) != fmt.Sprint(want) {
			return fmt.Errorf("output ttft_p95_ms %v, want ceil(2.4 × %.1f ms) = %v", got, p50, want)
		}
		if th := s.RootModule().Resources["llmserve_capacity_benchmark.tiny"].Primary.Attributes["slos.0.threshold_ms"]; th != fmt.Sprint(want) {
			return fmt.Errorf("the benchmark's threshold_ms is %s, want the pace's %v", th, want)
		}
		t.Logf("pace: one user at 1024 in / 32 out, median request latency %.1f ms (TTFT p50 %.1f ms): SLO p95 TTFT < %v ms", p50, w.PassingTrials[0].TTFTMs.P50, want)
		return nil
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkProgressLog: the quickstart's progress_log has a readable line per finished trial,
// each with what is left.
func checkProgressLog(path string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("the quickstart's progress_log: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		trials := 0
		for _, l := range lines {
			if strings.Contains(l, " elapsed, ") {
				trials++
			}
		}
		if trials < 4 {
			return fmt.Errorf("progress_log has %d trial lines, want one per trial (at least 4):\n%s", trials, raw)
		}
		return nil
	}
}

// The quickstart tells a person to follow its readable progress_log, not the JSON journal.
func TestQuickstartSetsAndShowsProgressLog(t *testing.T) {
	t.Parallel()
	for path, want := range map[string][]string{
		"../../examples/quickstart/main.tf": {"progress_log  = var.progress_log", "tail -f"},
		"../../scripts/quickstart.sh":       {"tail -f examples/quickstart/capacity.progress.log"},
		"../../README.md":                   {"tail -f examples/quickstart/capacity.progress.log"},
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(raw), w) {
				t.Errorf("%s does not say %q", path, w)
			}
		}
		if strings.Contains(string(raw), "tail -f examples/quickstart/capacity.progress.jsonl") {
			t.Errorf("%s tells users to tail -f the JSON journal", path)
		}
	}
}
