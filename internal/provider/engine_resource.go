package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// Both resources that launch an engine are configured by the provider, check their
// configuration and plan, and can be imported.
var (
	_ engineResourceMethods = (*inferenceServerResource)(nil)
	_ engineResourceMethods = (*inferenceDeploymentResource)(nil)
)

type engineResourceMethods interface {
	resource.ResourceWithConfigure
	resource.ResourceWithImportState
	resource.ResourceWithValidateConfig
	resource.ResourceWithModifyPlan
}

// engineResource is what the resources that launch an engine (llmserve_inference_server,
// llmserve_inference_deployment) share whatever runs the engine: the provider's connections.
// Each CRUD call reads the same way: read the models, bound the operation by its timeout
// (engineSettings.operation), connect to the backend (connect), translate the model into the
// engine spec and the backend's placement, launch (the one step each backend does its own
// way), then record what the backend reports in state.
type engineResource struct {
	provider *providerData
}

// engineResourceModel is the model both engine resources embed: the engine settings, and the
// attributes both have under the same name, which each resource's schema describes for its
// platform (a container name or a Kubernetes name, a container's or a pod's /dev/shm).
type engineResourceModel struct {
	engineSettings

	ID          types.String `tfsdk:"id"`
	Name        types.String `tfsdk:"name"`
	ShmSizeMB   types.Int64  `tfsdk:"shm_size_mb"`
	Environment types.Map    `tfsdk:"environment"`
	Labels      types.Map    `tfsdk:"labels"`
}

// connect opens the provider's connection to the backend that runs the engine (open: the
// Docker Engine or the Kubernetes cluster) and reports a failure under summary, with hint
// after the error. A provider that was never configured is the bug it is; what names the
// configuration that is missing.
func connect[C any](p *providerData, diags *diag.Diagnostics, what, summary, hint string, open func(*providerData) (C, error)) C {
	var c C
	if p == nil {
		diags.AddError("Provider not configured", "the llmserve provider has no "+what+" configuration; this is a provider bug, please report it")
		return c
	}
	c, err := open(p)
	if err != nil {
		diags.AddError(summary, err.Error()+hint)
	}
	return c
}

func (r *engineResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if data := configuredData(req.ProviderData, &resp.Diagnostics); data != nil {
		r.provider = data
	}
}

// configuredData is what the provider's Configure handed every resource; nil before the
// provider is configured (validation runs first), and for anything else, with an error.
func configuredData(pd any, diags *diag.Diagnostics) *providerData {
	if pd == nil {
		return nil
	}
	data, ok := pd.(*providerData)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("Expected *providerData, got %T. This is a bug in the provider; please report it.", pd))
	}
	return data
}

// importID starts an import from id; Read fills everything else from the launch record.
func importID(ctx context.Context, id string, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
	// timeouts is an object the framework leaves null on import; give it its type.
	t, diags := resp.State.Schema.TypeAtPath(ctx, path.Root("timeouts"))
	resp.Diagnostics.Append(diags...)
	obj, ok := t.(attr.TypeWithAttributeTypes)
	if !ok {
		resp.Diagnostics.AddError("Cannot import", fmt.Sprintf("timeouts has type %T, not an object; this is a provider bug, please report it", t))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("timeouts"), timeouts.Value{Object: types.ObjectNull(obj.AttributeTypes())})...)
}

// planCommand shows a new server's launch command at plan, from the spec Create launches.
// A spec that does not validate is left to ValidateConfig, which reports it.
func planCommand(ctx context.Context, spec engine.Spec, specDiags diag.Diagnostics, plan *tfsdk.Plan) diag.Diagnostics {
	if specDiags.HasError() || len(spec.Validate()) > 0 {
		return nil
	}
	cmd, diags := types.ListValueFrom(ctx, types.StringType, spec.Command())
	diags.Append(plan.SetAttribute(ctx, path.Root("command"), cmd)...)
	return diags
}

// planDefault fills an omitted attribute at plan from other values, so the plan shows what
// apply will use: fill returns the value, or false to leave the plan as it is (unknown until
// what it depends on is known). One type serves strings and numbers (T is types.String or
// types.Int64); the framework calls the method of the attribute's kind.
type planDefault[T attr.Value] struct {
	description string
	fill        func(ctx context.Context, req defaultRequest, diags *diag.Diagnostics) (T, bool)
}

// defaultRequest is what a plan default reads: the framework's request, whatever its kind.
type defaultRequest struct {
	Config     tfsdk.Config
	Plan       tfsdk.Plan
	State      tfsdk.State
	StateValue attr.Value
}

func (d planDefault[T]) Description(context.Context) string         { return d.description }
func (d planDefault[T]) MarkdownDescription(context.Context) string { return d.description }

func (d planDefault[T]) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.ConfigValue.IsNull() {
		d.apply(ctx, defaultRequest{req.Config, req.Plan, req.State, req.StateValue}, &resp.Diagnostics, &resp.PlanValue)
	}
}

func (d planDefault[T]) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.ConfigValue.IsNull() {
		d.apply(ctx, defaultRequest{req.Config, req.Plan, req.State, req.StateValue}, &resp.Diagnostics, &resp.PlanValue)
	}
}

// apply sets *plan to the filled value; a default of another kind than the attribute is a
// schema mistake, reported rather than panicking.
func (d planDefault[T]) apply(ctx context.Context, req defaultRequest, diags *diag.Diagnostics, plan any) {
	v, ok := d.fill(ctx, req, diags)
	if !ok {
		return
	}
	switch p := plan.(type) {
	case *T:
		*p = v
	default:
		diags.AddError("Provider bug: plan default of the wrong kind", fmt.Sprintf("a %T default on a %T attribute; please report it", v, plan))
	}
}

// configString reads the configured value of a string attribute for a plan default.
func configString(ctx context.Context, config tfsdk.Config, name string, diags *diag.Diagnostics) types.String {
	var v types.String
	diags.Append(config.GetAttribute(ctx, path.Root(name), &v)...)
	return v
}
