package provider

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// What a new server's configuration decides is in the plan, not "known after apply": the
// launch command, the served model name and, with a fixed host port, the endpoint, so a
// benchmark downstream plans with a known endpoint and model. Planning contacts no engine
// (the ssh host does not exist).
func TestAccInferenceServer_planShowsWhatIsKnown(t *testing.T) {
	t.Parallel()
	const server = "llmserve_inference_server.qwen"
	// The provider checks the ssh key at plan, so the configuration carries a real one.
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
provider "llmserve" {
  docker_host     = "ssh://ops@gpu-host-1.invalid"
  ssh_private_key = <<EOT
` + string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})) + `EOT
}

resource "llmserve_inference_server" "qwen" {
  name         = "qwen-sglang"
  image        = "lmsysorg/sglang:latest"
  engine       = "sglang"
  model        = "Qwen/Qwen3-8B"
  bind_address = "0.0.0.0"
  host_port    = 30000
}

resource "llmserve_inference_server" "ephemeral" {
  name   = "ephemeral"
  image  = "vllm/vllm-openai:latest"
  engine = "vllm"
  model  = "Qwen/Qwen3-8B"
  served_model_name = "qwen"
}

resource "llmserve_capacity_benchmark" "qwen" {
  endpoint  = llmserve_inference_server.qwen.endpoint
  model     = llmserve_inference_server.qwen.served_model_name
  workloads = [{ label = "2K / 512", input_tokens = 2048, output_tokens = 512 }]
  slos      = [{ percentile = 95, threshold_ms = 10000 }]
}`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(server, tfjsonpath.New("endpoint"), knownvalue.StringExact("http://gpu-host-1.invalid:30000")),
				plancheck.ExpectKnownValue(server, tfjsonpath.New("served_model_name"), knownvalue.StringExact("Qwen/Qwen3-8B")),
				plancheck.ExpectKnownValue(server, tfjsonpath.New("command"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("python3"), knownvalue.StringExact("-m"), knownvalue.StringExact("sglang.launch_server"),
					knownvalue.StringExact("--model-path"), knownvalue.StringExact("Qwen/Qwen3-8B"),
					knownvalue.StringExact("--tp"), knownvalue.StringExact("1"),
					knownvalue.StringExact("--device"), knownvalue.StringExact("cpu"),
					knownvalue.StringExact("--enable-metrics"), knownvalue.StringExact("--enable-cache-report"),
					knownvalue.StringExact("--host"), knownvalue.StringExact("0.0.0.0"),
					knownvalue.StringExact("--port"), knownvalue.StringExact("30000"),
				})),
				// The benchmark reads both at plan.
				plancheck.ExpectKnownValue("llmserve_capacity_benchmark.qwen", tfjsonpath.New("endpoint"), knownvalue.StringExact("http://gpu-host-1.invalid:30000")),
				plancheck.ExpectKnownValue("llmserve_capacity_benchmark.qwen", tfjsonpath.New("model"), knownvalue.StringExact("Qwen/Qwen3-8B")),
				// Without a fixed host port the engine host picks one at start.
				plancheck.ExpectUnknownValue("llmserve_inference_server.ephemeral", tfjsonpath.New("endpoint")),
				plancheck.ExpectKnownValue("llmserve_inference_server.ephemeral", tfjsonpath.New("served_model_name"), knownvalue.StringExact("qwen")),
				plancheck.ExpectKnownValue("llmserve_inference_server.ephemeral", tfjsonpath.New("command").AtSliceIndex(5), knownvalue.StringExact("--served-model-name")),
			}},
		}},
	})
}
