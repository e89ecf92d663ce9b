package provider

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func near(want float64) knownvalue.Check {
	return knownvalue.Float64Func(func(v float64) error {
		if math.Abs(v-want) > 1e-6*math.Abs(want) {
			return fmt.Errorf("%v, want %v", v, want)
		}
		return nil
	})
}

// The reference result at $10 an hour: 8K / 1K held 7 users on 4 Arc GPUs (tensor
// parallelism 4) with its three passing trials at 216.732, 206.125 and 216.189 output
// tokens/s.
func TestAccCapacityReportCost(t *testing.T) {
	t.Parallel()
	tps := (216.7322698155348 + 206.12497099146285 + 216.18929659395707) / 3
	const addr = "data.llmserve_capacity_report.priced"
	at := func(k string) tfjsonpath.Path { return tfjsonpath.New("cost").AtMapKey("8K / 1K").AtMapKey(k) }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
data "llmserve_capacity_report" "priced" {
  path          = %q
  cost_per_hour = 10
}
`, referencePath(t)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, at("accelerators"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(addr, at("output_tokens_per_second"), near(tps)),
					statecheck.ExpectKnownValue(addr, at("output_tokens_per_second_per_accelerator"), near(tps/4)),
					statecheck.ExpectKnownValue(addr, at("cost_per_million_output_tokens"), near(10/(tps*3600)*1e6)),
					statecheck.ExpectKnownValue(addr, at("cost_per_concurrent_user_hour"), near(10.0/7)),
				},
			},
			{
				Config: fmt.Sprintf(`
data "llmserve_capacity_report" "priced" {
  path          = %q
  cost_per_hour = 10
  accelerators  = 8
}
`, referencePath(t)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, at("output_tokens_per_second_per_accelerator"), near(tps/8)),
				},
			},
			{
				Config: fmt.Sprintf(`
data "llmserve_capacity_report" "priced" {
  path = %q
}
`, referencePath(t)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cost"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("comparison"), knownvalue.Null()),
				},
			},
		},
	})
}

// The price given to the data source travels in its results_json: the report functions
// render the costs from it, and a data source reading that document back has them without
// being given a price again.
func TestAccCapacityReportCostRendered(t *testing.T) {
	t.Parallel()
	contains := func(parts ...string) knownvalue.Check {
		return knownvalue.StringFunc(func(s string) error {
			for _, p := range parts {
				if !strings.Contains(s, p) {
					return fmt.Errorf("lacks %q in:\n%s", p, s)
				}
			}
			return nil
		})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
data "llmserve_capacity_report" "priced" {
  path          = %q
  cost_per_hour = 10
}
data "llmserve_capacity_report" "archived" {
  content = data.llmserve_capacity_report.priced.results_json
}
output "markdown" {
  value = provider::llmserve::report_markdown(data.llmserve_capacity_report.priced.results_json)
}
output "openmetrics" {
  value = provider::llmserve::report_openmetrics(data.llmserve_capacity_report.priced.results_json)
}
output "archived_cost" {
  value = data.llmserve_capacity_report.archived.cost["8K / 1K"].cost_per_million_output_tokens
}
`, referencePath(t)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("markdown", contains("## Cost\n\nAt 10 per hour (4 accelerators)", "| 8K / 1K | 7 | 213.0 | 53.3 | 13.04 | 1.43 |")),
				statecheck.ExpectKnownOutputValue("openmetrics", contains("llmserve_price_per_hour 10\n", `llmserve_cost_per_million_output_tokens{workload="8K / 1K"} 13.04`)),
				statecheck.ExpectKnownOutputValue("archived_cost", near(10/((216.7322698155348+206.12497099146285+216.18929659395707)/3*3600)*1e6)),
			},
		}},
	})
}
