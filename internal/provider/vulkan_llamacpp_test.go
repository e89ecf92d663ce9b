package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// llama.cpp on an Intel host with two Arc GPUs, planned through the real CLI with no GPU and
// no engine host: the launch command offloads every layer to the two Vulkan devices gpu_ids
// selects and splits the model by layers; devices stays the accelerator's default (/dev/dri,
// mapped with the render and video groups: TestNewContainerVulkan), so the plan shows it
// unset, not []. A Vulkan index list that is shorter than tensor_parallel_size is refused.
func TestAccInferenceServer_planLlamaCppIntelVulkan(t *testing.T) {
	t.Parallel()
	const server = "llmserve_inference_server.arc"
	cfg := func(gpuIDs string) string {
		return `
provider "llmserve" {
  docker_host = "tcp://intel-arc-host.invalid:2376"
}

resource "llmserve_inference_server" "arc" {
  name                 = "arc-llamacpp"
  image                = "llmserve/llamacpp-vulkan:latest"
  engine               = "llamacpp"
  model                = "/models/model.gguf"
  model_host_path      = "/srv/models/model.gguf"
  accelerator          = "xpu"
  gpu_ids              = ` + gpuIDs + `
  tensor_parallel_size = 2
  bind_address         = "0.0.0.0"
  host_port            = 8080
}`
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:             cfg(`["1", "3"]`),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(server, tfjsonpath.New("command"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("llama-server"), knownvalue.StringExact("--model"), knownvalue.StringExact("/models/model.gguf"),
					knownvalue.StringExact("--cache-ram"), knownvalue.StringExact("512"),
					knownvalue.StringExact("--n-gpu-layers"), knownvalue.StringExact("999"),
					knownvalue.StringExact("--device"), knownvalue.StringExact("Vulkan0,Vulkan1"),
					knownvalue.StringExact("--split-mode"), knownvalue.StringExact("layer"),
					knownvalue.StringExact("--metrics"),
					knownvalue.StringExact("--host"), knownvalue.StringExact("0.0.0.0"),
					knownvalue.StringExact("--port"), knownvalue.StringExact("8080"),
				})),
				plancheck.ExpectKnownValue(server, tfjsonpath.New("accelerator"), knownvalue.StringExact("xpu")),
				plancheck.ExpectKnownValue(server, tfjsonpath.New("devices"), knownvalue.Null()),
				plancheck.ExpectKnownValue(server, tfjsonpath.New("endpoint"), knownvalue.StringExact("http://intel-arc-host.invalid:8080")),
			}},
		}, {
			Config:      cfg(`["1"]`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)gpu_ids.*lists 1 devices but tensor_parallel_size = 2.*list 2 devices`),
		}},
	})
}

// vulkanImage is scripts/build-llamacpp-image.sh --vulkan: llama.cpp with Debian's ggml
// Vulkan backend and Mesa's drivers, lavapipe among them.
const vulkanImage = "llmserve/llamacpp-vulkan:latest"

// The GPU path on a real Vulkan driver: llama.cpp with every layer on lavapipe (Mesa's
// conformant Vulkan implementation on the CPU), selected explicitly (it is a CPU-type device,
// which ggml uses only when GGML_VK_VISIBLE_DEVICES names it), no device node mapped. The
// server's own log proves the offload (-lv 4: "offloaded 7/7 layers to GPU", the model's
// buffer on Vulkan0), experiment.hardware names llvmpipe as --list-devices reports it, and a
// capacity search finds a boundary: one slot, so from 2 users on requests queue behind whole
// requests and p95 TTFT grows with each.
func TestAccInferenceServer_llamaCppVulkanLavapipe(t *testing.T) {
	testAccPreCheck(t)
	model := testAccTinyModel(t)
	b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client().ImageInspect(ctx, vulkanImage); err != nil {
		t.Fatalf("image %s is missing (%v): run scripts/build-llamacpp-image.sh --vulkan", vulkanImage, err)
	}
	const name = "llmserve-acc-vulkan"
	const server, bench = "llmserve_inference_server.lavapipe", "llmserve_capacity_benchmark.lavapipe"
	cfg := fmt.Sprintf(`
resource "llmserve_inference_server" "lavapipe" {
  name                 = %[1]q
  image                = %[2]q
  engine               = "llamacpp"
  model                = "/models/tiny-llama.gguf"
  model_host_path      = %[3]q
  served_model_name    = "tiny"
  accelerator          = "vulkan"
  gpu_ids              = ["0"] # lavapipe: a CPU-type device, used only when named
  devices              = []    # and it needs no device node
  max_running_requests = 1
  context_length       = 1024
  extra_args           = ["-lv", "4"] # the log lines that name where the layers went
  readiness_timeout    = "10m"
}

# The machine's pace: one user's median request latency on lavapipe here. The objective is
# twice that, so it scales with the machine: one user's first token (a fraction of a request)
# passes and three users (each waiting for two whole requests on the one slot) fail, on this
# machine or one twice as slow (a fixed 1500 ms failed one user at load 4-5).
resource "llmserve_capacity_benchmark" "pace" {
  endpoint  = llmserve_inference_server.lavapipe.endpoint
  model     = llmserve_inference_server.lavapipe.served_model_name
  workloads = [{ label = "16 / 16", input_tokens = 16, output_tokens = 16 }]
  slos      = [{ metric = "request_latency", percentile = 50, threshold_ms = 600000 }]
  search    = { concurrency_levels = [1] }
  trial     = { warmup_requests = 1, measured_requests = 6, confirmation_trials = 1, cache_flush = "auto", engine_warmup_requests = 4 }
  triggers  = { container = llmserve_inference_server.lavapipe.id }
}

resource "llmserve_capacity_benchmark" "lavapipe" {
  endpoint  = llmserve_inference_server.lavapipe.endpoint
  model     = llmserve_inference_server.lavapipe.served_model_name
  workloads = [{ label = "16 / 16", input_tokens = 16, output_tokens = 16 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = ceil(2 * llmserve_capacity_benchmark.pace.workload_results[0].passing_trials[0].request_latency_ms.p50) }]
  search    = { min_concurrency = 1, max_concurrency = 8 }
  # The engine warm-up primes the Vulkan pipelines ggml builds on first use (seconds each on a
  # GPU); one slot, so four requests at concurrency 1.
  trial     = { warmup_requests = 1, measured_requests = 6, confirmation_trials = 1, cache_flush = "auto", engine_warmup_requests = 4 }
  triggers  = { container = llmserve_inference_server.lavapipe.id }
}
`, name, vulkanImage, filepath.Join(model))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(server, tfjsonpath.New("experiment").AtMapKey("hardware"), knownvalue.StringRegexp(regexp.MustCompile(`^llvmpipe \(LLVM [0-9.]+, [0-9]+ bits\), [0-9]+ MiB$`))),
			},
			Check: func(s *terraform.State) error {
				attrs := s.RootModule().Resources[server].Primary.Attributes
				var cmd []string
				for i := 0; attrs[fmt.Sprintf("command.%d", i)] != ""; i++ {
					cmd = append(cmd, attrs[fmt.Sprintf("command.%d", i)])
				}
				if line := strings.Join(cmd, " "); !strings.Contains(line, "--n-gpu-layers 999 --device Vulkan0 --metrics") {
					return fmt.Errorf("command %q does not offload every layer to Vulkan0", line)
				}
				id := s.RootModule().Resources[server].Primary.ID
				logs, err := b.Logs(context.Background(), id, 100000)
				if err != nil {
					return err
				}
				for _, want := range []string{"using device Vulkan0 (llvmpipe", "offloaded 7/7 layers to GPU", "Vulkan0 model buffer size", "Vulkan0 KV buffer size"} {
					if !strings.Contains(logs, want) {
						return fmt.Errorf("the server's log does not say %q: the layers did not go to Vulkan0", want)
					}
				}
				doc, err := results.Parse([]byte(s.RootModule().Resources[bench].Primary.Attributes["results_json"]))
				if err != nil {
					return err
				}
				w := doc.Workloads[0]
				for _, tr := range w.AllTrials {
					t.Logf("%s at %d users: %s, p95 TTFT %.0f ms", tr.Kind, tr.Concurrency, tr.Verdict, tr.TTFTMs.P95)
					if tr.Correctness.Errors != 0 {
						return fmt.Errorf("trial at %d users had %d errors", tr.Concurrency, tr.Correctness.Errors)
					}
				}
				if !slices.ContainsFunc(w.Notes, func(n string) bool {
					return strings.HasPrefix(n, "engine warm-up before the first trial: 4 requests at each concurrency 1 (4 in all, ") && strings.HasSuffix(n, "s), not measured")
				}) {
					return fmt.Errorf("no note of an engine warm-up of 4 requests at concurrency 1 (the server's one slot), none failed: %q", w.Notes)
				}
				if w.MaximumPassingConcurrency == nil || w.FirstFailingConcurrency == nil {
					return fmt.Errorf("no boundary within 1..8 users: %v / %v, notes %q", w.MaximumPassingConcurrency, w.FirstFailingConcurrency, w.Notes)
				}
				t.Logf("llama.cpp on lavapipe holds %d users (first failing %d) against p95 TTFT < %s ms (twice the pace)", *w.MaximumPassingConcurrency, *w.FirstFailingConcurrency,
					s.RootModule().Resources[bench].Primary.Attributes["slos.0.threshold_ms"])
				return nil
			},
		}},
	})
}
