package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var (
	_ datasource.DataSource                     = (*capacityReportDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*capacityReportDataSource)(nil)
)

// NewCapacityReportDataSource reads an archived schema v1 results document, so deployments
// can gate on a measured capacity without re-running hours of load.
func NewCapacityReportDataSource() datasource.DataSource { return &capacityReportDataSource{} }

type capacityReportDataSource struct{}

type capacityReportModel struct {
	Path                      types.String  `tfsdk:"path"`
	Content                   types.String  `tfsdk:"content"`
	Verified                  types.Bool    `tfsdk:"verified"`
	MaximumPassingConcurrency types.Map     `tfsdk:"maximum_passing_concurrency"`
	FirstFailingConcurrency   types.Map     `tfsdk:"first_failing_concurrency"`
	CapacityBoundedBySearch   types.Map     `tfsdk:"capacity_bounded_by_search"`
	MaximumPassingRequestRate types.Map     `tfsdk:"maximum_passing_request_rate"`
	FirstFailingRequestRate   types.Map     `tfsdk:"first_failing_request_rate"`
	MaximumPassingUsers       types.Map     `tfsdk:"maximum_passing_users"`
	FirstFailingUsers         types.Map     `tfsdk:"first_failing_users"`
	MaximumPassingSpeedup     types.Map     `tfsdk:"maximum_passing_speedup"`
	FirstFailingSpeedup       types.Map     `tfsdk:"first_failing_speedup"`
	WorkloadResults           types.List    `tfsdk:"workload_results"`
	SLOs                      types.List    `tfsdk:"slos"`
	Baseline                  types.String  `tfsdk:"baseline"`
	SameSetup                 types.Bool    `tfsdk:"same_setup"`
	RecordsDirectory          types.String  `tfsdk:"records_directory"`
	BaselineRecordsDirectory  types.String  `tfsdk:"baseline_records_directory"`
	Comparison                types.Object  `tfsdk:"comparison"`
	CostPerHour               types.Float64 `tfsdk:"cost_per_hour"`
	Accelerators              types.Int64   `tfsdk:"accelerators"`
	Cost                      types.Map     `tfsdk:"cost"`
	ResultsJSON               types.String  `tfsdk:"results_json"`
}

// reportSLOValue is one objective the document's trials were judged by.
type reportSLOValue struct {
	Metric      string   `tfsdk:"metric"`
	Percentile  *float64 `tfsdk:"percentile"`
	ThresholdMs float64  `tfsdk:"threshold_ms"`
	Comparison  string   `tfsdk:"comparison"`
}

func reportSLOAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"metric":       schema.StringAttribute{Computed: true, MarkdownDescription: "One of " + strings.Join(results.MetricNames(), ", ") + "."},
		"percentile":   schema.Float64Attribute{Computed: true, MarkdownDescription: "Percentile of the metric over a trial's measured requests; null for `goodput`."},
		"threshold_ms": schema.Float64Attribute{Computed: true, MarkdownDescription: "Threshold in the metric's unit (ms, tokens/s or percent)."},
		"comparison":   schema.StringAttribute{Computed: true, MarkdownDescription: "`strictly_less_than`, `less_than_or_equal`, `greater_than` or `greater_than_or_equal`."},
	}
}

var reportSLOObjectType = schema.NestedAttributeObject{Attributes: reportSLOAttributes()}.Type().(types.ObjectType)

func (d *capacityReportDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_capacity_report"
}

