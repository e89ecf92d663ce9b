package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var (
	_ resource.Resource                   = (*capacityBenchmarkResource)(nil)
	_ resource.ResourceWithConfigure      = (*capacityBenchmarkResource)(nil)
	_ resource.ResourceWithValidateConfig = (*capacityBenchmarkResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*capacityBenchmarkResource)(nil)
)

// defaultBenchmarkTimeout is generous because the reference trials took up to 13 minutes each.
const defaultBenchmarkTimeout = 24 * time.Hour

// NewCapacityBenchmarkResource is the llmserve_capacity_benchmark constructor.
func NewCapacityBenchmarkResource() resource.Resource { return &capacityBenchmarkResource{} }

type capacityBenchmarkResource struct {
	data *providerData
}

func (r *capacityBenchmarkResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_capacity_benchmark"
}

func (r *capacityBenchmarkResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if data := configuredData(req.ProviderData, &resp.Diagnostics); data != nil {
		r.data = data
	}
}

func (r *capacityBenchmarkResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan capacityBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.benchmark(ctx, req.Config, &plan, nil, &resp.Diagnostics) {
		return
	}
	plan.ID = types.StringValue(randomID())
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// benchmark runs the benchmark m plans and sets its results and comparison in m; false when
// it did not deliver a result (the diagnostics say why). delivered, when set, is the result
// stored before, whose searches stand: only the comparison with m's baseline is measured.
func (r *capacityBenchmarkResource) benchmark(ctx context.Context, config tfsdk.Config, m *capacityBenchmarkModel, delivered *results.Document, diags *diag.Diagnostics) bool {
	var apiKey, adminKey types.String
	// Write-only values are only in the config, never in the plan.
	diags.Append(config.GetAttribute(ctx, path.Root("api_key"), &apiKey)...)
	diags.Append(config.GetAttribute(ctx, path.Root("admin_api_key"), &adminKey)...)
	if diags.HasError() {
		return false
	}
	timeout, d := m.Timeouts.Create(ctx, defaultBenchmarkTimeout)
	diags.Append(d...)
	cfg, _, d := m.capacityConfig(ctx)
	diags.Append(d...)
	// Every value is known now: one that was unknown at plan meets its rule here, before
	// anything is sent.
	diags.Append(problemDiagnostics(cfg.Check(), benchmarkProblem, nil, false)...)
	if diags.HasError() {
		return false
	}
	cfg.APIKey, cfg.AdminAPIKey = apiKey.ValueString(), adminKey.ValueString()
	if delivered != nil {
		cfg.Delivered = &capacity.Document{Document: delivered}
	}
	diags.Append(problemDiagnostics(cfg.RunWarnings(), benchmarkProblem, nil, true)...)
	if r.data != nil {
		cfg.ToolVersion = r.data.version
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	report, err := r.place(*m).run(ctx, cfg, capacity.Files{
		ProgressFile: m.ProgressFile.ValueString(),
		ProgressLog:  m.ProgressLog.ValueString(),
		// One readable line per trial for TF_LOG=INFO, beside the progress log.
		Say: func(line string) { tflog.Info(ctx, line) },
	})
	var fileErr *capacity.FileError
	if errors.As(err, &fileErr) {
		diags.AddAttributeError(attributePath(fileErr.Path), "Cannot use "+strings.ReplaceAll(fileErr.Path.String(), "_", " "), err.Error())
		return false
	}
	if summary := report.Resumed.Summary(); summary != "" || len(report.Resumed.Ignored) > 0 {
		diags.AddAttributeWarning(path.Root("progress_file"), "Progress file: what the run reused", resumeWarning(report.Resumed))
	}
	if len(report.Failures) > 0 {
		diags.AddWarning("Requests failed during the capacity benchmark", failureWarning(report.Failures, err == nil))
	}
	if err != nil {
		summary := "Capacity benchmark failed"
		// A stopped run, and a runner's fault (interrupted, died, engine lost), have a title of their own.
		var titled interface{ Summary() string }
		if errors.As(err, &titled) {
			summary = titled.Summary()
		}
		diags.AddError(summary, err.Error())
		return false
	}
	doc := report.Document
	diags.Append(m.setResults(ctx, doc)...)
	diags.Append(m.setComparison(ctx)...)
	if diags.HasError() {
		return false
	}
	diags.Append(problemDiagnostics(cfg.ResultWarnings(doc), benchmarkProblem, nil, true)...)
	m.APIKey, m.AdminAPIKey = types.StringNull(), types.StringNull()
	return true
}

// Read keeps the stored result: a benchmark measures a moment, there is nothing remote to refresh.
func (r *capacityBenchmarkResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state capacityBenchmarkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update happens for attributes that do not re-run the benchmark (progress_file,
// progress_log, timeouts, api_key, replica_endpoints: pod addresses change with every pod
// restart, the measurement does not) and for baseline and trial.comparison_budget, which
// measure only the comparison again: the stored searches stand.
func (r *capacityBenchmarkResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state capacityBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if comparisonChanged(plan, state) {
		stored, err := results.Parse([]byte(state.ResultsJSON.ValueString()))
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("results_json"), "Cannot read the stored result",
				fmt.Sprintf("The stored results_json does not read back (%v); replace the benchmark to measure again: terraform apply -replace=<address>.", err))
			return
		}
		if plan.Baseline.IsNull() {
			// No comparison any more: the stored searches, without the trials the last one
			// added, and nothing sent.
			resp.Diagnostics.Append(state.setResults(ctx, capacity.WithoutComparison(stored))...)
			state.Comparison = types.ObjectNull(comparisonAttrTypes)
		} else {
			id := state.ID
			state = plan
			state.ID = id
			if !r.benchmark(ctx, req.Config, &state, stored, &resp.Diagnostics) {
				return
			}
		}
	}
	state.Baseline, state.Trial = plan.Baseline, plan.Trial
	state.ProgressFile = plan.ProgressFile
	state.ProgressLog = plan.ProgressLog
	state.Timeouts = plan.Timeouts
	state.Replicas = plan.Replicas
	state.APIKey, state.AdminAPIKey = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// comparisonChanged is whether the planned comparison differs from the stored one: another
// baseline, or another comparison budget.
func comparisonChanged(plan, state capacityBenchmarkModel) bool {
	return !plan.Baseline.Equal(state.Baseline) || !plan.comparisonBudget().Equal(state.comparisonBudget())
}

// Delete forgets the result and removes what is left of its runner; the server is left as it is.
func (r *capacityBenchmarkResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state capacityBenchmarkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.removeRunners(ctx, state); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("runner"), "Cannot remove the benchmark's runner", err.Error())
	}
}

// failureWarning lists the trials with failed requests, a screenful at most. finished says
// whether the run delivered a result: a run that stopped has no results_json to point at.
func failureWarning(lines []string, finished bool) string {
	const shown = 10
	where := "their error summaries are in results_json and workload_results"
	if !finished {
		where = "the run stopped, so there is no results_json: their error summaries are below, in progress_file when it is set, and in the provider's log"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d trials had failed measured requests. Each failed request fails its trial (a user who got an error did not get the SLO), "+
		"so these trials count as failing; %s.\n", len(lines), where)
	for i, l := range lines {
		if i == shown {
			fmt.Fprintf(&b, "\n... and %d more (see the progress file or the provider's log)", len(lines)-shown)
			break
		}
		b.WriteString("\n- " + l)
	}
	return b.String()
}

// resumeWarning says what the run took from the progress file and what it ignored there.
func resumeWarning(r capacity.Resumed) string {
	var parts []string
	if s := r.Summary(); s != "" {
		parts = append(parts, strings.ToUpper(s[:1])+s[1:]+".")
	}
	for _, why := range r.Ignored {
		parts = append(parts, fmt.Sprintf("Ignored in %s: %s.", r.File, why))
	}
	return strings.Join(parts, "\n")
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
