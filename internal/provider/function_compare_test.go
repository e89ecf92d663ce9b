package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// compareDoc is one of the comparison's test documents: capacity runs of the simulated engine
// through the real run path (baseline; same: the same server again; slower: every cost
// × 1.15), also the compare function's example.
func compareDoc(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "compare", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAccFunctionCompare(t *testing.T) {
	t.Parallel()
	base, same, slower := compareDoc(t, "baseline"), compareDoc(t, "same"), compareDoc(t, "slower")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
locals {
  same   = provider::llmserve::compare(file(%[1]q), file(%[2]q))
  slower = provider::llmserve::compare(file(%[1]q), file(%[3]q))
  other  = provider::llmserve::compare(file(%[4]q), file(%[3]q))
  replay = provider::llmserve::compare(file(%[5]q), file(%[5]q)).workloads["recorded"]
}
output "replay_axis"     { value = local.replay.axis }
output "replay_boundary" { value = local.replay.current_maximum_passing }
output "replay_level"    { value = local.replay.objectives[0].levels[0] }
output "same_regressed"   { value = local.same.regressed }
output "same_verdict"     { value = local.same.workloads["1K / 16"].verdict }
output "same_inconclusive" { value = local.same.inconclusive }
output "same_to_decide"   { value = local.same.workloads["1K / 16"].objectives[0].to_decide }
output "same_interval"    { value = [local.same.workloads["1K / 16"].objectives[0].change_low_percent, local.same.workloads["1K / 16"].objectives[0].change_high_percent] }
output "slower_regressed" { value = local.slower.regressed }
output "slower_workload"  { value = local.slower.workloads["1K / 16"] }
output "slower_summary"   { value = local.slower.summary }
output "other_comparable" { value = local.other.comparable }
output "other_refused"    { value = length(local.other.refused) > 0 }
output "other_only"       { value = local.other.only_in_baseline }
`, base, same, slower, referencePath(t), replayPath(t)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("same_regressed", knownvalue.ListExact(nil)),
				// The same server measured +8.3 % with an interval of -9 to +29 %: not shown to
				// be unchanged (issue 32), and the comparison says what would decide it.
				statecheck.ExpectKnownOutputValue("same_verdict", knownvalue.StringExact("inconclusive")),
				statecheck.ExpectKnownOutputValue("same_inconclusive", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("1K / 16")})),
				statecheck.ExpectKnownOutputValue("same_to_decide", knownvalue.StringRegexp(regexp.MustCompile(`confirmation_trials = \d+ instead of 3`))),
				statecheck.ExpectKnownOutputValue("same_interval", knownvalue.ListExact([]knownvalue.Check{
					knownvalue.Float64Func(func(v float64) error {
						if v > -5 || v < -15 {
							return fmt.Errorf("low %.1f %%, want about -9 %%", v)
						}
						return nil
					}),
					knownvalue.Float64Func(func(v float64) error {
						if v < 20 || v > 40 {
							return fmt.Errorf("high %.1f %%, want about +29 %%", v)
						}
						return nil
					}),
				})),
				statecheck.ExpectKnownOutputValue("slower_regressed", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("1K / 16")})),
				statecheck.ExpectKnownOutputValueAtPath("slower_workload", tfjsonpath.New("verdict"), knownvalue.StringExact("regressed")),
				statecheck.ExpectKnownOutputValueAtPath("slower_workload", tfjsonpath.New("objectives").AtSliceIndex(0).AtMapKey("objective"), knownvalue.StringExact("p95 time_to_first_token")),
				statecheck.ExpectKnownOutputValueAtPath("slower_workload", tfjsonpath.New("objectives").AtSliceIndex(0).AtMapKey("change_percent"), knownvalue.Float64Func(func(v float64) error {
					if v < 10 || v > 25 {
						return fmt.Errorf("change %.1f %%, want about +15 %% for a server 15 %% slower", v)
					}
					return nil
				})),
				statecheck.ExpectKnownOutputValue("slower_summary", knownvalue.StringRegexp(errorPattern("1K / 16: regressed: p95 time_to_first_token +"))),
				// A replay is compared on its speed-ups: the first level is 0.5×, no concurrency.
				statecheck.ExpectKnownOutputValue("replay_axis", knownvalue.StringExact("speedup")),
				statecheck.ExpectKnownOutputValue("replay_boundary", knownvalue.Float64Exact(1.220703125)),
				statecheck.ExpectKnownOutputValueAtPath("replay_level", tfjsonpath.New("at"), knownvalue.Float64Exact(0.5)),
				statecheck.ExpectKnownOutputValueAtPath("replay_level", tfjsonpath.New("concurrency"), knownvalue.Null()),
				statecheck.ExpectKnownOutputValue("other_comparable", knownvalue.Bool(false)),
				statecheck.ExpectKnownOutputValue("other_refused", knownvalue.Bool(true)),
				statecheck.ExpectKnownOutputValue("other_only", knownvalue.ListSizeExact(3)),
			},
		}},
	})
}

func TestAccFunctionCompare_badDocument(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
output "x" { value = provider::llmserve::compare(file(%q), "{}") }
`, compareDoc(t, "baseline")),
			ExpectError: errorPattern("The current_json argument is not a schema v1 results document"),
		}},
	})
}

