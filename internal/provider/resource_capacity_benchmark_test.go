package provider

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
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

const benchAPIKey = "sk-bench-secret-7f3a9c"

// newBoundaryEngine serves a simulated engine whose boundary is known by construction: two
// slots, so up to 2 concurrent requests start at once (TTFT ≈ 10 ms) while a third waits for
// a slot to free, about 8 decode steps × 40 ms = 320 ms. With a 150 ms p95 TTFT SLO, 2 passes
// and 3 fails with a wide margin on both sides, whatever the machine's load.
func newBoundaryEngine(t *testing.T) *simengine.Server {
	t.Helper()
	s, err := simengine.NewServer(simengine.Options{Model: simengine.TwoSlotModel(), ModelName: "sim-qwen", APIKey: benchAPIKey})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func benchmarkConfig(endpoint, trigger, progress string) string {
	return fmt.Sprintf(`
variable "key" {
  type      = string
  ephemeral = true
  default   = %[4]q
}

resource "llmserve_capacity_benchmark" "test" {
  endpoint  = %[1]q
  model     = "sim-qwen"
  api_key   = var.key
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search    = { min_concurrency = 1, max_concurrency = 6 }
  trial     = { warmup_requests = 2, measured_requests = 12, confirmation_trials = 2, cache_flush = "auto" }
  triggers  = { server = %[2]q }
  progress_file = %[3]q
}

output "capacity" {
  value = llmserve_capacity_benchmark.test.maximum_passing_concurrency["64 / 8"]
}
`, endpoint, trigger, progress, benchAPIKey)
}

func TestAccCapacityBenchmark_boundary(t *testing.T) {
	t.Parallel()
	engine := newBoundaryEngine(t)
	srv := httptest.NewServer(engine)
	defer srv.Close()
	progress := filepath.Join(t.TempDir(), "progress.jsonl")
	var servedAfterApply int64

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: benchmarkConfig(srv.URL, "one", progress),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					// Keyed by the configured label at plan, values known after apply.
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency").AtMapKey("64 / 8")),
						plancheck.ExpectUnknownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("first_failing_concurrency").AtMapKey("64 / 8")),
						plancheck.ExpectUnknownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("capacity_bounded_by_search").AtMapKey("64 / 8")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("capacity_bounded_by_search"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Bool(false)})),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("notes"),
						knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("first_failing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(3)})),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test",
						tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("passing_trials"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test",
						tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("failing_trials"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test",
						tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("passing_trials").AtSliceIndex(0).AtMapKey("correctness").AtMapKey("profiling_records"),
						knownvalue.Int64Exact(12)),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test",
						tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("passing_trials").AtSliceIndex(0).AtMapKey("concurrency"),
						knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("api_key"), knownvalue.Null()),
					statecheck.ExpectKnownOutputValue("capacity", knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkResultsJSON("llmserve_capacity_benchmark.test"),
					checkNoSecretInState(benchAPIKey),
					func(*terraform.State) error {
						servedAfterApply = engine.Stats().RequestsServed
						return checkProgressFile(progress)
					},
				),
			},
			{
				// Unchanged configuration: no diff, and planning sends no load.
				Config: benchmarkConfig(srv.URL, "one", progress),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: func(*terraform.State) error {
					if got := engine.Stats().RequestsServed; got != servedAfterApply {
						return fmt.Errorf("planning an unchanged benchmark sent %d requests", got-servedAfterApply)
					}
					return nil
				},
			},
			{
				// A changed trigger replaces the resource, which measures again.
				Config: benchmarkConfig(srv.URL, "two", progress),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("llmserve_capacity_benchmark.test", plancheck.ResourceActionReplace),
						// A replacement plans a new measurement, not the old numbers.
						plancheck.ExpectUnknownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency").AtMapKey("64 / 8")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(2)})),
				},
				Check: func(*terraform.State) error {
					if got := engine.Stats().RequestsServed; got <= servedAfterApply {
						return fmt.Errorf("a changed trigger did not re-run the benchmark (%d requests before, %d after)", servedAfterApply, got)
					}
					return nil
				},
			},
		},
	})
}

