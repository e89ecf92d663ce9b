package provider

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The real chain, llmserve_inference_server → llmserve_capacity_benchmark with
// cache_flush = "auto", against each engine's protocol double in Docker: the container runs
// the provider's own launch command, and SIMENGINE_PROTOCOL makes the test image serve the
// HTTP face of the engine launched (the /v1/loads wrapper, cached-token fields left out at 0,
// vLLM's development-mode reset) instead of the generic simulated engine.
func TestAccEngineDoubles_serverToBenchmark(t *testing.T) {
	b := accEngine(t)
	tests := []struct {
		engine string
		policy string // what aiperf.cache_policy must name
		probe  string // a path only the engine's double serves, and what its answer holds
		holds  string
	}{
		{"sglang", "(/flush_cache)", "/v1/loads", `"num_running_reqs"`},
		{"vllm", "(/reset_prefix_cache)", "/version", `"version"`},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			name := accContainer + "-double-" + tt.engine
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				CheckDestroy:             testAccCheckGone(b, name),
				Steps: []resource.TestStep{{
					Config: engineDoubleConfig(name, tt.engine),
					Check: func(s *terraform.State) error {
						srv := s.RootModule().Resources["llmserve_inference_server.test"].Primary.Attributes
						resp, err := http.Get(srv["endpoint"] + tt.probe)
						if err != nil {
							return err
						}
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tt.holds) {
							return fmt.Errorf("GET %s = %d %s: the container does not serve the %s double", tt.probe, resp.StatusCode, body, tt.engine)
						}
						rs := s.RootModule().Resources["llmserve_capacity_benchmark.test"].Primary.Attributes
						doc, err := results.Parse([]byte(rs["results_json"]))
						if err != nil {
							return fmt.Errorf("results_json does not parse: %w", err)
						}
						p := doc.AIPerf.CachePolicy
						if !strings.Contains(p, tt.policy) || !strings.Contains(p, `cache_flush = "auto"`) || !strings.Contains(p, tt.engine) {
							return fmt.Errorf("cache policy %q does not say auto picked %s's method %s", p, tt.engine, tt.policy)
						}
						trials := doc.Workloads[0].Trials()
						if len(trials) == 0 {
							return fmt.Errorf("no trials in results_json")
						}
						for _, tr := range trials {
							c := tr.Trial.Correctness
							if c.CachedPromptTokens == nil || !c.CachedPromptTokens.Known || c.RequestsCachedBeyondSharedPrefix != 0 {
								return fmt.Errorf("trial at concurrency %d: cached %+v, %d beyond the shared prefix, notes %q; want a known cold cache",
									tr.Concurrency, c.CachedPromptTokens, c.RequestsCachedBeyondSharedPrefix, tr.Trial.Notes)
							}
						}
						return nil
					},
				}},
			})
		})
	}
}

func engineDoubleConfig(name, engine string) string {
	return fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name              = %q
  image             = %q
  engine            = %q
  model             = "sim/qwen-test"
  labels            = %s
  readiness_timeout = "2m"
  environment       = { SIMENGINE_PROTOCOL = "auto", SIMENGINE_ARGS = "-time-scale=0.05" }
}

resource "llmserve_capacity_benchmark" "test" {
  endpoint  = llmserve_inference_server.test.endpoint
  model     = llmserve_inference_server.test.served_model_name
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search    = { concurrency_levels = [1, 2] }
  trial     = { warmup_requests = 2, measured_requests = 6, confirmation_trials = 1, cache_flush = "auto" }
}
`, name, accImage, engine, enginetest.HCLLabels())
}
