package provider

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// A benchmark measures against its baseline: a 2-slot server against a 3-slot baseline
// measures the baseline's first failing level (4) for the comparison and is regressed, its
// comparison the same object compare() returns for the two documents and its capacity its
// own (2). Another baseline is an in-place update that measures only comparison trials; no
// baseline at all is an update that sends nothing and drops them from results_json.
func TestAccCapacityBenchmark_baseline(t *testing.T) {
	t.Parallel()
	serve := func(slots int) (*simengine.Server, string) {
		m := simengine.TwoSlotModel()
		m.Slots = slots
		e, err := simengine.NewServer(simengine.Options{Model: m, ModelName: "sim-qwen"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		return e, srv.URL
	}
	_, three := serve(3)
	_, other := serve(2)
	engine, two := serve(2)
	progress := filepath.Join(t.TempDir(), "progress.jsonl")
	config := func(baseline string) string {
		return fmt.Sprintf(`
locals {
  shape = {
    model     = "sim-qwen"
    workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
    slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  }
}

resource "llmserve_capacity_benchmark" "three_slots" {
  endpoint  = %[1]q
  model     = local.shape.model
  workloads = local.shape.workloads
  slos      = local.shape.slos
  search    = { min_concurrency = 1, max_concurrency = 5 }
  trial     = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 2 }
}

resource "llmserve_capacity_benchmark" "other_two_slots" {
  endpoint  = %[2]q
  model     = local.shape.model
  workloads = local.shape.workloads
  slos      = local.shape.slos
  search    = { min_concurrency = 1, max_concurrency = 5 }
  trial     = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 2 }
}

resource "llmserve_capacity_benchmark" "test" {
  endpoint      = %[3]q
  model         = local.shape.model
  workloads     = local.shape.workloads
  slos          = local.shape.slos
  search        = { min_concurrency = 1, max_concurrency = 5 }
  trial         = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 2, comparison_budget = 4 }
  baseline      = %[4]s
  progress_file = %[5]q
}

output "agrees_with_compare" {
  value = %[4]s == null ? null : provider::llmserve::compare(%[4]s, llmserve_capacity_benchmark.test.results_json) == llmserve_capacity_benchmark.test.comparison
}
`, three, other, two, baseline, progress)
	}
	var servedBefore int64
	served := func(*terraform.State) error { servedBefore = engine.Stats().RequestsServed; return nil }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("llmserve_capacity_benchmark.three_slots.results_json"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("comparison").AtMapKey("regressed"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("64 / 8")})),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
					statecheck.ExpectKnownOutputValue("agrees_with_compare", knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(checkComparisonTrials(4, true), served),
			},
			{
				// Another baseline: an update, not a new measurement; only comparison trials run.
				Config: config("llmserve_capacity_benchmark.other_two_slots.results_json"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("llmserve_capacity_benchmark.test", plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("comparison")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("comparison").AtMapKey("regressed"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownOutputValue("agrees_with_compare", knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(onlyComparisonTrialsSince(progress), served),
			},
			{
				// No baseline: the stored searches without the comparison's trials, nothing sent.
				Config: config("null"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("llmserve_capacity_benchmark.test", plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("comparison"), knownvalue.Null()),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("comparison"), knownvalue.Null()),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
				},
				Check: resource.ComposeTestCheckFunc(checkComparisonTrials(0, false), func(*terraform.State) error {
					if n := engine.Stats().RequestsServed; n != servedBefore {
						return fmt.Errorf("removing the baseline sent %d requests", n-servedBefore)
					}
					return nil
				}),
			},
		},
	})
}

// checkComparisonTrials checks that results_json lists trials added for a comparison at
// level (none when 0) and states aiperf.comparison_budget when budget.
func checkComparisonTrials(level int, budget bool) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		doc, err := results.Parse([]byte(s.RootModule().Resources["llmserve_capacity_benchmark.test"].Primary.Attributes["results_json"]))
		if err != nil {
			return err
		}
		at := 0
		for _, tr := range doc.Workloads[0].AllTrials {
			if tr.ForComparison > 0 {
				if tr.Concurrency == level && tr.ForComparison == 1 {
					at++
				}
				if level == 0 {
					return fmt.Errorf("a trial added for a comparison remains: %+v", tr)
				}
			}
		}
		if level > 0 && at != 2 {
			return fmt.Errorf("%d trials added at concurrency %d at look 1, want 2", at, level)
		}
		if (doc.AIPerf.ComparisonBudget == 4) != budget {
			return fmt.Errorf("aiperf.comparison_budget %d", doc.AIPerf.ComparisonBudget)
		}
		return nil
	}
}

// onlyComparisonTrialsSince checks that the progress file's lines after the first run's
// completion are comparison trials (and the update's own completion).
func onlyComparisonTrialsSince(path string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		completed := 0
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var rec struct{ Kind string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				return err
			}
			switch {
			case rec.Kind == "run_completed":
				completed++
			case completed >= 1 && rec.Kind != "comparison":
				return fmt.Errorf("after the first run a %s trial was measured: %s", rec.Kind, l)
			}
		}
		if completed != 2 {
			return fmt.Errorf("%d completed runs in the progress file, want 2", completed)
		}
		return nil
	}
}