func (d *capacityReportDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads an archived capacity result and exposes the same capacity maps and per-workload " +
			"trial details as `llmserve_capacity_benchmark`, so a later deployment can gate on a measured capacity " +
			"without re-running the benchmark. Set exactly one of `path` or `content`.\n\n" +
			"It accepts **schema v1 documents only**: `results_json` of `llmserve_capacity_benchmark`, or a file in that " +
			"shape (the \"Results schema v1\" guide lists every field, its unit and whether it is optional). AIPerf's own " +
			"export (`profile_export_aiperf.json`) is not schema v1 — it holds one run at one concurrency, not a boundary — " +
			"and is refused with a message saying so.",
		Attributes: map[string]schema.Attribute{
			"path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path of the results document on the machine running Terraform. A relative " +
					"path is taken from Terraform's working directory; prefer `\"${path.module}/results.json\"`. " +
					fileRule(results.File),
				Validators: []validator.String{nonEmptyString{}},
			},
			"content": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The results document itself, for example `file(\"results.json\")` or " +
					"`llmserve_capacity_benchmark.example.results_json`.",
				Validators: []validator.String{nonEmptyString{}},
			},
			"verified": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "True when `records_directory` was set and the document held against its records " +
					"(checksums, recomputed metrics, headline); false when `records_directory` is not set. A document that " +
					"does not hold is an error, never `false`.",
			},
			"maximum_passing_concurrency": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.Int64Type,
				MarkdownDescription: "Per workload label, " + descMaximumPassing,
			},
			"first_failing_concurrency": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.Int64Type,
				MarkdownDescription: "Per workload label, " + descFirstFailing,
			},
			"capacity_bounded_by_search": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.BoolType,
				MarkdownDescription: "Per workload label, " + descBoundedBySearch + " Read from the boundary alone, so it holds for any schema v1 document.",
			},
			"maximum_passing_users": schema.MapAttribute{
				Computed:    true,
				ElementType: types.Int64Type,
				MarkdownDescription: "Per workload label, for a search by users (virtual users each holding multi-turn " +
					"conversations with think time): the most users at which every confirmation trial met the objectives. " +
					"Null when even the fewest users tried failed, or when the workload was searched on another axis.",
			},
			"first_failing_users": schema.MapAttribute{
				Computed:    true,
				ElementType: types.Int64Type,
				MarkdownDescription: "Per workload label, for a search by users: the fewest users above `maximum_passing_users` " +
					"at which a confirmation trial failed. Null when every level tried passed, or on another axis.",
			},
			"maximum_passing_request_rate": reportFloat64Map(descMaximumPassingRate),
			"first_failing_request_rate":   reportFloat64Map(descFirstFailingRate),
			"maximum_passing_speedup":      reportFloat64Map(descMaximumPassingSpeedup),
			"first_failing_speedup":        reportFloat64Map(descFirstFailingSpeedup),
			"workload_results": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Per workload, in document order: configured lengths, the boundary, and the full " +
					"metrics of the confirmation trials on both sides.",
				NestedObject: schema.NestedAttributeObject{Attributes: dataSourceAttributes(workloadResultSchemaAttributes())},
			},
			"slos": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The objectives the trials were judged by, all of which must hold in every confirmation trial " +
					"(a document written before `slos` existed has its single `slo` here).",
				NestedObject: schema.NestedAttributeObject{Attributes: reportSLOAttributes()},
			},
		},
	}
	addBaselineAttributes(resp.Schema.Attributes)
	addCostAttributes(resp.Schema.Attributes)
}

func (d *capacityReportDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{exactlyOneSource{}}
}

