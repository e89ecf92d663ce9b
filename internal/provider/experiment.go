package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// The experiment object mirrors the results document's "experiment" block key for key, so
// llmserve_inference_server's computed experiment can be passed to a benchmark as it is.

// experimentAttrTypes are read from the computed experiment's schema, so they are written once.
var (
	experimentAttrTypes      = objectAttrTypes(schema.SingleNestedAttribute{Attributes: inferenceServerExperimentAttributes()})
	speculativeModeAttrTypes = experimentAttrTypes["speculative_mode"].(types.ObjectType).AttrTypes
)

type experimentModel struct {
	ImageTag          types.String `tfsdk:"image_tag"`
	ImageDigest       types.String `tfsdk:"image_digest"`
	Model             types.String `tfsdk:"model"`
	Checkpoint        types.String `tfsdk:"checkpoint"`
	Hardware          types.String `tfsdk:"hardware"`
	Driver            types.String `tfsdk:"driver"`
	Kernel            types.String `tfsdk:"kernel"`
	TensorParallelism types.Int64  `tfsdk:"tensor_parallelism"`
	ContextLength     types.Int64  `tfsdk:"context_length"`
	PhysicalTokenPool types.Int64  `tfsdk:"physical_token_pool"`
	SpeculativeMode   types.Object `tfsdk:"speculative_mode"`
	Replicas          types.Int64  `tfsdk:"replicas"`
	Accelerator       types.String `tfsdk:"accelerator"`
}

type speculativeModeModel struct {
	Algorithm   types.String `tfsdk:"algorithm"`
	Steps       types.Int64  `tfsdk:"steps"`
	TopK        types.Int64  `tfsdk:"topk"`
	DraftTokens types.Int64  `tfsdk:"draft_tokens"`
}

func experimentSchemaAttributes() map[string]schema.Attribute {
	str := func(desc string) schema.Attribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: []validator.String{printableValidator{}}}
	}
	num := func(desc string) schema.Attribute {
		return schema.Int64Attribute{Optional: true, MarkdownDescription: desc}
	}
	return map[string]schema.Attribute{
		"image_tag":           str("Container image tag of the server."),
		"image_digest":        str("Container image digest (`sha256:...`)."),
		"model":               str("Model repository or path."),
		"checkpoint":          str("Model revision (commit)."),
		"hardware":            str("Accelerators, e.g. `4 x Intel Arc Pro B70, 32656 MiB each`."),
		"driver":              str("Accelerator driver version."),
		"kernel":              str("Host kernel version."),
		"tensor_parallelism":  num("Tensor parallel size."),
		"context_length":      num("Context length in tokens."),
		"physical_token_pool": num("KV cache token pool the server reports."),
		"replicas":            num("Engine replicas behind the endpoint (`llmserve_inference_deployment`); omit for one server."),
		"accelerator":         str("Accelerator family the engine was launched on (`cpu`, `cuda`, `xpu`, `vulkan`), as an engine resource's `experiment` records it. With `xpu` or `vulkan`, `trial.engine_warmup_requests` defaults to 16."),
		"speculative_mode": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "Speculative decoding settings; omit when the server decodes plainly.",
			Attributes: map[string]schema.Attribute{
				"algorithm":    str("e.g. `EAGLE/MTP`."),
				"steps":        num("Draft steps."),
				"topk":         num("Draft top-k."),
				"draft_tokens": num("Draft tokens per step."),
			},
		},
	}
}

// experimentFromObject converts the optional experiment object; nil when it is not set.
func experimentFromObject(ctx context.Context, obj types.Object) (*results.Experiment, diag.Diagnostics) {
	var diags diag.Diagnostics
	if obj.IsNull() || obj.IsUnknown() {
		return nil, diags
	}
	var m experimentModel
	diags.Append(obj.As(ctx, &m, basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true})...)
	if diags.HasError() {
		return nil, diags
	}
	exp := &results.Experiment{
		ImageTag:          m.ImageTag.ValueString(),
		ImageDigest:       m.ImageDigest.ValueString(),
		Model:             m.Model.ValueString(),
		Checkpoint:        m.Checkpoint.ValueString(),
		Hardware:          m.Hardware.ValueString(),
		Driver:            m.Driver.ValueString(),
		Kernel:            m.Kernel.ValueString(),
		TensorParallelism: int(m.TensorParallelism.ValueInt64()),
		ContextLength:     int(m.ContextLength.ValueInt64()),
		PhysicalTokenPool: intPointer(m.PhysicalTokenPool),
		Replicas:          int(m.Replicas.ValueInt64()),
		Accelerator:       m.Accelerator.ValueString(),
	}
	if !m.SpeculativeMode.IsNull() && !m.SpeculativeMode.IsUnknown() {
		var s speculativeModeModel
		diags.Append(m.SpeculativeMode.As(ctx, &s, basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true})...)
		exp.SpeculativeMode = &results.SpeculativeMode{
			Algorithm:   s.Algorithm.ValueString(),
			Steps:       int(s.Steps.ValueInt64()),
			TopK:        int(s.TopK.ValueInt64()),
			DraftTokens: int(s.DraftTokens.ValueInt64()),
		}
	}
	return exp, diags
}

// experimentValue is experimentFromObject's inverse: the computed experiment object.
func experimentValue(ctx context.Context, e results.Experiment) (types.Object, diag.Diagnostics) {
	spec := types.ObjectNull(speculativeModeAttrTypes)
	var diags diag.Diagnostics
	if e.SpeculativeMode != nil {
		var d diag.Diagnostics
		spec, d = types.ObjectValueFrom(ctx, speculativeModeAttrTypes, speculativeModeModel{
			Algorithm: types.StringValue(e.SpeculativeMode.Algorithm), Steps: types.Int64Value(int64(e.SpeculativeMode.Steps)),
			TopK: types.Int64Value(int64(e.SpeculativeMode.TopK)), DraftTokens: types.Int64Value(int64(e.SpeculativeMode.DraftTokens)),
		})
		diags.Append(d...)
	}
	obj, d := types.ObjectValueFrom(ctx, experimentAttrTypes, experimentModel{
		ImageTag: types.StringValue(e.ImageTag), ImageDigest: types.StringValue(e.ImageDigest), Model: types.StringValue(e.Model),
		Checkpoint: types.StringValue(e.Checkpoint), Hardware: types.StringValue(e.Hardware), Driver: types.StringValue(e.Driver),
		Kernel: types.StringValue(e.Kernel), TensorParallelism: types.Int64Value(int64(e.TensorParallelism)),
		ContextLength: types.Int64Value(int64(e.ContextLength)), PhysicalTokenPool: nullableIntPtr(e.PhysicalTokenPool),
		SpeculativeMode: spec, Replicas: types.Int64Value(int64(e.Replicas)), Accelerator: nullableString(e.Accelerator),
	})
	diags.Append(d...)
	return obj, diags
}

// intPointer is a number attribute as an optional count: nil when null or unknown.
func intPointer(v types.Int64) *int {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	i := int(v.ValueInt64())
	return &i
}

// nullableIntPtr is intPointer's inverse.
func nullableIntPtr(p *int) types.Int64 {
	if p == nil {
		return types.Int64Null()
	}
	return types.Int64Value(int64(*p))
}
