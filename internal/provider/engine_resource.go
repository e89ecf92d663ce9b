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

// engineResource is what the resources that launch an engine (llmserve_inference_server,
// llmserve_inference_deployment) share whatever runs the engine: the provider's connections.
type engineResource struct {
	provider *providerData
}

func (r *engineResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("expected *providerData, got %T; this is a provider bug, please report it", req.ProviderData))
		return
	}
	r.provider = data
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

// stringDefault fills an omitted attribute at plan from other values, so the plan shows what
// apply will use: fill returns the value, or false to leave the plan as it is (unknown until
// what it depends on is known).
type stringDefault struct {
	description string
	fill        func(ctx context.Context, req planmodifier.StringRequest, diags *diag.Diagnostics) (types.String, bool)
}

func (d stringDefault) Description(context.Context) string         { return d.description }
func (d stringDefault) MarkdownDescription(context.Context) string { return d.description }
func (d stringDefault) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if !req.ConfigValue.IsNull() {
		return
	}
	if v, ok := d.fill(ctx, req, &resp.Diagnostics); ok {
		resp.PlanValue = v
	}
}

// int64Default is stringDefault for a number.
type int64Default struct {
	description string
	fill        func(ctx context.Context, req planmodifier.Int64Request, diags *diag.Diagnostics) (types.Int64, bool)
}

func (d int64Default) Description(context.Context) string         { return d.description }
func (d int64Default) MarkdownDescription(context.Context) string { return d.description }
func (d int64Default) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if !req.ConfigValue.IsNull() {
		return
	}
	if v, ok := d.fill(ctx, req, &resp.Diagnostics); ok {
		resp.PlanValue = v
	}
}

// configString reads the configured value of a string attribute for a plan default.
func configString(ctx context.Context, config tfsdk.Config, name string, diags *diag.Diagnostics) types.String {
	var v types.String
	diags.Append(config.GetAttribute(ctx, path.Root(name), &v)...)
	return v
}
