package provider

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

func usersBenchmarkConfig(endpoint, api, think string) string {
	return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = %q
  model     = "sim"
  api       = %q
  workloads = [{
    label = "chat", input_tokens = 64, output_tokens = 8
    conversation = { turns = 3, system_prompt_tokens = 32, think_time = %s }
  }]
  slos   = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search = { min_concurrency = 1, max_concurrency = 8 }
  trial  = { warmup_requests = 1, measured_requests = 12, confirmation_trials = 2, cache_flush = "auto" }
}

output "users" {
  value = llmserve_capacity_benchmark.test.maximum_passing_users["chat"]
}

# 40 people chatting at once, each replica kept at 80 %% of its users capacity.
output "replicas" {
  value = provider::llmserve::replicas_for(40, llmserve_capacity_benchmark.test.maximum_passing_users["chat"], 0.2)
}
`, endpoint, api, think)
}

// A conversation workload through the real CLI: users holding 3-turn conversations with a
// constant 720 ms think time against a simulated SGLang whose cache serves their history
// (one slot, a later turn about 230 ms in it: N* ≈ 4.1 users), searched by users: the
// users capacity lands within one level of N*, the concurrency maps stay null, each trial
// carries its conversations figures, and an unchanged plan is empty. Plan refuses a
// conversation on the completions API and a think time without a mean.
func TestAccCapacityBenchmark_users(t *testing.T) {
	t.Parallel()
	eng, err := simengine.NewServer(simengine.Options{
		Model:    simengine.Model{Slots: 1, PrefillPerToken: time.Millisecond, DecodeStep: 20 * time.Millisecond},
		Protocol: simengine.SGLang, ModelName: "sim", CachedPrefill: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	const addr = "llmserve_capacity_benchmark.test"
	constant := `{ distribution = "constant", mean = "720ms" }`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      usersBenchmarkConfig(srv.URL, "completions", constant),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Conversations need the chat API`),
			},
			{
				Config:      usersBenchmarkConfig(srv.URL, "chat", `{ distribution = "constant" }`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`"mean" is required`),
			},
			{
				Config: usersBenchmarkConfig(srv.URL, "chat", constant),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectUnknownValue(addr, tfjsonpath.New("maximum_passing_users").AtMapKey("chat"))},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{"chat": knownvalue.Null()})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"), knownvalue.MapExact(map[string]knownvalue.Check{"chat": knownvalue.Bool(false)})),
				},
				Check: func(s *terraform.State) error {
					a := s.RootModule().Resources[addr].Primary.Attributes
					users, err := strconv.Atoi(a["maximum_passing_users.chat"])
					if err != nil || users < 3 || users > 5 {
						return fmt.Errorf("maximum_passing_users %q, want 4 ± 1", a["maximum_passing_users.chat"])
					}
					if ff := a["first_failing_users.chat"]; ff != strconv.Itoa(users+1) {
						return fmt.Errorf("first_failing_users %q with %d passing", ff, users)
					}
					// workload_results carries the same boundary, and its trials their users.
					if wr, wf := a["workload_results.0.maximum_passing_users"], a["workload_results.0.first_failing_users"]; wr != strconv.Itoa(users) || wf != strconv.Itoa(users+1) {
						return fmt.Errorf("workload_results users boundary %q/%q, want %d/%d", wr, wf, users, users+1)
					}
					if tu := a["workload_results.0.passing_trials.0.users"]; tu != strconv.Itoa(users) {
						return fmt.Errorf("workload_results.0.passing_trials.0.users %q, want %d", tu, users)
					}
					if j := a["results_json"]; !strings.Contains(j, `"maximum_passing_users": `+strconv.Itoa(users)) || !strings.Contains(j, `"later_turn_cached_percent"`) {
						return fmt.Errorf("results_json lacks the users boundary or conversations")
					}
					// ceil(40 / (users × 0.8)): 3 users → 17, 4 → 13, 5 → 10.
					want := map[int]string{3: "17", 4: "13", 5: "10"}[users]
					if got := s.RootModule().Outputs["replicas"]; got == nil || fmt.Sprint(got.Value) != want {
						return fmt.Errorf("replicas_for(40, %d users, 0.2) = %v, want %s", users, got, want)
					}
					t.Logf("maximum passing users %d, replicas for 40 users %s", users, want)
					return nil
				},
			},
			{
				Config:           usersBenchmarkConfig(srv.URL, "chat", constant),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