// The data source's baseline gives the same comparison, and a precondition on it fails the
// run with the workload and its figures.
func TestAccCapacityReportBaseline(t *testing.T) {
	t.Parallel()
	base, slower := compareDoc(t, "baseline"), compareDoc(t, "slower")
	config := func(gate bool) string {
		c := fmt.Sprintf(`
data "llmserve_capacity_report" "candidate" {
  path     = %q
  baseline = file(%q)
}
output "regressed" { value = data.llmserve_capacity_report.candidate.comparison.regressed }
`, slower, base)
		if gate {
			c += `
resource "terraform_data" "release" {
  lifecycle {
    precondition {
      condition     = length(data.llmserve_capacity_report.candidate.comparison.regressed) == 0
      error_message = data.llmserve_capacity_report.candidate.comparison.summary
    }
  }
}
`
		}
		return c
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{
			{
				Config: config(false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("regressed", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("1K / 16")})),
					statecheck.ExpectKnownValue("data.llmserve_capacity_report.candidate", tfjsonpath.New("comparison").AtMapKey("comparable"), knownvalue.Bool(true)),
				},
			},
			{
				Config:      config(true),
				ExpectError: errorPattern("1K / 16: regressed: p95 time_to_first_token"),
			},
		},
	})
}

// replayPath is a real replay of a recorded trace (internal/results/testdata/replay): workload
// "recorded", maximum passing speed-up 1.22, first failing 1.53.
func replayPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "results", "testdata", "replay", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A run that recorded no setup is not compared with one that did, unless the user says both
// measured the same model, engine and hardware: compare()'s options argument and the data
// source's same_setup (issue 40: such a run read "regressed: +1278 %" against the guide's
// shipped document).
func TestAccFunctionCompare_sameSetup(t *testing.T) {
	t.Parallel()
	doc, err := results.ReadFile(compareDoc(t, "same"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := results.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	d.Experiment = results.Experiment{Model: "sim"} // a bare endpoint benchmark: the served alias only
	raw, err := results.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(t.TempDir(), "bare.json")
	if err := os.WriteFile(bare, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	base := compareDoc(t, "baseline")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
locals {
  refused = provider::llmserve::compare(file(%[1]q), file(%[2]q))
  said    = provider::llmserve::compare(file(%[1]q), file(%[2]q), { same_setup = true })
}
data "llmserve_capacity_report" "said" {
  path       = %[2]q
  baseline   = file(%[1]q)
  same_setup = true
}
output "refused_comparable" { value = local.refused.comparable }
output "refused_why"        { value = join("\n", local.refused.refused) }
output "said_comparable"    { value = local.said.comparable }
output "said_flagged"       { value = join("\n", local.said.flagged) }
output "data_comparable"    { value = data.llmserve_capacity_report.said.comparison.comparable }
`, base, bare),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("refused_comparable", knownvalue.Bool(false)),
				statecheck.ExpectKnownOutputValue("refused_why", knownvalue.StringRegexp(regexp.MustCompile(`(?s)recorded by one run only.*same_setup`))),
				statecheck.ExpectKnownOutputValue("said_comparable", knownvalue.Bool(true)),
				statecheck.ExpectKnownOutputValue("said_flagged", knownvalue.StringRegexp(regexp.MustCompile(`same_setup: taken as the same`))),
				statecheck.ExpectKnownOutputValue("data_comparable", knownvalue.Bool(true)),
			},
		}},
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{{
			Config:      fmt.Sprintf(`output "x" { value = provider::llmserve::compare(file(%[1]q), file(%[1]q), { same_setup = true }, { same_setup = false }) }`, base),
			ExpectError: regexp.MustCompile(`At most one options object`),
		}},
	})
}
