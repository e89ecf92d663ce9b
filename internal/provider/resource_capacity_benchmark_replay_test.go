package provider

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func replayConfig(endpoint, file string) string {
	return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = %[1]q
  model     = "sim-qwen"
  api_key   = %[2]q
  workloads = [{ label = "recorded", trace = { file = %[3]q, block_tokens = 32 } }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search    = { speedup = { min = 0.5, max = 3, tolerance = 0.25 } }
  trial     = { warmup_requests = 2, confirmation_trials = 1 }
}
`, endpoint, benchAPIKey, file)
}

// writeReplayTrace writes n requests gapMs apart in the Mooncake shape (64 tokens in, a
// shared first block of 32, 8 out) and returns the file's path.
func writeReplayTrace(t *testing.T, n int, gapMs int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": 64, \"output_length\": 8, \"hash_ids\": [1, %d]}\n", i*gapMs, 100+i)
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A trace of 20 requests recorded 200 ms apart (5 requests/s) replayed against the two-slot
// engine, which holds about 6 requests/s: through the real CLI the speedup search finds the
// boundary around 1.2 times the recording, planned by label, with the trace's mean rate at it.
func TestAccCapacityBenchmark_replaySpeedup(t *testing.T) {
	srv := httptest.NewServer(newBoundaryEngine(t))
	defer srv.Close()
	file := writeReplayTrace(t, 20, 200)
	const addr = "llmserve_capacity_benchmark.test"
	var speedup float64
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: replayConfig(srv.URL, file),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("maximum_passing_speedup").AtMapKey("recorded")),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("first_failing_request_rate").AtMapKey("recorded")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Null()})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"),
						knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Bool(false)})),
				},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttrWith(addr, "maximum_passing_speedup.recorded", func(v string) error {
						s, err := strconv.ParseFloat(v, 64)
						if err != nil || s < 0.78 || s > 1.91 {
							return fmt.Errorf("maximum passing speedup %q, want a speedup of the ladder around 1.2", v)
						}
						speedup = s
						return nil
					}),
					resource.TestCheckResourceAttrWith(addr, "maximum_passing_request_rate.recorded", func(v string) error {
						// The trace's mean rate, 19 requests over 3.8 s, at the speedup.
						if r, err := strconv.ParseFloat(v, 64); err != nil || r < speedup*5*0.999 || r > speedup*5*1.001 {
							return fmt.Errorf("maximum passing request rate %q, want 5 × %g", v, speedup)
						}
						return nil
					}),
					resource.TestCheckResourceAttrWith(addr, "first_failing_speedup.recorded", func(v string) error {
						if s, err := strconv.ParseFloat(v, 64); err != nil || s < speedup*1.2 || s > speedup*1.3 {
							return fmt.Errorf("first failing speedup %q, want the ladder's next rung above %g", v, speedup)
						}
						return nil
					}),
					resource.TestMatchResourceAttr(addr, "results_json", regexp.MustCompile(`"arrival_pattern": "open-loop trace replay"`)),
					resource.TestMatchResourceAttr(addr, "results_json", regexp.MustCompile(`"trace_sha256": "[0-9a-f]{64}"`)),
					resource.TestMatchResourceAttr(addr, "results_json", regexp.MustCompile(`"speedup": [0-9.]+`)),
					// workload_results carries the same boundary, and each boundary trial its rate and speedup.
					func(s *terraform.State) error {
						a := s.RootModule().Resources[addr].Primary.Attributes
						for _, k := range []string{"maximum_passing_speedup", "first_failing_speedup", "maximum_passing_request_rate", "first_failing_request_rate"} {
							if got, want := a["workload_results.0."+k], a[k+".recorded"]; got == "" || got != want {
								return fmt.Errorf("workload_results.0.%s = %q, the map says %q", k, got, want)
							}
						}
						if a["workload_results.0.passing_trials.0.speedup"] != a["maximum_passing_speedup.recorded"] || a["workload_results.0.failing_trials.0.request_rate"] != a["first_failing_request_rate.recorded"] {
							return fmt.Errorf("boundary trials: speedup %q, rate %q", a["workload_results.0.passing_trials.0.speedup"], a["workload_results.0.failing_trials.0.request_rate"])
						}
						return nil
					},
				),
			},
			{
				Config:           replayConfig(srv.URL, file),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func TestAccCapacityBenchmark_replayBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"timestamp\": 0, \"input_length\": 64, \"output_length\": 8}\n{\"timestamp\": 5, \"input_length\": 64}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := writeReplayTrace(t, 20, 200)
	base := `
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = "http://127.0.0.1:1"
  model     = "m"
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  %s
}
`
	for _, tc := range []struct{ body, want string }{
		{fmt.Sprintf(`workloads = [{ label = "a", trace = { file = %q } }]
  search = { speedup = { min = 1, max = 4 } }`, bad), `trace line 2: output_length: missing`},
		{fmt.Sprintf(`workloads = [{ label = "a", trace = { file = %q } }]
  search = { speedup = { min = 1, max = 4 } }`, filepath.Join(dir, "none.jsonl")), `no such file or directory`},
		{fmt.Sprintf(`workloads = [{ label = "a", trace = { file = %q } }]`, good), `a trace workload is replayed at its recorded arrivals by a search over the speedup`},
		{fmt.Sprintf(`workloads = [{ label = "a", input_tokens = 64, trace = { file = %q } }]
  search = { speedup = { min = 1, max = 4 } }`, good), `remove input_tokens`},
		{`workloads = [{ label = "a", input_tokens = 64, output_tokens = 8 }]
  search = { speedup = { min = 1, max = 4 } }`, `has no trace`},
		{`workloads = [{ label = "a", output_tokens = 8 }]`, `It is required for a workload without trace`},
		{fmt.Sprintf(`workloads = [{ label = "a", trace = { file = %q } }]
  arrival = { pattern = "poisson" }
  search = { speedup = { min = 1, max = 4 } }`, good), `search.speedup replays each trace's own arrivals: remove arrival`},
		{fmt.Sprintf(`workloads = [{ label = "a", trace = { file = %q } }]
  search = { speedup = { min = 1, max = 4 }, rate = { min = 1, max = 2 } }`, good), `a benchmark searches one`},
	} {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps:                    []resource.TestStep{{Config: fmt.Sprintf(base, tc.body), PlanOnly: true, ExpectError: regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(tc.want), " ", `\s+`))}},
		})
	}
}

// A trace whose path another resource gives is not known at plan: the workload is still a
// replay (no input_tokens asked for), and the file is checked once the path is known.
func TestAccCapacityBenchmark_replayTracePathUnknownAtPlan(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "trace" {
  input = "trace.jsonl"
}

resource "llmserve_capacity_benchmark" "test" {
  endpoint  = "http://127.0.0.1:1"
  model     = "m"
  workloads = [{ label = "recorded", trace = { file = terraform_data.trace.output } }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search    = { speedup = { min = 1, max = 4 } }
}
`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_speedup").AtMapKey("recorded")),
			}},
		}},
	})
}
