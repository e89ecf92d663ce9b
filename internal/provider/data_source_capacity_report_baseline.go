package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/boolvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/compare"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
	"github.com/llmserve/terraform-provider-llmserve/internal/records"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// addBaselineAttributes adds the comparison with a baseline to the data source's schema: the
// same comparison as provider::llmserve::compare, for configurations that read the result
// through the data source anyway.
func addBaselineAttributes(attrs map[string]schema.Attribute) {
	attrs["baseline"] = schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "A baseline results document (schema v1 JSON, for example `file(\"releases/v1.4.json\")`) " +
			"to compare this document with; `comparison` is then set. The same comparison as the `compare` function.",
		Validators: []validator.String{nonEmptyString{}},
	}
	attrs["same_setup"] = schema.BoolAttribute{
		Optional: true,
		MarkdownDescription: "Say that this document and `baseline` measured the same model, engine and hardware. " +
			"Without it, a model, engine image or hardware that differs, or that one document recorded and the other " +
			"did not, makes the comparison refuse (`comparable` false): a document that recorded nothing may have " +
			"measured anything. With it, those differences are listed in `flagged` instead. Requires `baseline`.",
		Validators: []validator.Bool{boolvalidator.AlsoRequires(path.MatchRoot("baseline"))},
	}
	attrs["records_directory"] = schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "The `records_directory` this document's benchmark wrote per-request records to. When set, " +
			"the document is verified against them (`verified`): every trial's records file must have its " +
			"`records_sha256`, every metric recomputed from the records must equal the document's (bit for bit; " +
			"`connection_setup_ms` is not in records and is not compared), and each workload's headline must derive " +
			"from the recomputed trials; anything else is an error listing what differs. The same check runs outside " +
			"Terraform with `llmserve-recompute -check` (see the \"Verify a result against its records\" guide). With a " +
			"`baseline` (and `baseline_records_directory`) the comparison also estimates noise by a bootstrap over " +
			"each trial's requests, which matters where a level was measured once. A relative path is taken from " +
			"Terraform's working directory. " + recordsRule,
		Validators: []validator.String{nonEmptyString{}},
	}
	attrs["baseline_records_directory"] = schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "The `records_directory` of the baseline's benchmark; see `records_directory`. A records file the rules refuse is an error naming the baseline's workload, trial and `records_file`; a missing one only leaves that trial without per-request samples. " +
			"One that is there must be the baseline's own, as `records_directory` holds this document's: its SHA-256, every metric recomputed from it and the headline derived from the recomputed trials; an edited file is an error listing what differs.",
		Validators: []validator.String{nonEmptyString{}, printableValidator{}, stringvalidator.AlsoRequires(path.MatchRoot("baseline"))},
	}
	attrs["comparison"] = schema.ObjectAttribute{
		Computed:       true,
		AttributeTypes: comparisonAttrTypes,
		MarkdownDescription: "This document compared with `baseline`; null without one. " + descCompareMethod +
			"\n\nAttributes: " + comparisonAttributesDescription,
	}
}

// recordsRule is what a records file under records_directory may be (records.Path,
// records.File).
var recordsRule = "Each `records_file` a document names must stay inside the directory (a relative path without `..`, " +
	"and no symbolic link leading out of it) and be a regular file of at most " + localfile.Size(records.File.MaxBytes) + "."

// compareWithBaseline sets m.Comparison: doc compared with m.Baseline, or null.
func (m *capacityReportModel) compareWithBaseline(ctx context.Context, doc *results.Document) diag.Diagnostics {
	m.Comparison = types.ObjectNull(comparisonAttrTypes)
	if m.Baseline.IsNull() {
		return nil
	}
	var diags diag.Diagnostics
	base, err := results.Parse([]byte(m.Baseline.ValueString()))
	if err != nil {
		diags.AddAttributeError(path.Root("baseline"), "Invalid baseline document",
			fmt.Sprintf("baseline is not a schema v1 results document:\n%v", err))
		return diags
	}
	o := compare.Options{SameSetup: m.SameSetup.ValueBool()}
	if !m.BaselineRecordsDirectory.IsNull() {
		dir := m.BaselineRecordsDirectory.ValueString()
		// A missing records file falls back on the trials' spread; one the reader refuses
		// (outside the directory, a FIFO, a device, too large) is an error, never a fallback.
		if err := records.CheckFiles(base, dir); err != nil {
			diags.AddAttributeError(path.Root("baseline_records_directory"), "Refused baseline records file",
				fmt.Sprintf("baseline_records_directory %s: the baseline document's %v.", dir, err))
			return diags
		}
		// A records file that is there is held to what records_directory holds the current
		// run's to: the baseline's own, by checksum, recomputed metrics and headline.
		v, err := records.VerifyPresent(base, dir)
		if err != nil {
			diags.AddAttributeError(path.Root("baseline_records_directory"), "Cannot verify the baseline against its records",
				fmt.Sprintf("baseline_records_directory %s: %v.", dir, err))
			return diags
		}
		if !v.OK() {
			diags.AddAttributeError(path.Root("baseline_records_directory"), "Baseline does not match its records",
				fmt.Sprintf("The baseline differs from what the records files under %s give:\n%s", dir, verificationLines(v)))
			return diags
		}
		o.Baseline = compare.RecordsSamples(dir)
	}
	if !m.RecordsDirectory.IsNull() {
		o.Current = compare.RecordsSamples(m.RecordsDirectory.ValueString())
	}
	m.Comparison, diags = types.ObjectValueFrom(ctx, comparisonAttrTypes, comparisonValue(compare.Compare(base, doc, o)))
	return diags
}
