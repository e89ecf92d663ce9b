package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

func TestAccFunctionReplicasFor(t *testing.T) {
	t.Parallel()
	step := func(call, want string) resource.TestStep {
		return resource.TestStep{
			Config:      `output "n" { value = provider::llmserve::` + call + ` }`,
			ExpectError: errorPattern(want),
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{
			{
				Config: `
output "headroom" { value = provider::llmserve::replicas_for(40, 7, 0.2) }
output "exact"    { value = provider::llmserve::replicas_for(42, 7, 0) }
output "none"     { value = provider::llmserve::replicas_for(0, 0, 0) }
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("headroom", knownvalue.Int64Exact(8)),
					statecheck.ExpectKnownOutputValue("exact", knownvalue.Int64Exact(6)),
					statecheck.ExpectKnownOutputValue("none", knownvalue.Int64Exact(0)),
				},
			},
			step("replicas_for(10, 0, 0.2)", "capacity is 0: one replica missed the objectives with a single user, so no number of replicas serves 10 users"),
			step("replicas_for(10, null, 0.2)", "capacity is null: no concurrency tried passed"),
			step("replicas_for(10, 7, 20)", "headroom is the fraction of each replica's capacity kept free"),
			step("replicas_for(-1, 7, 0.2)", "users must be a number of concurrent users, 0 or more; got -1"),
			// Issue 33: these reached the framework's "unexpected error ... report this to the
			// provider developer"; each is an argument error naming the argument.
			step("replicas_for(1/0, 7, 0.2)", `Invalid value for "users" parameter: users is infinite`),
			step("replicas_for(10, 7.5, 0.2)", `Invalid value for "capacity" parameter: capacity must be a whole number of concurrent users (maximum_passing_concurrency is one), got 7.5`),
			step("replicas_for(10, 7, 1/0)", `Invalid value for "headroom" parameter: headroom is infinite`),
			step("replicas_for(10, 1e30, 0.2)", `Invalid value for "capacity" parameter: capacity must be a whole number`),
		},
	})
}
