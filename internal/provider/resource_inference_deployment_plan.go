package provider

// How llmserve_inference_deployment checks its configuration and plans what apply will show,
// including the defaults it fills from other attributes.

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

func (r *inferenceDeploymentResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m inferenceDeploymentModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var spec engine.Spec
	if m.specKnown() {
		var diags diag.Diagnostics
		spec, diags = m.validateSpec(ctx, deploymentProblem)
		resp.Diagnostics.Append(diags...)
	}
	if m.placementKnown() {
		d, diags := m.deployment(ctx, spec)
		resp.Diagnostics.Append(diags...)
		resp.Diagnostics.Append(problemDiagnostics(d.Validate(spec), deploymentProblem, nil, true)...)
		// What Intel's runbook says fails after a valid launch starts, as the server warns.
		resp.Diagnostics.Append(problemDiagnostics(spec.LaunchWarnings(d.Env), deploymentProblem, nil, true)...)
	}
	resp.Diagnostics.Append(m.checkReadinessBounds()...)
	if !m.PodAccess.IsUnknown() {
		resp.Diagnostics.Append(problemDiagnostics(kubernetes.CheckAccess(m.access(), !m.APIKeyWO.IsNull()), deploymentProblem, nil, false)...)
	}
}

// ModifyPlan shows a new deployment's launch command at plan (from the function Create
// uses), and marks the endpoint unknown when a Service change moves it.
func (r *inferenceDeploymentResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	if req.State.Raw.IsNull() {
		var plan inferenceDeploymentModel
		resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
		if resp.Diagnostics.HasError() || !plan.specKnown() {
			return
		}
		spec, diags := plan.spec(ctx)
		resp.Diagnostics.Append(planCommand(ctx, spec, diags, &resp.Plan)...)
		return
	}
	var plan, state inferenceDeploymentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	changed := !plan.ServiceType.Equal(state.ServiceType) || !plan.ServicePort.Equal(state.ServicePort)
	// A NodePort endpoint names a node running a replica, which a rollout may move.
	if changed || (plan.ServiceType.ValueString() == "NodePort" && !plan.Replicas.Equal(state.Replicas)) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringUnknown())...)
	}
	// The experiment records the replica count; replica_endpoints lists the pods.
	if !plan.Replicas.Equal(state.Replicas) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("experiment"), types.ObjectUnknown(experimentAttrTypes))...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("replica_endpoints"), types.ListUnknown(types.StringType))...)
	}
}

// acceleratorResourceDefault fills an omitted accelerator_resource from accelerator, so the
// plan shows what each replica requests.
var acceleratorResourceDefault = planDefault[types.String]{
	description: "defaults from accelerator: cuda nvidia.com/gpu, xpu gpu.intel.com/i915, vulkan and cpu none; none with accelerator_claim",
	fill: func(ctx context.Context, req defaultRequest, diags *diag.Diagnostics) (types.String, bool) {
		accel := configString(ctx, req.Config, "accelerator", diags)
		var claim types.Object
		diags.Append(req.Config.GetAttribute(ctx, path.Root("accelerator_claim"), &claim)...)
		switch {
		case claim.IsUnknown():
			return types.String{}, false
		case !claim.IsNull():
			return types.StringValue(""), true // the claim asks for the devices instead
		case accel.IsUnknown():
			return types.String{}, false
		}
		return types.StringValue(kubernetes.DefaultAcceleratorResource(acceleratorOf(accel))), true
	},
}

// acceleratorCountDefault fills an omitted accelerator_count with tensor_parallel_size (one
// accelerator per tensor-parallel rank), or 0 when no accelerator resource is requested.
var acceleratorCountDefault = planDefault[types.Int64]{
	description: "defaults to tensor_parallel_size, or 0 without an accelerator resource",
	fill: func(ctx context.Context, req defaultRequest, diags *diag.Diagnostics) (types.Int64, bool) {
		res, accel := configString(ctx, req.Config, "accelerator_resource", diags), configString(ctx, req.Config, "accelerator", diags)
		var tp types.Int64
		var claim types.Object
		diags.Append(req.Config.GetAttribute(ctx, path.Root("tensor_parallel_size"), &tp)...)
		diags.Append(req.Config.GetAttribute(ctx, path.Root("accelerator_claim"), &claim)...)
		if res.IsUnknown() || accel.IsUnknown() || tp.IsUnknown() || claim.IsUnknown() {
			return types.Int64{}, false
		}
		name := res.ValueString()
		if res.IsNull() && claim.IsNull() {
			name = kubernetes.DefaultAcceleratorResource(acceleratorOf(accel))
		}
		return types.Int64Value(kubernetes.DefaultAcceleratorCount(name, tp.ValueInt64())), true
	},
}

// servicePortDefault fills an omitted service_port with the engine's port.
var servicePortDefault = planDefault[types.Int64]{
	description: "defaults to port",
	fill: func(ctx context.Context, req defaultRequest, diags *diag.Diagnostics) (types.Int64, bool) {
		var port types.Int64
		diags.Append(req.Config.GetAttribute(ctx, path.Root("port"), &port)...)
		name := configString(ctx, req.Config, "engine", diags)
		switch {
		case port.IsUnknown():
			return types.Int64{}, false
		case !port.IsNull():
			return port, true
		case !name.IsUnknown() && !name.IsNull():
			return types.Int64Value(int64(engine.DefaultPort(engine.Name(name.ValueString())))), true
		}
		return types.Int64{}, false
	},
}
