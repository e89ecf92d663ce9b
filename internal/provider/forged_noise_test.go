package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// noisyRecordedDoc is the recorded result with the noise fields a run writes: its own trials'
// disagreements, found by a looser rule than the default (a 50 % test; from 8 requests the
// default finds concurrency 2's TTFT within noise), the first at concurrency 2, p95 TTFT
// 16.27 ms in trial 1 and 45.37 ms in trial 2: 179 % apart, and its first trial's host,
// forged by forge.
func noisyRecordedDoc(t *testing.T, forge func(w *results.Workload)) string {
	t.Helper()
	d := recordedDoc(t, "")
	w := &d.Workloads[0]
	w.TrialDisagreements = results.DisagreementRule{Alpha: 0.5, Band: results.DefaultDisagreementRule.Band}.Find(d.Objectives(), *w)
	w.AllTrials[0].Host = &results.HostLoad{CPUs: 2, LoadAvg1mStart: 0.5, LoadAvg1mEnd: 1.25, BusyPercent: 41.5, StealPercent: 0.5}
	if forge != nil {
		forge(w)
	}
	out, err := results.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Forged noise fields are refused through the real CLI by every reader of a document: the
// report data source and compare(), as baseline or current run, each naming the field (the
// one check, results.Parse; its full table is TestParseRefusesForgedNoiseFields). Before
// issue 39 each was believed and compare() printed "+Inf % apart" or "-89 % apart".
func TestAccForgedNoiseFieldsRefused(t *testing.T) {
	t.Parallel()
	genuine := noisyRecordedDoc(t, nil)
	readers := []struct {
		name   string
		config func(forged string) string
	}{
		{"data source path", func(forged string) string {
			return fmt.Sprintf("data \"llmserve_capacity_report\" \"r\" {\n  path = %q\n}\n", forged)
		}},
		{"data source baseline", func(forged string) string {
			return fmt.Sprintf("data \"llmserve_capacity_report\" \"r\" {\n  path = %q\n  baseline = file(%q)\n}\n", genuine, forged)
		}},
		{"compare baseline_json", func(forged string) string {
			return fmt.Sprintf("output \"x\" {\n  value = provider::llmserve::compare(file(%q), file(%q))\n}\n", forged, genuine)
		}},
		{"compare current_json", func(forged string) string {
			return fmt.Sprintf("output \"x\" {\n  value = provider::llmserve::compare(file(%q), file(%q))\n}\n", genuine, forged)
		}},
	}
	const dis = "workloads[0].trial_disagreements[0]."
	forgeries := []struct {
		name  string
		forge func(w *results.Workload)
		want  string
	}{
		{"low of 0", func(w *results.Workload) { w.TrialDisagreements[0].Low = 0 }, dis + "low: 0 is not above 0"},
		{"low above high", func(w *results.Workload) { w.TrialDisagreements[0].Low = 400 }, dis + "high: 45.3712908 is not above low 400"},
		{"a level never tried", func(w *results.Workload) { w.TrialDisagreements[0].Concurrency = 9 }, dis + `concurrency: 9: no two confirmation trials of workload "64 / 8" ran at this level`},
		{"an objective that does not exist", func(w *results.Workload) { w.TrialDisagreements[0].Objective = "p95 time_to_frist_token" },
			dis + `objective: "p95 time_to_frist_token" is not a percentile objective of this document`},
		{"250 % busy", func(w *results.Workload) { w.AllTrials[0].Host.BusyPercent = 250 }, "workloads[0].trials[0].host.busy_percent: 250 is above 100"},
		{"0 CPUs", func(w *results.Workload) { w.AllTrials[0].Host.CPUs = 0 }, "workloads[0].trials[0].host.cpus: 0: the machine that ran the load had at least one CPU"},
	}
	t.Run("genuine", func(t *testing.T) {
		t.Parallel()
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
			Steps: []resource.TestStep{{
				Config: fmt.Sprintf(`
output "notes" { value = join("\n", provider::llmserve::compare(file(%[1]q), file(%[1]q)).workloads["64 / 8"].notes) }
`, genuine),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("notes", knownvalue.StringRegexp(errorPattern(
						"the baseline's confirmation trials disagree beyond their size at 4 level(s) (concurrency 2: p95 time_to_first_token 179 % apart)"))),
				},
			}},
		})
	})
	for _, f := range forgeries {
		forged := noisyRecordedDoc(t, f.forge)
		for _, r := range readers {
			t.Run(f.name+"/"+r.name, func(t *testing.T) {
				t.Parallel()
				resource.Test(t, resource.TestCase{
					ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
					TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
					Steps:                    []resource.TestStep{{Config: r.config(forged), ExpectError: errorPattern(f.want)}},
				})
			})
		}
	}
}
