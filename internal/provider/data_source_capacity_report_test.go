package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// referencePath is the reference AIPerf result, absolute because Terraform runs the test
// configuration in a temporary directory.
func referencePath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "results", "testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// referenceBoundaries are the reference file's boundaries, as DESIGN.md states them.
var (
	referenceMaximumPassing = knownvalue.MapExact(map[string]knownvalue.Check{
		"2K / 512": knownvalue.Int64Exact(11),
		"8K / 1K":  knownvalue.Int64Exact(7),
		"16K / 2K": knownvalue.Int64Exact(5),
	})
	referenceFirstFailing = knownvalue.MapExact(map[string]knownvalue.Check{
		"2K / 512": knownvalue.Int64Exact(12),
		"8K / 1K":  knownvalue.Int64Exact(8),
		"16K / 2K": knownvalue.Int64Exact(6),
	})
)

func TestAccCapacityReportDataSource(t *testing.T) {
	t.Parallel()
	ref := referencePath(t)
	const addr = "data.llmserve_capacity_report.test"
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"), referenceMaximumPassing),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_failing_concurrency"), referenceFirstFailing),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"), knownvalue.MapExact(map[string]knownvalue.Check{
			"2K / 512": knownvalue.Bool(false), "8K / 1K": knownvalue.Bool(false), "16K / 2K": knownvalue.Bool(false),
		})),
		// The reference's single slo block reads as a one-objective list.
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("slos"), knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
			"metric":       knownvalue.StringExact("time_to_first_token"),
			"percentile":   knownvalue.Float64Exact(95),
			"threshold_ms": knownvalue.Float64Exact(10000),
			"comparison":   knownvalue.StringExact("strictly_less_than"),
		})})),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("workload_results"), knownvalue.ListSizeExact(3)),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("workload_results").AtSliceIndex(1), knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"label":                       knownvalue.StringExact("8K / 1K"),
			"input_tokens":                knownvalue.Int64Exact(8192),
			"output_tokens":               knownvalue.Int64Exact(1024),
			"maximum_passing_concurrency": knownvalue.Int64Exact(7),
			"first_failing_concurrency":   knownvalue.Int64Exact(8),
			"passing_trials":              knownvalue.ListSizeExact(3),
			"failing_trials":              knownvalue.ListSizeExact(3),
		})),
		// Values copied from the file by hand: the first failing trial of 2K / 512.
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("workload_results").AtSliceIndex(0).AtMapKey("failing_trials").AtSliceIndex(0),
			knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"trial":       knownvalue.Int64Exact(1),
				"concurrency": knownvalue.Int64Exact(12),
				"ttft_ms": knownvalue.ObjectExact(map[string]knownvalue.Check{
					"p50": knownvalue.Float64Exact(6421.958869499999),
					"p95": knownvalue.Float64Exact(11401.869745),
					"p99": knownvalue.Float64Exact(13172.208846669992),
				}),
				"output_throughput_tps": knownvalue.Float64Exact(261.73996242469195),
			})),
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            fmt.Sprintf(`data "llmserve_capacity_report" "test" { path = %q }`, ref),
				ConfigStateChecks: checks,
			},
			{
				Config:            fmt.Sprintf(`data "llmserve_capacity_report" "test" { content = file(%q) }`, ref),
				ConfigStateChecks: checks,
			},
		},
	})
}

// TestAccCapacityReportDataSource_missingBoundaries checks that a workload without a
// boundary is a null map entry, which a gate can test with `!= null`.
func TestAccCapacityReportDataSource_missingBoundaries(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(referencePath(t))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	ws := m["workloads"].([]any)
	ws[0].(map[string]any)["first_failing_concurrency"] = nil // nothing failed within bounds
	ws[0].(map[string]any)["failing_trials"] = []any{}
	ws[2].(map[string]any)["maximum_passing_concurrency"] = nil // even the lowest failed
	ws[2].(map[string]any)["passing_trials"] = []any{}
	doc := filepath.Join(t.TempDir(), "partial.json")
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(doc, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	const addr = "data.llmserve_capacity_report.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`data "llmserve_capacity_report" "test" { path = %q }`, doc),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{
					"2K / 512": knownvalue.Int64Exact(11),
					"8K / 1K":  knownvalue.Int64Exact(7),
					"16K / 2K": knownvalue.Null(),
				})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_failing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{
					"2K / 512": knownvalue.Null(),
					"8K / 1K":  knownvalue.Int64Exact(8),
					"16K / 2K": knownvalue.Int64Exact(6),
				})),
				// 2K / 512 passed everything tried (ceiling); 16K / 2K failed at its lowest, 6 (floor).
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"), knownvalue.MapExact(map[string]knownvalue.Check{
					"2K / 512": knownvalue.Bool(true),
					"8K / 1K":  knownvalue.Bool(false),
					"16K / 2K": knownvalue.Bool(true),
				})),
			},
		}},
	})
}

