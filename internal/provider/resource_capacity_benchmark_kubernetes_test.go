package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// runner takes one place, docker or kubernetes, and a Kubernetes runner names its namespace
// and image, and places its Job by Kubernetes' rules; each refused at plan, before any
// cluster is contacted.
func TestCapacityBenchmark_kubernetesRunnerPlan(t *testing.T) {
	for _, tc := range []struct{ name, runner, want string }{
		{"both places", `{ docker = { container = "s" }, kubernetes = { namespace = "n", image = "i" } }`, `(?s)Runner needs one place.*exactly one of runner.docker.*runner.kubernetes`},
		{"no place", `{}`, `(?s)Runner needs one place.*exactly one of runner.docker.*runner.kubernetes`},
		{"empty image", `{ kubernetes = { namespace = "n", image = "" } }`, `(?s)runner.kubernetes.image: must name the runner image`},
		{"no namespace", `{ kubernetes = { image = "i" } }`, `(?s)Incorrect attribute value type|attribute "namespace" is required`},
		{"unknown access", `{ kubernetes = { namespace = "n", image = "i", pod_access = "ssh" } }`, `(?s)pod_access.*api_proxy.*pod_network`},
		{"bad taint key", `{ kubernetes = { namespace = "n", image = "i", tolerations = [{ key = "gpu pool", operator = "Exists" }] } }`, `(?s)runner.kubernetes.tolerations\[0\].key.*not a taint key`},
		{"bad node label", `{ kubernetes = { namespace = "n", image = "i", node_selector = { "pool" = "a b" } } }`, `(?s)runner.kubernetes.node_selector\["pool"\].*not a label value`},
		{"more pods than measured requests", `{ kubernetes = { namespace = "n", image = "i", pods = 8 } }
  trial = { measured_requests = 4 }`, `(?s)More pods than measured requests.*runner.kubernetes.pods to at most 4`},
		{"no pods", `{ kubernetes = { namespace = "n", image = "i", pods = 0 } }`, `(?s)runner.kubernetes.pods.*at least 1, got 0`},
		{"too many pods", `{ kubernetes = { namespace = "n", image = "i", pods = 65 } }`, `(?s)runner.kubernetes.pods.*at most 64, got 65`},
		{"trace replay", `{ kubernetes = { namespace = "n", image = "i" } }
  workloads = [{ label = "t", trace = { file = "t.jsonl" } }]`, `Trace replay with a runner`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workloads := `  workloads = [{ label = "a", input_tokens = 8, output_tokens = 8 }]`
			if tc.name == "trace replay" {
				workloads = ""
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "bad" {
  endpoint  = "http://127.0.0.1:9"
  model     = "m"
%s
  slos      = [{ percentile = 95, threshold_ms = 100 }]
  runner    = %s
}`, workloads, tc.runner),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}
