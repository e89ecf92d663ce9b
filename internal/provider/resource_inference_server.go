package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

// NewInferenceServerResource is the llmserve_inference_server resource.
func NewInferenceServerResource() resource.Resource { return &inferenceServerResource{} }

type inferenceServerResource struct {
	engineResource
}

func (r *inferenceServerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inference_server"
}

// backend connects to the provider's Docker Engine.
func (r *inferenceServerResource) backend(diags *diag.Diagnostics) *docker.Backend {
	return connect(r.provider, diags, "Docker Engine", "Cannot use the Docker Engine", "",
		func(p *providerData) (*docker.Backend, error) { return p.docker.Backend() })
}

func (r *inferenceServerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config inferenceServerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	ctx, cancel := plan.operation(ctx, "create", &resp.Diagnostics)
	defer cancel()
	b := r.backend(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, c, ready, diags := plan.translate(ctx, config)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	defer r.reachInside(b, c.Name, c.Unpublished, &ready)()
	st, info, err := deploy.Launch(ctx, b, c, ready)
	if err != nil {
		detail := err.Error()
		if !errors.Is(err, deploy.ErrContainerLeft) {
			detail += "\n\nThe container this apply created was removed; nothing is left on the engine host."
		}
		summary := "Inference server did not become ready"
		if errors.Is(err, deploy.ErrClash) {
			summary = "Inference server's name or port is taken"
		}
		resp.Diagnostics.AddError(summary, detail)
		return
	}
	resp.Diagnostics.Append(plan.setStatus(ctx, spec, st)...)
	resp.Diagnostics.Append(plan.recordExperiment(ctx, b, spec, st, info)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *inferenceServerResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state inferenceServerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	b := r.backend(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	st, err := b.Inspect(ctx, state.ID.ValueString())
	if errors.Is(err, deploy.ErrNotFound) {
		// Gone out of band: forget it so the next plan creates it again.
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot read inference server", err.Error())
		return
	}
	imported := state.Engine.IsNull()
	rec, err := deploy.ParseLaunchRecord(st.Labels[deploy.SpecLabel])
	if err != nil {
		resp.Diagnostics.AddError("Container was not created by llmserve", err.Error())
		return
	}
	if imported {
		// Only an import reads the in-place settings; a refresh keeps its own.
		if rec, err = deploy.CurrentRecord(ctx, b, st); err != nil {
			resp.Diagnostics.AddError("Cannot read the container's launch record", err.Error())
			return
		}
		resp.Diagnostics.Append(state.fromRecord(ctx, rec)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	if state.Publish.IsNull() {
		// A state written before publish existed: the container says, so no replacement is planned.
		state.Publish = types.BoolValue(!rec.Placement.Unpublished)
	}
	resp.Diagnostics.Append(state.setStatus(ctx, rec.Spec, st)...)
	state.RestartPolicy = types.StringValue(orString(st.RestartPolicy, "no"))
	if state.Experiment.IsNull() && st.Running {
		// After an import: ask the running server for what create would have recorded.
		infoCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ready := deploy.Readiness{Engine: rec.Spec.Engine, Model: rec.Spec.RequestModel(), APIKey: st.APIKey.Reveal()}
		closeRelays := r.reachInside(b, st.ID, st.Unpublished, &ready)
		info := deploy.ReadServerInfo(infoCtx, st.Endpoint, ready)
		closeRelays()
		cancel()
		resp.Diagnostics.Append(state.recordExperiment(ctx, b, rec.Spec, st, info)...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *inferenceServerResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state, config inferenceServerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := plan.operation(ctx, "update", &resp.Diagnostics)
	defer cancel()
	b := r.backend(&resp.Diagnostics)
	spec, diags := plan.launchSpec(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ready := plan.readiness(spec, config.secrets())
	defer r.reachInside(b, state.ID.ValueString(), plan.unpublished(), &ready)()
	done, err := deploy.Restart(ctx, b, state.ID.ValueString(), state.inPlace(), plan.inPlace(), ready)
	if done.RecordErr != nil {
		// The change itself is made; only an import would read the old values.
		resp.Diagnostics.AddWarning("Launch record not updated",
			fmt.Sprintf("The in-place change is applied, but the container's launch record could not be updated (%v), so an import of this container would restore the previous restart_policy, stop_grace_period_seconds and readiness_timeout.", done.RecordErr))
	}
	var notReady *deploy.NotReadyError
	switch {
	case errors.As(err, &notReady):
		// The container was stopped again (or says why not), so state (still stopped) tells
		// the truth and the next plan offers the restart again.
		state.RestartPolicy, state.StopGraceSeconds = plan.RestartPolicy, plan.StopGraceSeconds
		state.ReadinessTimeout, state.Timeouts = plan.ReadinessTimeout, plan.Timeouts
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		detail := err.Error()
		if notReady.StopErr == nil {
			detail += " Fix the cause and apply again, or taint it to replace it."
		}
		resp.Diagnostics.AddError("Inference server did not become ready after restart", detail)
		return
	case err != nil:
		resp.Diagnostics.AddError("Cannot change the inference server in place", err.Error())
		return
	}
	st := done.Status
	resp.Diagnostics.Append(plan.setStatus(ctx, spec, st)...)
	// Server-reported values do not change with in-place settings.
	plan.Experiment, plan.ServerVersion = state.Experiment, state.ServerVersion
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *inferenceServerResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state inferenceServerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	ctx, cancel := state.operation(ctx, "delete", &resp.Diagnostics)
	defer cancel()
	b := r.backend(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	grace := time.Duration(state.StopGraceSeconds.ValueInt64()) * time.Second
	if err := b.Remove(ctx, state.ID.ValueString(), grace); err != nil {
		resp.Diagnostics.AddError("Cannot remove inference server", err.Error())
	}
}

// reachInside makes r reach an unpublished server (publish = false) through the engine: its
// HTTP client's connections are relay containers in the server's network namespace
// (runner.Docker.HTTPClient). The returned func closes the relays left idle.
func (r *inferenceServerResource) reachInside(b *docker.Backend, target string, unpublished bool, ready *deploy.Readiness) func() {
	if !unpublished || b == nil {
		return func() {}
	}
	d := &runner.Docker{Cli: b.Client(), Host: r.provider.docker.Host()}
	ready.HTTPClient = d.HTTPClient(target)
	return ready.HTTPClient.CloseIdleConnections
}

// ImportState takes a container name or id; Read fills everything else from the container's
// launch record.
func (r *inferenceServerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importID(ctx, req.ID, resp)
}
