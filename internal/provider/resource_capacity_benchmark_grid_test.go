package provider

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// A grid runs exactly the listed levels with confirmation trials only, reports every trial,
// and takes the boundary over them: with the engine's boundary between 2 and 3, levels
// 1, 2 and 4 give 2 passing and 4 first failing.
//
// With records_directory, every trial names its records file, and recomputing the trials from
// them gives the document's numbers exactly.
func TestAccCapacityBenchmark_grid(t *testing.T) {
	t.Parallel()
	recordsDir := t.TempDir()
	engine := newBoundaryEngine(t)
	srv := httptest.NewServer(engine)
	defer srv.Close()
	const addr = "llmserve_capacity_benchmark.grid"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "grid" {
  endpoint  = %q
  model     = "sim-qwen"
  api_key   = %q
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search    = { concurrency_levels = [4, 1, 2] }
  trial     = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 2 }
  records_directory  = %q
  record_chunk_times = true
}`, srv.URL, benchAPIKey, recordsDir),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"),
					knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_failing_concurrency"),
					knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(4)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("bound_by"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("p95 time_to_first_token")})),
			},
			Check: func(s *terraform.State) error {
				doc, err := results.Parse([]byte(s.RootModule().Resources[addr].Primary.Attributes["results_json"]))
				if err != nil {
					return err
				}
				var got []string
				for _, tr := range doc.Workloads[0].AllTrials {
					got = append(got, fmt.Sprintf("%s@%d#%d:%s", tr.Kind, tr.Concurrency, tr.Trial, tr.Verdict))
				}
				want := fmt.Sprint([]string{"confirmation@1#1:pass", "confirmation@1#2:pass", "confirmation@2#1:pass",
					"confirmation@2#2:pass", "confirmation@4#1:fail", "confirmation@4#2:fail"})
				if fmt.Sprint(got) != want {
					return fmt.Errorf("trials %v, want %s", got, want)
				}
				re, err := records.Recompute(doc, recordsDir)
				if err != nil {
					return err
				}
				if len(re) != 6 {
					return fmt.Errorf("recomputed %d trials from records, want 6", len(re))
				}
				for _, r := range re {
					if len(r.Differences) > 0 {
						return fmt.Errorf("%s differs from the document: %v", r.File, r.Differences)
					}
				}
				return nil
			},
		}},
	})
}

func TestAccCapacityBenchmark_gridInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, search, want string }{
		{"grid with bounds", `{ concurrency_levels = [1, 2], max_concurrency = 8 }`, `Grid and search bounds both set`},
		{"repeated level", `{ concurrency_levels = [1, 2, 2] }`, `2 is already search.concurrency_levels\[1\];\s+list\s+each\s+level\s+once`},
		{"level zero", `{ concurrency_levels = [0, 2] }`, `at least 1`},
		{"empty grid", `{ concurrency_levels = [] }`, `must list at least one level`},
		{"chunk times without records", `{ min_concurrency = 1 }
  record_chunk_times = true`, `Chunk times without records`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "bad" {
  endpoint  = "http://127.0.0.1:9"
  model     = "m"
  workloads = [{ label = "a", input_tokens = 8, output_tokens = 8 }]
  slos      = [{ percentile = 95, threshold_ms = 100 }]
  search    = %s
}`, tc.search),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}