// checkResultsJSON parses results_json with the results reader and checks the boundary it
// carries agrees with the maps.
func checkResultsJSON(name string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[name]
		doc, err := results.Parse([]byte(rs.Primary.Attributes["results_json"]))
		if err != nil {
			return fmt.Errorf("results_json does not parse: %w", err)
		}
		if len(doc.Workloads) != 1 {
			return fmt.Errorf("results_json has %d workloads, want 1", len(doc.Workloads))
		}
		w := doc.Workloads[0]
		if w.MaximumPassingConcurrency == nil || *w.MaximumPassingConcurrency != 2 || w.FirstFailingConcurrency == nil || *w.FirstFailingConcurrency != 3 {
			return fmt.Errorf("results_json boundary = %v/%v, want 2/3", w.MaximumPassingConcurrency, w.FirstFailingConcurrency)
		}
		for _, tr := range append(append([]results.Trial{}, w.PassingTrials...), w.FailingTrials...) {
			c := tr.Correctness
			if c.Errors != 0 || c.WarmupProfilePromptOverlap != 0 || c.FinishReasonLength != 12 || c.UniquePrompts != 12 || c.WarmupRecords != 2 {
				return fmt.Errorf("trial at concurrency %d has counters %+v", tr.Concurrency, c)
			}
			// The simulated chat template adds 11 tokens; prompts are fitted through /tokenize.
			if tr.ServerPromptTokens.Min < 64+11-1 || tr.ServerPromptTokens.Max > 64+11+1 {
				return fmt.Errorf("server prompt tokens %v, want 75±1", tr.ServerPromptTokens)
			}
		}
		if doc.CorrectnessTotal.ProfilingRecords != 4*12 {
			return fmt.Errorf("correctness_total.profiling_records = %d, want 48", doc.CorrectnessTotal.ProfilingRecords)
		}
		return nil
	}
}

func checkNoSecretInState(secret string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		for name, rs := range s.RootModule().Resources {
			for k, v := range rs.Primary.Attributes {
				if strings.Contains(v, secret) {
					return fmt.Errorf("%s.%s holds the API key", name, k)
				}
			}
		}
		return nil
	}
}

func checkProgressFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	confirmations := 0
	for _, l := range lines {
		var rec struct {
			Workload    string `json:"workload"`
			Concurrency int    `json:"concurrency"`
			Kind        string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			return fmt.Errorf("progress line %q: %w", l, err)
		}
		if rec.Kind == "run_completed" {
			continue
		}
		if rec.Workload != "64 / 8" || rec.Concurrency < 1 {
			return fmt.Errorf("progress line %q lacks workload or concurrency", l)
		}
		if rec.Kind == "confirmation" {
			confirmations++
		}
		if strings.Contains(l, benchAPIKey) {
			return fmt.Errorf("progress file holds the API key")
		}
	}
	if !strings.Contains(lines[len(lines)-1], `"kind":"run_completed"`) {
		return fmt.Errorf("the progress file does not end with the run's completion marker: %s", lines[len(lines)-1])
	}
	if confirmations < 4 {
		return fmt.Errorf("progress file has %d confirmation trials, want at least 4", confirmations)
	}
	return nil
}