func TestAccCapacityReportDataSource_errors(t *testing.T) {
	t.Parallel()
	ref := referencePath(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema_version": 1, "workloads": [{"label": 7}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "results.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"neither", `data "llmserve_capacity_report" "test" {}`, `Missing results document`},
		{"aiperf export", `data "llmserve_capacity_report" "test" {
  content = jsonencode({ records = { time_to_first_token = { unit = "ms", p95 = 1650.2 } }, input_config = {} })
}`, `looks like AIPerf's own export`},
		{"both", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  path    = %q
  content = file(%q)
}`, ref, ref), `path and content are both set; set only one`},
		{"empty content", `data "llmserve_capacity_report" "test" { content = "" }`, `content is empty`},
		{"no such file", `data "llmserve_capacity_report" "test" { path = "/nonexistent/results.json" }`, `Cannot read results document`},
		{"not JSON", `data "llmserve_capacity_report" "test" { content = "results: yes" }`, `not valid JSON`},
		{"other version", `data "llmserve_capacity_report" "test" { content = jsonencode({ schema_version = 2 }) }`, `schema_version: unsupported version 2`},
		{"mistyped key", fmt.Sprintf(`data "llmserve_capacity_report" "test" { path = %q }`, bad), `workloads[0].label: expected string, got number`},
		{"impossible boundary", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  content = replace(file(%q), "\"maximum_passing_concurrency\": 11", "\"maximum_passing_concurrency\": 12")
}`, ref), `workloads[0].first_failing_concurrency: 12 is not above maximum_passing_concurrency 12`},
		{"negative metric", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  content = replace(file(%q), "\"p95\": 7095.03604365", "\"p95\": -1")
}`, ref), `workloads[0].passing_trials[0].ttft_ms.p95: -1 is negative`},
		{"device", `data "llmserve_capacity_report" "test" { path = "/dev/zero" }`, `/dev/zero is a character device, not a regular file`},
		// Impossible on their face, with the JSON path.
		{"duplicate key", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  content = replace(file(%q), "\"label\": \"2K / 512\",", "\"label\": \"2K / 512\", \"label\": \"8K / 1K\",")
}`, ref), `workloads[0].label: duplicate key`},
		{"escape in a label", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  content = replace(file(%q), "\"label\": \"2K / 512\"", "\"label\": \"2K / 512\\u001b[2J\"")
}`, ref), `workloads[0].label: "2K / 512\x1b[2J" holds the control character U+001B`},
		// Issue 19: a capacity edited from 4 to 6, its trials still showing 5 failing.
		{"forged capacity", fmt.Sprintf(`data "llmserve_capacity_report" "test" { content = %s }`, forgedCapacity(t)), forgedCapacityError},
		{"records of no records", fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  path              = %q
  records_directory = %q
}`, ref, recordedPath(t, "records")), `the document names no records file`},
		{"FIFO", fmt.Sprintf(`data "llmserve_capacity_report" "test" { path = %q }`, fifo), `is a named pipe (FIFO), not a regular file`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					ExpectError: errorPattern(tc.want),
				}},
			})
		})
	}
}

