package provider

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func openLoopConfig(endpoint string) string {
	return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = %[1]q
  model     = "sim-qwen"
  api_key   = %[2]q
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  arrival   = { pattern = "constant" }
  search    = { rate = { min = 3, max = 12, tolerance = 0.25 } }
  trial     = { warmup_requests = 2, measured_requests = 16, confirmation_trials = 1 }
}
`, endpoint, benchAPIKey)
}

// The two-slot engine serves a request in about 8 × 40 ms, so it holds about 6 requests/s;
// the rate search finds the boundary between neighbouring rates of the ladder around it.
func TestAccCapacityBenchmark_openLoopRate(t *testing.T) {
	srv := httptest.NewServer(newBoundaryEngine(t))
	defer srv.Close()
	const addr = "llmserve_capacity_benchmark.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: openLoopConfig(srv.URL),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("maximum_passing_request_rate").AtMapKey("64 / 8")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Null()})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Bool(false)})),
				},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttrWith(addr, "maximum_passing_request_rate.64 / 8", func(v string) error {
						r, err := strconv.ParseFloat(v, 64)
						if err != nil || r < 3.7 || r > 9.2 {
							return fmt.Errorf("maximum passing request rate %q, want a rate of the ladder around 6", v)
						}
						return nil
					}),
					resource.TestMatchResourceAttr(addr, "results_json", regexp.MustCompile(`"arrival_pattern": "open-loop constant"`)),
					resource.TestMatchResourceAttr(addr, "results_json", regexp.MustCompile(`"open_loop": \{`)),
				),
			},
			{
				Config:             openLoopConfig(srv.URL),
				ConfigPlanChecks:   resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ExpectNonEmptyPlan: false,
			},
		},
	})
}

func TestAccCapacityBenchmark_openLoopBadConfig(t *testing.T) {
	t.Parallel()
	base := `
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = "http://127.0.0.1:1"
  model     = "m"
  workloads = [{ label = "a", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  %s
}
`
	for _, tc := range []struct{ body, want string }{
		{`arrival = { pattern = "poisson" }`, `Arrival without a rate search`},
		{`arrival = { pattern = "gamma" }
  search = { rate = { min = 1, max = 4 } }`, `gamma burstiness must be a positive number`},
		{`search = { rate = { min = 4, max = 1 } }`, `maximum rate 1 is below the minimum 4`},
		{`arrival = { pattern = "uniform" }
  search = { rate = { min = 1, max = 4 } }`, `value must be one of`},
	} {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps:                    []resource.TestStep{{Config: fmt.Sprintf(base, tc.body), PlanOnly: true, ExpectError: regexp.MustCompile(regexp.QuoteMeta(tc.want))}},
		})
	}
}