func (d *capacityReportDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m capacityReportModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data, from, attrPath := []byte(m.Content.ValueString()), "content", path.Root("content")
	if !m.Path.IsNull() {
		attrPath, from = path.Root("path"), m.Path.ValueString()
		var err error
		if data, err = results.ReadFile(m.Path.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(attrPath, "Cannot read results document",
				fmt.Sprintf("Reading %s failed: %v. The path is relative to Terraform's working directory; \"${path.module}/...\" names a file beside the configuration.", m.Path.ValueString(), err))
			return
		}
	}
	doc, err := results.Parse(data)
	if err != nil {
		detail := fmt.Sprintf("%s is not a schema v1 results document:\n%v", from, err)
		if hint := results.AIPerfExportHint(data); hint != "" {
			detail += "\n\n" + hint
		}
		resp.Diagnostics.AddAttributeError(attrPath, "Invalid results document", detail)
		return
	}
	m.Verified = types.BoolValue(false)
	if dir := m.RecordsDirectory; !dir.IsNull() {
		v, err := records.Verify(doc, dir.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("records_directory"), "Cannot verify results against their records",
				fmt.Sprintf("%s: %v.", from, err))
			return
		}
		if !v.OK() {
			resp.Diagnostics.AddAttributeError(path.Root("records_directory"), "Results do not match their records",
				fmt.Sprintf("%s differs from what the records files under %s give:\n%s", from, dir.ValueString(), verificationLines(v)))
			return
		}
		m.Verified = types.BoolValue(true)
	}

	var diags diag.Diagnostics
	m.MaximumPassingConcurrency, m.FirstFailingConcurrency, m.CapacityBoundedBySearch, diags = boundaryMaps(doc)
	resp.Diagnostics.Append(diags...)
	open, diags := openLoopMapValues(doc)
	resp.Diagnostics.Append(diags...)
	m.MaximumPassingRequestRate, m.FirstFailingRequestRate = open["maximum_passing_request_rate"], open["first_failing_request_rate"]
	m.MaximumPassingSpeedup, m.FirstFailingSpeedup = open["maximum_passing_speedup"], open["first_failing_speedup"]
	m.MaximumPassingUsers, m.FirstFailingUsers, diags = usersMaps(doc)
	resp.Diagnostics.Append(diags...)
	m.WorkloadResults, diags = workloadResultsValue(ctx, doc)
	resp.Diagnostics.Append(diags...)
	slos := make([]reportSLOValue, 0, len(doc.Objectives()))
	for _, s := range doc.Objectives() {
		v := reportSLOValue{Metric: s.Metric, ThresholdMs: s.ThresholdMs, Comparison: s.Comparison}
		if !s.Info().PerTrial {
			p := s.Percentile
			v.Percentile = &p
		}
		slos = append(slos, v)
	}
	m.SLOs, diags = types.ListValueFrom(ctx, reportSLOObjectType, slos)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(m.compareWithBaseline(ctx, doc)...)
	resp.Diagnostics.Append(m.setCost(ctx, doc)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// maxVerificationLines caps the differences a diagnostic lists: a document of another run
// differs everywhere.
const maxVerificationLines = 20

func verificationLines(v records.Verification) string {
	lines := slices.Clone(v.Differences)
	for _, c := range v.Contradictions {
		lines = append(lines, c.Error())
	}
	if n := len(lines); n > maxVerificationLines {
		lines = append(lines[:maxVerificationLines], fmt.Sprintf("... and %d more", n-maxVerificationLines))
	}
	return strings.Join(lines, "\n")
}

// exactlyOneSource wants exactly one of path and content. It says what each is for, which
// the generic ExactlyOneOf message does not.
type exactlyOneSource struct{}

func (exactlyOneSource) Description(context.Context) string {
	return "Exactly one of path or content must be set."
}

func (v exactlyOneSource) MarkdownDescription(ctx context.Context) string {
	return "Exactly one of `path` or `content` must be set."
}

func (exactlyOneSource) ValidateDataSource(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var p, c types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("path"), &p)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("content"), &c)...)
	if resp.Diagnostics.HasError() || p.IsUnknown() || c.IsUnknown() {
		// An unknown value may still turn out null; judge again once it is known.
		return
	}
	switch {
	case p.IsNull() && c.IsNull():
		resp.Diagnostics.AddError("Missing results document",
			"Set path to read a results document from a file, or content to pass the document itself (for example file(\"results.json\") or llmserve_capacity_benchmark.<name>.results_json).")
	case !p.IsNull() && !c.IsNull():
		resp.Diagnostics.AddAttributeError(path.Root("content"), "Conflicting results documents",
			"path and content are both set; set only one: path to read the document from a file, or content to pass the document itself.")
	}
}

// dataSourceAttributes converts the computed result attributes the capacity_benchmark
// resource declares into their data source form, so the two always expose the same shape.
func dataSourceAttributes(in map[string]rschema.Attribute) map[string]schema.Attribute {
	out := make(map[string]schema.Attribute, len(in))
	for name, a := range in {
		desc := a.GetMarkdownDescription()
		switch a := a.(type) {
		case rschema.StringAttribute:
			out[name] = schema.StringAttribute{Computed: true, MarkdownDescription: desc}
		case rschema.Int64Attribute:
			out[name] = schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
		case rschema.Float64Attribute:
			out[name] = schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
		case rschema.BoolAttribute:
			out[name] = schema.BoolAttribute{Computed: true, MarkdownDescription: desc}
		case rschema.NumberAttribute:
			out[name] = schema.NumberAttribute{Computed: true, MarkdownDescription: desc}
		case rschema.MapAttribute:
			out[name] = schema.MapAttribute{Computed: true, MarkdownDescription: desc, ElementType: a.ElementType}
		case rschema.ListAttribute:
			out[name] = schema.ListAttribute{Computed: true, MarkdownDescription: desc, ElementType: a.ElementType}
		case rschema.SingleNestedAttribute:
			out[name] = schema.SingleNestedAttribute{Computed: true, MarkdownDescription: desc, Attributes: dataSourceAttributes(a.Attributes)}
		case rschema.ListNestedAttribute:
			out[name] = schema.ListNestedAttribute{Computed: true, MarkdownDescription: desc,
				NestedObject: schema.NestedAttributeObject{Attributes: dataSourceAttributes(a.NestedObject.Attributes)}}
		default:
			// The resource uses no other kind today; TestCapacityReportSchemaMatchesResource
			// fails if one appears, before any user sees a type mismatch.
			out[name] = schema.DynamicAttribute{Computed: true, MarkdownDescription: desc}
		}
	}
	return out
}

// reportFloat64Map is a computed map of numbers by workload label.
func reportFloat64Map(desc string) schema.MapAttribute {
	return schema.MapAttribute{Computed: true, ElementType: types.Float64Type, MarkdownDescription: "Per workload label, " + desc}
}