// TestAccCapacityReportDataSource_records verifies a real result against its records files:
// verified is true when they hold, and a changed records file, or a document forged to agree
// with itself but not with its records, is an error naming what differs.
func TestAccCapacityReportDataSource_records(t *testing.T) {
	t.Parallel()
	doc, recs := recordedPath(t, "result.json"), recordedPath(t, "records")
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the records with a space added to one line: the same values, another file.
	changed := t.TempDir()
	if err := os.CopyFS(changed, os.DirFS(recs)); err != nil {
		t.Fatal(err)
	}
	parsed, err := results.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(changed, parsed.Workloads[0].AllTrials[0].RecordsFile)
	body, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first, []byte(strings.Replace(string(body), `"first_token_ns":`, `"first_token_ns": `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A forgery that agrees with itself: the first failing level's trials restated as
	// passing, the headline derived from them.
	forged := parsed
	w := &forged.Workloads[0]
	for i := range w.AllTrials {
		if tr := &w.AllTrials[i]; tr.Concurrency == 5 && tr.Kind == "confirmation" {
			tr.SLOs = []results.SLOResult{{Metric: results.MetricTTFT, Percentile: 95, Value: 1, Met: true}, {Metric: results.MetricITL, Percentile: 95, Value: 1, Met: true}}
		}
	}
	h, err := results.DeriveHeadline(forged.Objectives(), *w)
	if err != nil {
		t.Fatal(err)
	}
	h.Apply(w)
	w.PassingTrials, w.FailingTrials = nil, nil
	forgedRaw, err := results.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	forgedPath := filepath.Join(t.TempDir(), "forged.json")
	if err := os.WriteFile(forgedPath, forgedRaw, 0o644); err != nil {
		t.Fatal(err)
	}
	const addr = "data.llmserve_capacity_report.test"
	config := func(doc, recs string) string {
		return fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  path              = %q
  records_directory = %q
}`, doc, recs)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(doc, recs),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("verified"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(4)})),
				},
			},
			{
				Config:            fmt.Sprintf(`data "llmserve_capacity_report" "test" { path = %q }`, doc),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("verified"), knownvalue.Bool(false))},
			},
			{Config: config(doc, changed), ExpectError: errorPattern(`has SHA-256`)},
			{Config: config(forgedPath, recs), ExpectError: errorPattern(`maximum_passing_concurrency states 5, but its trials give 4`)},
		},
	})
}

// TestCapacityReportSchemaMatchesResource keeps workload_results the same type as the
// resource's, which the shared value builders rely on.
func TestCapacityReportSchemaMatchesResource(t *testing.T) {
	t.Parallel()
	var resp datasource.SchemaResponse
	NewCapacityReportDataSource().Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	got := resp.Schema.Attributes["workload_results"].GetType()
	want := schema.ListNestedAttribute{NestedObject: schema.NestedAttributeObject{Attributes: workloadResultSchemaAttributes()}}.GetType()
	if !got.Equal(want) {
		t.Fatalf("workload_results type\n%s\ndiffers from the resource's\n%s", got, want)
	}
	if diags := resp.Schema.ValidateImplementation(context.Background()); diags.HasError() {
		t.Fatalf("schema: %v", diags)
	}
}

// A replay's result read back: the rate and speedup maps by label, and the trials verified
// against their records (rate, speedup and open-loop guards recomputed bit for bit).
func TestAccCapacityReportDataSource_replay(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join("..", "results", "testdata", "replay"))
	if err != nil {
		t.Fatal(err)
	}
	const addr = "data.llmserve_capacity_report.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  path              = %q
  records_directory = %q
}`, filepath.Join(dir, "result.json"), filepath.Join(dir, "records")),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("verified"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_speedup"), knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Float64Exact(1.220703125)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_failing_speedup"), knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Float64Exact(1.52587890625)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_request_rate"), knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Float64Exact(6.103515625)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_failing_request_rate"), knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Float64Exact(7.62939453125)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Null()})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"), knownvalue.MapExact(map[string]knownvalue.Check{"recorded": knownvalue.Bool(false)})),
			},
		}},
	})
}

// A search by users read back: the users boundary by label, the concurrency maps null, and
// the headline held against the trials (a document whose trials state users).
func TestAccCapacityReportDataSource_users(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "results", "testdata", "recorded", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := results.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	w := &doc.Workloads[0]
	for _, ts := range [][]results.Trial{w.AllTrials, w.PassingTrials, w.FailingTrials} {
		for i := range ts {
			ts[i].Users, ts[i].Concurrency = ts[i].Concurrency, 0
		}
	}
	w.MaximumPassingUsers, w.FirstFailingUsers = w.MaximumPassingConcurrency, w.FirstFailingConcurrency
	w.MaximumPassingConcurrency, w.FirstFailingConcurrency = nil, nil
	out, err := results.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	const addr = "data.llmserve_capacity_report.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`data "llmserve_capacity_report" "test" {
  path = %q
}`, file),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_users"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(4)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("first_failing_users"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Int64Exact(5)})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("maximum_passing_concurrency"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Null()})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_bounded_by_search"), knownvalue.MapExact(map[string]knownvalue.Check{"64 / 8": knownvalue.Bool(false)})),
			},
		}},
	})
}
