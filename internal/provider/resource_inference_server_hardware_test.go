package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

// experiment.hardware names the devices the server's container sees, read by running the
// engine's own probe inside it (llama-server --list-devices here, answered by the test
// image's shim in llama.cpp's output shape), at create and again at import.
func TestAccInferenceServer_hardware(t *testing.T) {
	b := accEngine(t)
	name := accContainer + "-hardware"
	const want = "2 x Intel(R) Arc(TM) Pro B70 Graphics, 32656 MiB each"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckGone(b, name),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
resource "llmserve_inference_server" "test" {
  name              = %q
  image             = %q
  engine            = "llamacpp"
  model             = "/models/sim.gguf"
  labels            = %s
  readiness_timeout = "2m"
  environment       = { SIMENGINE_DEVICES = "Intel(R) Arc(TM) Pro B70 Graphics:32656;Intel(R) Arc(TM) Pro B70 Graphics:32656" }
}
`, name, accImage, enginetest.HCLLabels()),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(accResource, tfjsonpath.New("experiment").AtMapKey("hardware"), knownvalue.StringExact(want)),
				},
			},
			{
				ResourceName:      accResource,
				ImportState:       true,
				ImportStateId:     name,
				ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"timeouts", "labels", "readiness_timeout", "environment", "server_version",
					"experiment.context_length", "experiment.physical_token_pool"},
			},
		},
	})
}
