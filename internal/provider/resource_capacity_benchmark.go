package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
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
	var apiKey, adminKey types.String
	// Write-only values are only in the config, never in the plan.
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("api_key"), &apiKey)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("admin_api_key"), &adminKey)...)
	if resp.Diagnostics.HasError() {
		return
	}

	timeout, diags := plan.Timeouts.Create(ctx, defaultBenchmarkTimeout)
	resp.Diagnostics.Append(diags...)
	cfg, _, diags := plan.capacityConfig(ctx)
	resp.Diagnostics.Append(diags...)
	// Every value is known now: one that was unknown at plan meets its rule here, before
	// anything is sent.
	resp.Diagnostics.Append(problemDiagnostics(cfg.Check(), benchmarkProblem, nil, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg.APIKey, cfg.AdminAPIKey = apiKey.ValueString(), adminKey.ValueString()
	resp.Diagnostics.Append(problemDiagnostics(cfg.RunWarnings(), benchmarkProblem, nil, true)...)
	if r.data != nil {
		cfg.ToolVersion = r.data.version
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	report, err := r.place(plan).run(ctx, cfg, capacity.Files{
		ProgressFile: plan.ProgressFile.ValueString(),
		ProgressLog:  plan.ProgressLog.ValueString(),
		// One readable line per trial for TF_LOG=INFO, beside the progress log.
		Say: func(line string) { tflog.Info(ctx, line) },
	})
	var fileErr *capacity.FileError
	if errors.As(err, &fileErr) {
		resp.Diagnostics.AddAttributeError(attributePath(fileErr.Path), "Cannot use "+strings.ReplaceAll(fileErr.Path.String(), "_", " "), err.Error())
		return
	}
	if summary := report.Resumed.Summary(); summary != "" || len(report.Resumed.Ignored) > 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("progress_file"), "Progress file: what the run reused", resumeWarning(report.Resumed))
	}
	if len(report.Failures) > 0 {
		resp.Diagnostics.AddWarning("Requests failed during the capacity benchmark", failureWarning(report.Failures, err == nil))
	}
	if err != nil {
		summary := "Capacity benchmark failed"
		// A stopped run, and a runner's fault (interrupted, died, engine lost), have a title of their own.
		var titled interface{ Summary() string }
		if errors.As(err, &titled) {
			summary = titled.Summary()
		}
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	doc := report.Document

	resp.Diagnostics.Append(plan.setResults(ctx, doc)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(problemDiagnostics(cfg.ResultWarnings(doc), benchmarkProblem, nil, true)...)
	plan.ID = types.StringValue(randomID())
	plan.APIKey, plan.AdminAPIKey = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
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

// Update only happens for attributes that do not re-run the benchmark (progress_file,
// progress_log, timeouts, api_key, replica_endpoints: pod addresses change with every pod
// restart, the measurement does not).
func (r *capacityBenchmarkResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state capacityBenchmarkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.ProgressFile = plan.ProgressFile
	state.ProgressLog = plan.ProgressLog
	state.Timeouts = plan.Timeouts
	state.Replicas = plan.Replicas
	state.APIKey, state.AdminAPIKey = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
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
