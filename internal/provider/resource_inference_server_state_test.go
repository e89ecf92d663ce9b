package provider

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// State stays true: an in-place change is what an import of the container reads back, and a
// server configured with an empty environment, argument list and mount list imports with
// exactly those, so the plan after the import is empty (no replacement).
func TestAccInferenceServer_inPlaceChangeThenImport(t *testing.T) {
	b := accEngine(t)
	name := accContainer + "-inplace"
	cfg := func(inPlace string) string {
		return fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name        = %q
  image       = %q
  engine      = "sglang"
  model       = "sim/qwen-test"
  labels      = %s
  environment = {}
  extra_args  = []
  mounts      = []
%s
}
`, name, accImage, enginetest.HCLLabels(), inPlace)
	}
	created := cfg(`  readiness_timeout = "2m"`)
	changed := cfg(`  readiness_timeout = "3m"
  stop_grace_period_seconds = 7
  restart_policy = "on-failure"`)
	// The in-place change keeps the container: its id is the same after both applies.
	sameContainer := statecheck.CompareValue(compare.ValuesSame())
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{
			{
				Config:            created,
				ConfigStateChecks: []statecheck.StateCheck{sameContainer.AddStateValue(accResource, tfjsonpath.New("id"))},
			},
			{
				Config: changed,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(accResource, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{sameContainer.AddStateValue(accResource, tfjsonpath.New("id"))},
			},
			{
				// The import reads the amended record: readiness_timeout 3m, grace 7 s, and the
				// empty collections as empty.
				ResourceName:            accResource,
				ImportState:             true,
				ImportStateId:           name,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"hub_token_wo", "api_key_wo", "timeouts"},
			},
			{
				// Imported through an import block with the changed configuration, the plan
				// is a no-op import: nothing to update, nothing to replace.
				Config:          changed,
				ResourceName:    accResource,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportStateId:   name,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(accResource, tfjsonpath.New("readiness_timeout"), knownvalue.StringExact("3m")),
					plancheck.ExpectKnownValue(accResource, tfjsonpath.New("stop_grace_period_seconds"), knownvalue.Int64Exact(7)),
					plancheck.ExpectKnownValue(accResource, tfjsonpath.New("environment"), knownvalue.MapSizeExact(0)),
					plancheck.ExpectKnownValue(accResource, tfjsonpath.New("extra_args"), knownvalue.ListSizeExact(0)),
				}},
			},
		},
	})
}

// llama.cpp reads its API key from a file written into the container before it starts, so
// docker inspect shows the key neither in the environment nor in the command; the real
// llama-server then refuses a request without the key and serves one with it.
func TestAccInferenceServer_llamaCppKeyFile(t *testing.T) {
	b := accEngine(t)
	model := testAccTinyModel(t)
	testAccRequireLlamaCppImage(t, b)
	name := accContainer + "-keyfile"
	cfg := fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name              = %q
  image             = %q
  engine            = "llamacpp"
  model             = "/models/tiny-llama.gguf"
  model_host_path   = %q
  served_model_name = "tiny"
  labels            = %s
  readiness_timeout = "3m"
  api_key_wo        = %q
}
`, name, quickstartImage, model, enginetest.HCLLabels(), accAPIKey)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeTestCheckFunc(
				func(*terraform.State) error {
					ci, err := b.Client().ContainerInspect(context.Background(), name)
					if err != nil {
						return err
					}
					shown := strings.Join(append(append(append([]string{}, ci.Config.Env...), ci.Config.Entrypoint...), ci.Config.Cmd...), " ")
					if strings.Contains(shown, accAPIKey) {
						return fmt.Errorf("docker inspect shows the API key: %s", shown)
					}
					if !strings.Contains(shown, "--api-key-file "+engine.APIKeyFile) {
						return fmt.Errorf("llama-server is not given --api-key-file: %s", shown)
					}
					return nil
				},
				func(s *terraform.State) error {
					ep := s.RootModule().Resources[accResource].Primary.Attributes["endpoint"]
					// Its own connection: llama-server closes it after the 401, and a POST on a
					// pooled, closed connection is not retried.
					hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
					resp, err := hc.Post(ep+"/v1/completions", "application/json", strings.NewReader(`{"model":"tiny","prompt":"hello","max_tokens":2}`))
					if err != nil {
						return err
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusUnauthorized {
						return fmt.Errorf("a request without the key got HTTP %d, want 401", resp.StatusCode)
					}
					return nil
				},
				testAccCheckCompletion("tiny", accAPIKey),
			),
		}},
	})
}

// With host networking nothing is published, so the engine itself must listen on
// bind_address: state saying 127.0.0.1 while the engine answered on every interface of the
// host would be the bind_address defect again. The plan shows the launch command.
func TestAccInferenceServer_hostNetworkListensOnBindAddress(t *testing.T) {
	t.Parallel()
	const server = "llmserve_inference_server.test"
	cfg := func(bind string) string {
		return fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name         = "host-net"
  image        = "lmsysorg/sglang:latest"
  engine       = "sglang"
  model        = "Qwen/Qwen3-8B"
  network_mode = "host"
  %s
}`, bind)
	}
	hostFlag := func(addr string) plancheck.PlanCheck {
		return plancheck.ExpectKnownValue(server, tfjsonpath.New("command"), flagValue{"--host", addr})
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg(""), PlanOnly: true, ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{hostFlag("127.0.0.1")}},
			},
			{
				Config: cfg(`bind_address = "0.0.0.0"`), PlanOnly: true, ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{hostFlag("0.0.0.0")}},
			},
		},
	})
}

// flagValue is a knownvalue.Check that a command list holds flag followed by value.
type flagValue struct{ flag, value string }

func (c flagValue) CheckValue(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("expected a list, got %T", v)
	}
	for i := 0; i+1 < len(list); i++ {
		if list[i] == c.flag {
			if list[i+1] != c.value {
				return fmt.Errorf("%s is followed by %v, want %s", c.flag, list[i+1], c.value)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s in %v", c.flag, list)
}

func (c flagValue) String() string { return c.flag + " " + c.value }
