package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// errorPattern matches an error text even where Terraform wrapped it onto several lines.
func errorPattern(s string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(s), " ", `\s+`))
}

// goldenRendering is what the results package's golden tests pin for the reference file;
// a function must return exactly that text.
func goldenRendering(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAccFunctionReports(t *testing.T) {
	t.Parallel()
	ref := referencePath(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
locals {
  document = file(%q)
}
output "markdown" {
  value = provider::llmserve::report_markdown(local.document)
}
output "csv" {
  value = provider::llmserve::report_csv(local.document)
}
output "openmetrics" {
  value = provider::llmserve::report_openmetrics(local.document)
}
output "svg" {
  value = provider::llmserve::report_svg(local.document)
}
output "stamped" {
  value = strcontains(provider::llmserve::report_openmetrics(local.document, "2026-12-01T09:30:00Z"), "llmserve_maximum_passing_concurrency{workload=\"8K / 1K\"} 7 1796117400\n")
}
`, ref),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("markdown", knownvalue.StringExact(goldenRendering(t, "reference.md.golden"))),
				statecheck.ExpectKnownOutputValue("csv", knownvalue.StringExact(goldenRendering(t, "reference.csv.golden"))),
				statecheck.ExpectKnownOutputValue("openmetrics", knownvalue.StringExact(goldenRendering(t, "reference.prom.golden"))),
				statecheck.ExpectKnownOutputValue("svg", knownvalue.StringExact(goldenRendering(t, "reference.svg.golden"))),
				statecheck.ExpectKnownOutputValue("stamped", knownvalue.Bool(true)),
			},
		}},
	})
}

// TestAccFunctionReports_composesWithDataSource gates on the data source and publishes the
// report from the same file, the way a configuration would.
func TestAccFunctionReports_composesWithDataSource(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
data "llmserve_capacity_report" "archived" {
  path = %q
}
output "capacity_8k" {
  value = data.llmserve_capacity_report.archived.maximum_passing_concurrency["8K / 1K"]
}
output "report_agrees" {
  value = strcontains(provider::llmserve::report_markdown(file(data.llmserve_capacity_report.archived.path)), "| 8K / 1K | 8192 / 1024 | 7 | 8 |")
}
`, referencePath(t)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("capacity_8k", knownvalue.Int64Exact(7)),
				statecheck.ExpectKnownOutputValue("report_agrees", knownvalue.Bool(true)),
			},
		}},
	})
}

// recordedPath is a real benchmark result of the simulated engine with its records files
// (internal/results/testdata/recorded): workload "64 / 8", capacity 4, first failing 5.
func recordedPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "results", "testdata", "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// forgedCapacity is the recorded result with its capacity edited from 4 to 6 while its
// trials still show 5 failing, as an HCL expression.
func forgedCapacity(t *testing.T) string {
	return fmt.Sprintf(`replace(file(%q), "\"maximum_passing_concurrency\": 4", "\"maximum_passing_concurrency\": 6")`, recordedPath(t, "result.json"))
}

const forgedCapacityError = `workloads[0].maximum_passing_concurrency: workload "64 / 8": maximum_passing_concurrency states 6, but its trials give 4`

func TestAccFunctionReports_errors(t *testing.T) {
	t.Parallel()
	forged := forgedCapacity(t)
	cases := []struct {
		name     string
		function string
		document string
		want     string
	}{
		{"markdown of text", "report_markdown", `"not a document"`, `not a schema v1 results document: results document is not valid JSON`},
		{"csv of another version", "report_csv", `jsonencode({ schema_version = 3 })`, `schema_version: unsupported version 3`},
		{"openmetrics of a partial document", "report_openmetrics", `jsonencode({ schema_version = 1 })`, `experiment: missing required key`},
		{"svg of a mistyped trial", "report_svg", `jsonencode({ schema_version = 1, workloads = [{ passing_trials = [{ ttft_ms = { p95 = "slow" } }] }] })`,
			`workloads[0].passing_trials[0].ttft_ms.p95: expected number, got string`},
		{"null document", "report_markdown", `null`, `argument must not be null`},
		{"openmetrics with a timestamp that is none", "report_openmetrics", `"{}", "yesterday"`, `The timestamp argument "yesterday" is not an RFC 3339 time`},
		// A headline its own trials contradict is refused by every rendering.
		{"markdown of a forged capacity", "report_markdown", forged, forgedCapacityError},
		{"csv of a forged capacity", "report_csv", forged, forgedCapacityError},
		{"openmetrics of a forged capacity", "report_openmetrics", forged, forgedCapacityError},
		{"svg of a forged capacity", "report_svg", forged, forgedCapacityError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
				Steps: []resource.TestStep{{
					Config:      fmt.Sprintf("output \"x\" {\n  value = provider::llmserve::%s(%s)\n}\n", tc.function, tc.document),
					ExpectError: errorPattern(tc.want),
				}},
			})
		})
	}
}
