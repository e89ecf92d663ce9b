package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
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
