package provider

// How llmserve_inference_server checks its configuration and plans what apply will show.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

// ValidateConfig checks the engine's constraints at plan time, naming the attribute to fix.
// Values not known yet are checked at apply, when they are.
func (r *inferenceServerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m inferenceServerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(m.checkReadinessBounds()...)
	if !m.specKnown() {
		return
	}
	spec, diags := m.validateSpec(ctx, serverProblem)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	if m.placementKnown() {
		placement, diags := m.placement(ctx)
		resp.Diagnostics.Append(diags...)
		resp.Diagnostics.Append(problemDiagnostics(placement.Validate(spec), serverProblem, nil, false)...)
		resp.Diagnostics.Append(problemDiagnostics(spec.LaunchWarnings(placement.Env), serverProblem, nil, true)...)
	}
}

// ModifyPlan refuses to create a stopped server and marks what a restart changes: Docker picks a new ephemeral host port each time a
// container starts, so a restart of a server without a fixed host_port moves its endpoint.
func (r *inferenceServerResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	if req.State.Raw.IsNull() {
		// Create launches the server and waits until it generates; a server created stopped
		// would be a different operation with no endpoint to hand to a benchmark.
		var running types.Bool
		resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("running"), &running)...)
		if !running.IsUnknown() && !running.ValueBool() {
			resp.Diagnostics.AddAttributeError(path.Root("running"), "A new inference server starts running",
				"running = false stops an existing server; create it with running = true (the default), then set false to stop it.")
		}
		r.warnUnreachable(ctx, req, resp)
		r.checkRelayImage(ctx, req, resp)
		r.planKnownOutputs(ctx, req, resp)
		return
	}
	var plan, state, config inferenceServerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Running.ValueBool() && !state.Running.ValueBool() && config.HostPort.IsNull() && !plan.hostNetwork() && !plan.unpublished() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("host_port"), types.Int64Unknown())...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringUnknown())...)
	}
}

// planKnownOutputs shows at plan what a new server's plan already decides: the launch
// command (the engine flags are the thing to review) and, when the host port is fixed, the
// endpoint. Both come from the functions Create uses, so apply cannot disagree.
func (r *inferenceServerResource) planKnownOutputs(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var plan inferenceServerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !plan.specKnown() {
		return
	}
	spec, diags := plan.launchSpec(ctx)
	resp.Diagnostics.Append(planCommand(ctx, spec, diags, &resp.Plan)...)
	if diags.HasError() || r.provider == nil || plan.BindAddress.IsUnknown() || plan.NetworkMode.IsUnknown() {
		return
	}
	if plan.unpublished() && !plan.hostNetwork() {
		// Its address inside its own network namespace: known before the container is.
		endpoint := "http://" + net.JoinHostPort(deploy.UnpublishedAddress, strconv.Itoa(spec.Port))
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringValue(endpoint))...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("host_port"), types.Int64Null())...)
		return
	}
	bind, port := plan.BindAddress.ValueString(), plan.HostPort
	if plan.hostNetwork() {
		bind, port = "", types.Int64Value(int64(spec.Port))
	}
	if port.IsNull() || port.IsUnknown() {
		return // the engine host picks a free port at start
	}
	if endpoint, ok := r.provider.docker.Endpoint(bind, int(port.ValueInt64())); ok {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringValue(endpoint))...)
	}
}

// warnUnreachable flags a placement this machine could not reach (the port published on a
// remote engine host's loopback): readiness would wait out readiness_timeout.
func (r *inferenceServerResource) warnUnreachable(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.provider == nil {
		return
	}
	var bind types.String
	var publish types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("bind_address"), &bind)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("publish"), &publish)...)
	if bind.IsUnknown() || (!publish.IsUnknown() && !publish.IsNull() && !publish.ValueBool()) {
		return // an unpublished server is reached through the engine
	}
	// With host networking the engine itself listens on bind_address, so the same applies.
	resp.Diagnostics.Append(problemDiagnostics((deploy.Placement{BindAddress: bind.ValueString()}).CheckReachable(r.provider.docker.Host()), serverProblem, nil, true)...)
}

// checkRelayImage refuses at plan an unpublished server whose readiness relay (the runner
// image, built on the engine from the provider binary) cannot be built for the engine, when
// the engine answers then: the apply would otherwise wait for nothing.
func (r *inferenceServerResource) checkRelayImage(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var publish types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("publish"), &publish)...)
	if publish.IsUnknown() || publish.IsNull() || publish.ValueBool() || r.provider == nil || r.provider.docker == nil {
		return
	}
	b, err := r.provider.docker.Backend()
	if err != nil {
		return // the apply says why
	}
	ctx, cancel := context.WithTimeout(ctx, deploy.CallTimeout(planEngineWait))
	defer cancel()
	d := &runner.Docker{Cli: b.Client(), Host: r.provider.docker.Host()}
	var imgErr *runner.ImageError
	if err := d.CheckEngine(ctx); errors.As(err, &imgErr) {
		resp.Diagnostics.AddAttributeError(path.Root("publish"), "Readiness relay cannot be built for this engine",
			fmt.Sprintf("publish = false checks readiness through relay containers of the runner image, built on the engine %s from the provider binary %s, which cannot run there: %s. "+
				"Set %s to the provider's linux_%s release binary, or publish = true", imgErr.Host, imgErr.Binary, imgErr.Why, runner.BinaryEnv, imgErr.Arch))
	}
}