func TestAccCapacityBenchmark_invalidConfig(t *testing.T) {
	t.Parallel()
	base := func(workloads, slos, search, trial string) string {
		return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "bad" {
  endpoint  = "http://127.0.0.1:9"
  model     = "m"
  workloads = %s
  slos      = %s
  search    = %s
  trial     = %s
}`, workloads, slos, search, trial)
	}
	okW := `[{ label = "a", input_tokens = 8, output_tokens = 8 }]`
	okS := `[{ percentile = 95, threshold_ms = 100 }]`
	okB := `{ min_concurrency = 1, max_concurrency = 4 }`
	okT := `{ measured_requests = 4 }`
	cases := []struct {
		name, config, want string
	}{
		{"empty label", base(`[{ label = "", input_tokens = 8, output_tokens = 8 }]`, okS, okB, okT), `workloads\[0\]\.label`},
		{"duplicate label", base(`[{ label = "a", input_tokens = 8, output_tokens = 8 }, { label = "a", input_tokens = 9, output_tokens = 9 }]`, okS, okB, okT), `Duplicate workload label`},
		{"zero input tokens", base(`[{ label = "a", input_tokens = 0, output_tokens = 8 }]`, okS, okB, okT), `input_tokens`},
		{"negative output tokens", base(`[{ label = "a", input_tokens = 8, output_tokens = -1 }]`, okS, okB, okT), `output_tokens`},
		{"percentile zero", base(okW, `[{ percentile = 0, threshold_ms = 100 }]`, okB, okT), `percentile must be in \(0, 100\]`},
		{"percentile above 100", base(okW, `[{ percentile = 100.5, threshold_ms = 100 }]`, okB, okT), `percentile must be in \(0, 100\]`},
		{"threshold zero", base(okW, `[{ percentile = 95, threshold_ms = 0 }]`, okB, okT), `threshold_ms must be greater than 0`},
		{"min above max", base(okW, okS, `{ min_concurrency = 8, max_concurrency = 4 }`, okT), `search\.min_concurrency \(8\) is greater than\s+search\.max_concurrency \(4\)`},
		{"zero measured requests", base(okW, okS, okB, `{ measured_requests = 0 }`), `measured_requests`},
		{"bad endpoint", strings.Replace(base(okW, okS, okB, okT), "http://127.0.0.1:9", "gpu-host.example.com:30000", 1), `Invalid endpoint URL`},
		{"bad metric", base(okW, `[{ metric = "ttft", percentile = 95, threshold_ms = 100 }]`, okB, okT), `slos\[0\]\.metric`},
		{"no objective", base(okW, `[]`, okB, okT), `slos must list at least one objective`},
		{"shared prefix as long as the prompt", base(`[{ label = "a", input_tokens = 8, output_tokens = 8, shared_prefix_tokens = 8 }]`, okS, okB, okT), `shared_prefix_tokens \(8\) counts within input_tokens \(8\)`},
		{"output spread wider than the length", base(`[{ label = "a", input_tokens = 8, output_tokens = 8, output_tokens_stddev = 9 }]`, okS, okB, okT), `Length spread wider than the length`},
		{"negative input spread", base(`[{ label = "a", input_tokens = 8, output_tokens = 8, input_tokens_stddev = -1 }]`, okS, okB, okT), `input_tokens_stddev`},
		{"latency objective without percentile", base(okW, `[{ threshold_ms = 100 }]`, okB, okT), `slos\[0\]\.percentile must be in \(0, 100\], got 0`},
		{"goodput with a percentile", base(okW, `[{ metric = "goodput", percentile = 95, threshold_ms = 90 }]`, okB, okT), `slos\[0\]\.percentile must be left out:\s+goodput\s+is\s+one\s+number\s+per\s+trial`},
		{"goodput over 100 percent", base(okW, `[{ metric = "goodput", threshold_ms = 120 }]`, okB, okT), `must be at most 100, got 120: goodput is a percentage`},
		{"less-than on per-user throughput", base(okW, `[{ metric = "output_token_throughput_per_user", percentile = 50, threshold_ms = 20, comparison = "less_than_or_equal" }]`, okB, okT), `where\s+higher\s+is\s+better;\s+use\s+greater_than\s+or`},
		{"greater-than on ITL", base(okW, `[{ metric = "inter_token_latency", percentile = 50, threshold_ms = 20, comparison = "greater_than" }]`, okB, okT), `where\s+lower\s+is\s+better`},
		{"repeated objective", base(okW, `[{ percentile = 95, threshold_ms = 100 }, { percentile = 95, threshold_ms = 200 }]`, okB, okT), `Repeated objective`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}

// A benchmark that cannot reach its server fails the apply with a diagnostic and leaves
// nothing in state: the next apply plans a plain create (not a replace of a tainted
// half-result) and, once the server is there, measures.
func TestAccCapacityBenchmark_failedApplyLeavesNoState(t *testing.T) {
	t.Parallel()
	engine := newBoundaryEngine(t)
	srv := httptest.NewServer(engine)
	defer srv.Close()
	down := httptest.NewServer(engine)
	downURL := down.URL
	down.Close() // nothing listens there any more

	config := func(endpoint string) string { return oneTrialBenchmark(endpoint, "") }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config(downURL),
				ExpectError: regexp.MustCompile(`(?s)Capacity benchmark failed.*` + regexp.QuoteMeta(strings.TrimPrefix(downURL, "http://"))),
			},
			{
				Config: config(srv.URL),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("llmserve_capacity_benchmark.test", plancheck.ResourceActionCreate),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(1)})),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("first_failing_concurrency"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Null()})),
					// max_concurrency 1 passed: the capacity is at least 1, and the result says so.
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("capacity_bounded_by_search"),
						knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Bool(true)})),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("notes"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(
							"every concurrency tried passed, up to 1: capacity is at least 1; raise search.max_concurrency to find the boundary")})),
				},
			},
		},
	})
}

// Workload values built from another resource's attributes are unknown at plan; validation
// must leave them to apply instead of failing to decode them. (A whole workload object that is
// unknown is refused by the framework itself, which requires its attributes to be set.)
func TestAccCapacityBenchmark_unknownWorkloadPlans(t *testing.T) {
	t.Parallel()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "shape" {
  input = "from another resource"
}

resource "llmserve_capacity_benchmark" "u" {
  endpoint  = "http://127.0.0.1:9"
  model     = "m"
  workloads = [
    { label = terraform_data.shape.output, input_tokens = 8, output_tokens = 8 },
    { label = "literal", input_tokens = 8, output_tokens = 8 },
  ]
  slos      = [{ percentile = 95, threshold_ms = 100 }]
}`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
}

// A misspelt workload label in a gate fails at plan, before any load: the result maps are
// planned with the configured labels as keys. No server is needed, none is contacted.
func TestAccCapacityBenchmark_labelTypoFailsAtPlan(t *testing.T) {
	t.Parallel()
	config := func(key string) string {
		return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "gate" {
  endpoint  = "http://127.0.0.1:9"
  model     = "m"
  workloads = [{ label = "8K / 1K", input_tokens = 8192, output_tokens = 1024 }]
  slos      = [{ percentile = 95, threshold_ms = 10000 }]

  lifecycle {
    postcondition {
      condition     = coalesce(self.maximum_passing_concurrency[%q], 0) >= 7
      error_message = "capacity too low"
    }
  }
}`, key)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config("8K/1K"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid index.*8K/1K`),
			},
			{
				// The right label plans (the condition waits for apply).
				Config:             config("8K / 1K"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

// A duration attribute keeps the spelling it was given ("5m", not "5m0s"), so the same
// configuration plans no change, while another value re-runs the benchmark. (Another
// spelling of the same value, "300s", also re-runs it: the framework applies the type's
// semantic equality to read and applied state, not to a plan.)
func TestAccCapacityBenchmark_durationSpelling(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newBoundaryEngine(t))
	defer srv.Close()
	config := func(stall string) string { return oneTrialBenchmark(srv.URL, fmt.Sprintf("stall_timeout = %q", stall)) }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("5m"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("trial").AtMapKey("stall_timeout"), knownvalue.StringExact("5m")),
					statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("trial").AtMapKey("request_timeout"), knownvalue.StringExact("30m0s")),
				},
			},
			{
				Config:           config("5m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: config("90s"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("llmserve_capacity_benchmark.test", plancheck.ResourceActionReplace),
				}},
			},
		},
	})
}

// oneTrialBenchmark is llmserve_capacity_benchmark.test measuring one trial at concurrency
// 1, the quickest apply; trial adds attributes to its trial block.
func oneTrialBenchmark(endpoint, trial string) string {
	if trial != "" {
		trial = ", " + trial
	}
	return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = %q
  model     = "sim-qwen"
  api_key   = %q
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ percentile = 95, threshold_ms = 150 }]
  search    = { min_concurrency = 1, max_concurrency = 1 }
  trial     = { warmup_requests = 1, measured_requests = 4, confirmation_trials = 1%s }
}`, endpoint, benchAPIKey, trial)
}
