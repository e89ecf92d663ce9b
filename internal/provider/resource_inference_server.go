package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

var (
	_ resource.Resource                   = (*inferenceServerResource)(nil)
	_ resource.ResourceWithConfigure      = (*inferenceServerResource)(nil)
	_ resource.ResourceWithImportState    = (*inferenceServerResource)(nil)
	_ resource.ResourceWithValidateConfig = (*inferenceServerResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*inferenceServerResource)(nil)
)

// NewInferenceServerResource is the llmserve_inference_server resource.
func NewInferenceServerResource() resource.Resource { return &inferenceServerResource{} }

type inferenceServerResource struct {
	docker *docker.Lazy
}

type inferenceServerModel struct {
	ID                 types.String   `tfsdk:"id"`
	Name               types.String   `tfsdk:"name"`
	Image              types.String   `tfsdk:"image"`
	Engine             types.String   `tfsdk:"engine"`
	Model              types.String   `tfsdk:"model"`
	ModelHostPath      types.String   `tfsdk:"model_host_path"`
	Revision           types.String   `tfsdk:"revision"`
	ServedModelName    types.String   `tfsdk:"served_model_name"`
	TensorParallelSize types.Int64    `tfsdk:"tensor_parallel_size"`
	ContextLength      types.Int64    `tfsdk:"context_length"`
	MaxRunningRequests types.Int64    `tfsdk:"max_running_requests"`
	MemFraction        types.Float64  `tfsdk:"mem_fraction"`
	Speculative        types.Object   `tfsdk:"speculative"`
	Accelerator        types.String   `tfsdk:"accelerator"`
	GPUIDs             types.List     `tfsdk:"gpu_ids"`
	GroupAdd           types.List     `tfsdk:"group_add"`
	ShmSizeMB          types.Int64    `tfsdk:"shm_size_mb"`
	Port               types.Int64    `tfsdk:"port"`
	HostPort           types.Int64    `tfsdk:"host_port"`
	BindAddress        types.String   `tfsdk:"bind_address"`
	NetworkMode        types.String   `tfsdk:"network_mode"`
	Environment        types.Map      `tfsdk:"environment"`
	Mounts             types.List     `tfsdk:"mounts"`
	Labels             types.Map      `tfsdk:"labels"`
	ExtraArgs          types.List     `tfsdk:"extra_args"`
	Entrypoint         types.List     `tfsdk:"entrypoint"`
	HubTokenWO         types.String   `tfsdk:"hub_token_wo"`
	APIKeyWO           types.String   `tfsdk:"api_key_wo"`
	SecretsVersion     types.String   `tfsdk:"secrets_version"`
	RestartPolicy      types.String   `tfsdk:"restart_policy"`
	StopGraceSeconds   types.Int64    `tfsdk:"stop_grace_period_seconds"`
	ReadinessTimeout   types.String   `tfsdk:"readiness_timeout"`
	Running            types.Bool     `tfsdk:"running"`
	Timeouts           timeouts.Value `tfsdk:"timeouts"`

	Endpoint      types.String `tfsdk:"endpoint"`
	ImageDigest   types.String `tfsdk:"image_digest"`
	Command       types.List   `tfsdk:"command"`
	ServerVersion types.String `tfsdk:"server_version"`
	Experiment    types.Object `tfsdk:"experiment"`
}

type speculativeModel struct {
	Algorithm   types.String `tfsdk:"algorithm"`
	Steps       types.Int64  `tfsdk:"steps"`
	TopK        types.Int64  `tfsdk:"topk"`
	DraftTokens types.Int64  `tfsdk:"draft_tokens"`
	DraftModel  types.String `tfsdk:"draft_model"`
}

var speculativeAttrTypes = map[string]attr.Type{
	"algorithm": types.StringType, "steps": types.Int64Type, "topk": types.Int64Type,
	"draft_tokens": types.Int64Type, "draft_model": types.StringType,
}

type mountModel struct {
	Type     types.String `tfsdk:"type"`
	Source   types.String `tfsdk:"source"`
	Target   types.String `tfsdk:"target"`
	ReadOnly types.Bool   `tfsdk:"read_only"`
}

var mountAttrTypes = map[string]attr.Type{
	"type": types.StringType, "source": types.StringType, "target": types.StringType, "read_only": types.BoolType,
}

// containerNameRE is Docker's rule for container names.
var containerNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

const (
	defaultReadinessTimeout = "30m"
	defaultStopGrace        = 30
	// metaReadiness and metaSecrets keep Terraform-only settings in the container's launch
	// record so an import restores them.
	metaReadiness = "readiness_timeout"
	metaSecrets   = "secrets_version"
)

func (r *inferenceServerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inference_server"
}

func (r *inferenceServerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceInt := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	keepStr := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One LLM inference server (SGLang, vLLM or llama.cpp) in a container on the provider's Docker Engine. " +
			"Create returns only once the server **generates**: the engine's health endpoint answers and a one-token completion succeeds. " +
			"If the container exits or restarts meanwhile, apply fails at once with its last log lines and the container is removed.\n\n" +
			"Drift: a container removed out of band is re-created by the next apply; a stopped one shows `running: false -> true` " +
			"and the next apply starts it again in place (and waits until it generates). Every setting of the container itself " +
			"forces a new container; `running`, `restart_policy`, `stop_grace_period_seconds`, `readiness_timeout` and `timeouts` change in place.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keepStr,
				MarkdownDescription: "Container id."},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(containerNameRE, "must be a valid container name: letters, digits, and _ . - after the first character")},
				MarkdownDescription: "Container name, unique on the engine host."},
			"image": schema.StringAttribute{Required: true, PlanModifiers: replace,
				MarkdownDescription: "Engine image, by tag or pinned `repo@sha256:...`. Pulled only when the engine host lacks it."},
			"engine": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.OneOf(enumStrings(deploy.Engines)...)},
				MarkdownDescription: "Inference engine: `sglang`, `vllm` or `llamacpp`. Decides the launch command, default port and readiness endpoint."},
			"model": schema.StringAttribute{Required: true, PlanModifiers: replace,
				MarkdownDescription: "Model the engine loads: a Hugging Face repository id or a path inside the container. For `llamacpp`, the absolute path of a `.gguf` file."},
			"model_host_path": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Host file or directory bind-mounted read-only at `model` (e.g. a GGUF file for `llamacpp`)."},
			"revision": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Model revision (commit, branch or tag) to pin."},
			"served_model_name": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Name clients send as `model`; defaults to the engine's own choice (the model path)."},
			"tensor_parallel_size": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1), PlanModifiers: replaceInt,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Tensor parallel size (GPUs per replica). Default 1."},
			"context_length": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
				MarkdownDescription: "Context length in tokens; the model's own when omitted. For `llamacpp` this is the total KV cache shared by all slots."},
			"max_running_requests": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
				MarkdownDescription: "Requests decoded together: SGLang `--max-running-requests`, vLLM `--max-num-seqs`, llama.cpp `--parallel` slots."},
			"mem_fraction": schema.Float64Attribute{Optional: true, PlanModifiers: []planmodifier.Float64{float64planmodifier.RequiresReplace()},
				MarkdownDescription: "Fraction of accelerator memory for weights and KV cache: SGLang `--mem-fraction-static`, vLLM `--gpu-memory-utilization`."},
			"speculative": schema.SingleNestedAttribute{Optional: true,
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				MarkdownDescription: "Speculative decoding. SGLang: `EAGLE`/`EAGLE3`/`NEXTN` with steps, topk and draft tokens (topk 1 needs draft_tokens = steps + 1). vLLM: method `eagle`/`eagle3`/`mtp`/`ngram`/`draft_model`, steps = speculative tokens. llama.cpp: `draft` with a draft GGUF.",
				Attributes: map[string]schema.Attribute{
					"algorithm":    schema.StringAttribute{Required: true, MarkdownDescription: "Algorithm or method, e.g. `EAGLE` (SGLang, also for MTP heads)."},
					"steps":        schema.Int64Attribute{Required: true, MarkdownDescription: "Draft steps per verification."},
					"topk":         schema.Int64Attribute{Optional: true, MarkdownDescription: "Branching per draft step (SGLang)."},
					"draft_tokens": schema.Int64Attribute{Optional: true, MarkdownDescription: "Tokens verified per step (SGLang)."},
					"draft_model":  schema.StringAttribute{Optional: true, MarkdownDescription: "Draft model repository or path, where the algorithm needs one."},
				}},
			"accelerator": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(deploy.CPU)), PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.OneOf(enumStrings(deploy.Accelerators)...)},
				MarkdownDescription: "`xpu` (Intel GPUs: maps `/dev/dri`, adds the `render` and `video` groups, host IPC), `cuda` (NVIDIA device request, host IPC) or `cpu` (default)."},
			"gpu_ids": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "NVIDIA GPU ids or UUIDs for `cuda`; all GPUs when omitted."},
			"group_add": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "Supplementary groups, replacing the accelerator's defaults. Use numeric ids when the image lacks the host's group names."},
			"shm_size_mb": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Size of `/dev/shm` in MiB when IPC is private (`cpu`); with host IPC the host's shared memory is used."},
			"port": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{enginePortDefault{}, int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "Port the engine listens on inside the container; the engine's default (SGLang 30000, vLLM 8000, llama.cpp 8080) when omitted."},
			"host_port": schema.Int64Attribute{Optional: true, Computed: true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "Host port the engine is published on; the engine host picks a free one when omitted. Ignored with `network_mode = \"host\"`."},
			"bind_address": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("127.0.0.1"), PlanModifiers: replace,
				MarkdownDescription: "Host address the port is published on. Default `127.0.0.1`; use `0.0.0.0` to serve other machines (and for a remote engine)."},
			"network_mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("bridge"), PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.OneOf("bridge", "host")},
				MarkdownDescription: "`bridge` (default, port published) or `host` (the engine answers on `port` of the host)."},
			"environment": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Environment variables. Stored in state: put secrets in `hub_token_wo` / `api_key_wo`."},
			"mounts": schema.ListNestedAttribute{Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "Host paths or named volumes in the container, e.g. the Hugging Face cache.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"type":      schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("bind"), Validators: []validator.String{stringvalidator.OneOf("bind", "volume")}, MarkdownDescription: "`bind` (default) or `volume`."},
					"source":    schema.StringAttribute{Required: true, MarkdownDescription: "Host path or volume name."},
					"target":    schema.StringAttribute{Required: true, MarkdownDescription: "Path inside the container."},
					"read_only": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false), MarkdownDescription: "Mount read-only."},
				}}},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Container labels. The provider adds `" + deploy.ManagedLabel + "` and `" + deploy.SpecLabel + "` (the launch record import reads)."},
			"extra_args": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "Engine arguments appended verbatim after the typed ones."},
			"entrypoint": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "Program that starts the engine, when the image installs it elsewhere than the engine's default (`python3 -m sglang.launch_server`, `python3 -m vllm.entrypoints.openai.api_server`, `llama-server`)."},
			"hub_token_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "Hugging Face token (as `HF_TOKEN`). Write-only: never stored in state or plan (Terraform >= 1.11). Bump `secrets_version` to apply a new one."},
			"api_key_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "API key the server demands as `Authorization: Bearer` (vLLM `VLLM_API_KEY`, llama.cpp `LLAMA_API_KEY`, SGLang `--api-key`, kept out of `command`). Write-only, never stored."},
			"secrets_version": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Any value; changing it re-creates the server so new write-only secrets take effect."},
			"restart_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("no"),
				Validators:          []validator.String{stringvalidator.OneOf("no", "on-failure", "unless-stopped", "always")},
				MarkdownDescription: "Docker restart policy, changed in place. Default `no`, so a crash shows as drift instead of a silent restart loop."},
			"stop_grace_period_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultStopGrace),
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: "Seconds between SIGTERM and SIGKILL on stop and destroy. Default 30."},
			"readiness_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultReadinessTimeout),
				Validators:          []validator.String{durationValidator{}},
				MarkdownDescription: "How long to wait for the server to generate (download and load included), as a Go duration. Default `30m`. The `timeouts.create` bound applies too."},
			"running": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Whether the server should be running. A container stopped out of band reads back as `false`, so the plan shows the change and apply starts it again."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),

			"endpoint": schema.StringAttribute{Computed: true, PlanModifiers: keepStr,
				MarkdownDescription: "Base URL of the OpenAI-compatible API (`http://host:port`), the `endpoint` a `llmserve_capacity_benchmark` takes."},
			"image_digest": schema.StringAttribute{Computed: true, PlanModifiers: keepStr,
				MarkdownDescription: "Registry digest of the running image, or its local image id when it was built or loaded on the host."},
			"command": schema.ListAttribute{ElementType: types.StringType, Computed: true,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "The exact engine command (entrypoint and arguments), without write-only secrets."},
			"server_version": schema.StringAttribute{Computed: true, PlanModifiers: keepStr,
				MarkdownDescription: "Version the server reports, where it reports one."},
			"experiment": schema.SingleNestedAttribute{Computed: true,
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "The deployment in the shape of a results document's `experiment` block (image, model, checkpoint, parallelism, context, the token pool the server reports, speculative mode), for a benchmark to carry into its results.",
				Attributes:          inferenceServerExperimentAttributes()},
		},
	}
}

func inferenceServerExperimentAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"image_tag":           str("Image reference as configured."),
		"image_digest":        str("Image digest."),
		"model":               str("Model repository or path."),
		"checkpoint":          str("Model revision."),
		"hardware":            str("Accelerator family (`xpu`, `cuda`, `cpu`); the provider cannot name the exact device."),
		"driver":              str("Accelerator driver version; empty, the engine host does not report it."),
		"kernel":              str("Kernel of the engine host."),
		"tensor_parallelism":  num("Tensor parallel size."),
		"context_length":      num("Context length the server reports, else the configured one."),
		"physical_token_pool": num("KV cache token pool the server reports (SGLang `max_total_num_tokens`); 0 when it reports none."),
		"speculative_mode": schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "Speculative decoding; null when off.",
			Attributes: map[string]schema.Attribute{
				"algorithm": str("Algorithm."), "steps": num("Steps."), "topk": num("Top-k."), "draft_tokens": num("Draft tokens."),
			}},
	}
}

func (r *inferenceServerResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("expected *providerData, got %T; this is a provider bug, please report it", req.ProviderData))
		return
	}
	r.docker = data.docker
}

func (r *inferenceServerResource) backend() (*docker.Backend, diag.Diagnostics) {
	var diags diag.Diagnostics
	if r.docker == nil {
		diags.AddError("Provider not configured", "the llmserve provider has no Docker Engine configuration; this is a provider bug, please report it")
		return nil, diags
	}
	b, err := r.docker.Backend()
	if err != nil {
		diags.AddError("Cannot use the Docker Engine", err.Error())
	}
	return b, diags
}

// ValidateConfig checks the engine's constraints at plan time, naming the attribute to fix.
// Values not known yet are checked at apply, when they are.
func (r *inferenceServerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m inferenceServerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !m.specKnown() {
		return
	}
	spec, diags := m.spec(ctx)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	for _, p := range spec.Validate() {
		resp.Diagnostics.AddAttributeError(problemPath(p.Field), "Invalid "+string(spec.Engine)+" setting", p.Error())
	}
	if !m.ModelHostPath.IsNull() && !strings.HasPrefix(m.Model.ValueString(), "/") {
		resp.Diagnostics.AddAttributeError(path.Root("model"), "model must be a container path", "model_host_path is mounted at model, so model must be an absolute path inside the container")
	}
	if m.NetworkMode.ValueString() == "host" && !m.HostPort.IsNull() && !m.HostPort.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("host_port"), "host_port does not apply with host networking",
			"With network_mode = \"host\" the engine listens on the host at port; remove host_port and set port instead.")
	}
}

func (m inferenceServerModel) specKnown() bool {
	for _, v := range []attr.Value{m.Engine, m.Model, m.Revision, m.ServedModelName, m.TensorParallelSize, m.ContextLength,
		m.MaxRunningRequests, m.MemFraction, m.Speculative, m.Accelerator, m.Port, m.ExtraArgs, m.Entrypoint, m.ModelHostPath} {
		if v.IsUnknown() {
			return false
		}
	}
	return true
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
		r.warnLoopbackOnRemoteHost(ctx, req, resp)
		return
	}
	var plan, state, config inferenceServerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Running.ValueBool() && !state.Running.ValueBool() && config.HostPort.IsNull() && plan.NetworkMode.ValueString() != "host" {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("host_port"), types.Int64Unknown())...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringUnknown())...)
	}
}

// warnLoopbackOnRemoteHost flags a port published on a remote engine host's loopback: this
// machine cannot reach it, so readiness would wait out readiness_timeout.
func (r *inferenceServerResource) warnLoopbackOnRemoteHost(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.docker == nil {
		return
	}
	u, err := url.Parse(r.docker.Host())
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "ssh") {
		return
	}
	if h := u.Hostname(); h == "localhost" || net.ParseIP(h).IsLoopback() {
		return
	}
	var bind, network types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("bind_address"), &bind)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("network_mode"), &network)...)
	if network.ValueString() == "host" || bind.IsUnknown() || !net.ParseIP(bind.ValueString()).IsLoopback() {
		return
	}
	resp.Diagnostics.AddAttributeWarning(path.Root("bind_address"), "Endpoint unreachable from this machine",
		fmt.Sprintf("The engine host %s is remote, and bind_address %s publishes the port only on its loopback, so this machine (and a benchmark run from it) cannot reach the server; readiness would wait out readiness_timeout. Set bind_address = \"0.0.0.0\" (or the host's address) and restrict access with a firewall.", u.Hostname(), bind.ValueString()))
}

func problemPath(field string) path.Path {
	parts := strings.Split(field, ".")
	p := path.Root(parts[0])
	for _, n := range parts[1:] {
		p = p.AtName(n)
	}
	return p
}

func (r *inferenceServerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config inferenceServerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, 40*time.Minute)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, diags := r.backend()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := plan.spec(ctx)
	resp.Diagnostics.Append(diags...)
	placement, diags := plan.placement(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if problems := spec.Validate(); len(problems) > 0 {
		for _, p := range problems {
			resp.Diagnostics.AddAttributeError(problemPath(p.Field), "Invalid "+string(spec.Engine)+" setting", p.Error())
		}
		return
	}
	// Write-only values exist only in the configuration, never in the plan.
	secrets := deploy.Secrets{HubToken: config.HubTokenWO.ValueString(), APIKey: config.APIKeyWO.ValueString()}
	c, err := spec.Container(placement, secrets)
	if err != nil {
		resp.Diagnostics.AddError("Invalid inference server", err.Error())
		return
	}
	ready := plan.readiness(spec, secrets)
	st, info, err := deploy.Launch(ctx, b, c, ready)
	if err != nil {
		detail := err.Error()
		if !errors.Is(err, deploy.ErrContainerLeft) {
			detail += "\n\nThe container this apply created was removed; nothing is left on the engine host."
		}
		resp.Diagnostics.AddError("Inference server did not become ready", detail)
		return
	}
	kernel, _ := b.KernelVersion(ctx) // recorded for results; a missing kernel is not a failure
	resp.Diagnostics.Append(plan.setStatus(ctx, spec, st)...)
	resp.Diagnostics.Append(plan.setExperiment(ctx, spec, st, info, kernel)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *inferenceServerResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state inferenceServerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	b, diags := r.backend()
	resp.Diagnostics.Append(diags...)
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
	rec, err := deploy.ParseRecord(st.Labels[deploy.SpecLabel])
	if err != nil {
		resp.Diagnostics.AddError("Container was not created by llmserve", err.Error())
		return
	}
	imported := state.Engine.IsNull()
	if imported {
		resp.Diagnostics.Append(state.fromRecord(ctx, rec)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	resp.Diagnostics.Append(state.setStatus(ctx, rec.Spec, st)...)
	state.RestartPolicy = types.StringValue(orString(st.RestartPolicy, "no"))
	if state.Experiment.IsNull() && st.Running {
		// After an import: ask the running server for what create would have recorded.
		infoCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info := deploy.ReadServerInfo(infoCtx, st.Endpoint, deploy.Readiness{Engine: rec.Spec.Engine})
		cancel()
		kernel, _ := b.KernelVersion(ctx)
		resp.Diagnostics.Append(state.setExperiment(ctx, rec.Spec, st, info, kernel)...)
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
	timeout, diags := plan.Timeouts.Update(ctx, 40*time.Minute)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, diags := r.backend()
	resp.Diagnostics.Append(diags...)
	spec, diags := plan.spec(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	if !plan.RestartPolicy.Equal(state.RestartPolicy) {
		if err := b.SetRestartPolicy(ctx, id, plan.RestartPolicy.ValueString()); err != nil {
			resp.Diagnostics.AddError("Cannot change restart policy", err.Error())
			return
		}
	}
	grace := time.Duration(plan.StopGraceSeconds.ValueInt64()) * time.Second
	switch want, is := plan.Running.ValueBool(), state.Running.ValueBool(); {
	case want && !is:
		secrets := deploy.Secrets{HubToken: config.HubTokenWO.ValueString(), APIKey: config.APIKeyWO.ValueString()}
		if _, _, err := deploy.StartAndWait(ctx, b, id, plan.readiness(spec, secrets)); err != nil {
			// Stop what did not become ready, so state (still stopped) tells the truth and the
			// next plan offers the restart again.
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+time.Minute)
			defer cancel()
			detail := "\n\nThe container was stopped again; fix the cause and apply again, or taint it to replace it."
			if serr := b.Stop(stopCtx, id, grace); serr != nil {
				detail = fmt.Sprintf("\n\nStopping it again also failed (%v); it may still be running, not ready.", serr)
			}
			state.RestartPolicy, state.StopGraceSeconds = plan.RestartPolicy, plan.StopGraceSeconds
			state.ReadinessTimeout, state.Timeouts = plan.ReadinessTimeout, plan.Timeouts
			resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
			resp.Diagnostics.AddError("Inference server did not become ready after restart", err.Error()+detail)
			return
		}
	case !want && is:
		if err := b.Stop(ctx, id, grace); err != nil {
			resp.Diagnostics.AddError("Cannot stop inference server", err.Error())
			return
		}
	}
	st, err := b.Inspect(ctx, id)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read inference server after update", err.Error())
		return
	}
	resp.Diagnostics.Append(plan.setStatus(ctx, spec, st)...)
	// Server-reported values do not change with in-place settings.
	plan.Experiment, plan.ServerVersion = state.Experiment, state.ServerVersion
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *inferenceServerResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state inferenceServerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, 10*time.Minute)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, diags := r.backend()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	grace := time.Duration(state.StopGraceSeconds.ValueInt64()) * time.Second
	if err := b.Remove(ctx, state.ID.ValueString(), grace); err != nil {
		resp.Diagnostics.AddError("Cannot remove inference server", err.Error())
	}
}

// ImportState takes a container name or id; Read fills everything else from the container's
// launch record.
func (r *inferenceServerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	// timeouts is an object the framework leaves null on import; give it its type.
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("timeouts"), timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
		"create": types.StringType, "update": types.StringType, "delete": types.StringType,
	})})...)
}

// spec translates the engine settings. Callers make sure the values are known.
func (m inferenceServerModel) spec(ctx context.Context) (deploy.Spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := deploy.Spec{
		Engine:             deploy.Engine(m.Engine.ValueString()),
		Model:              m.Model.ValueString(),
		Revision:           m.Revision.ValueString(),
		ServedModelName:    m.ServedModelName.ValueString(),
		TensorParallel:     int(m.TensorParallelSize.ValueInt64()),
		ContextLength:      int(m.ContextLength.ValueInt64()),
		MaxRunningRequests: int(m.MaxRunningRequests.ValueInt64()),
		MemFraction:        m.MemFraction.ValueFloat64(),
		Accelerator:        deploy.Accelerator(orString(m.Accelerator.ValueString(), string(deploy.CPU))),
		Port:               int(m.Port.ValueInt64()),
	}
	if m.TensorParallelSize.IsNull() {
		s.TensorParallel = 1
	}
	if m.Port.IsNull() || m.Port.IsUnknown() {
		s.Port = deploy.DefaultPort(s.Engine)
	}
	diags.Append(m.ExtraArgs.ElementsAs(ctx, &s.ExtraArgs, false)...)
	diags.Append(m.Entrypoint.ElementsAs(ctx, &s.Entrypoint, false)...)
	if !m.Speculative.IsNull() {
		var sp speculativeModel
		diags.Append(m.Speculative.As(ctx, &sp, basetypes.ObjectAsOptions{})...)
		s.Speculative = &deploy.Speculative{
			Algorithm: sp.Algorithm.ValueString(), Steps: int(sp.Steps.ValueInt64()), TopK: int(sp.TopK.ValueInt64()),
			DraftTokens: int(sp.DraftTokens.ValueInt64()), DraftModel: sp.DraftModel.ValueString(),
		}
	}
	return s, diags
}

func (m inferenceServerModel) placement(ctx context.Context) (deploy.Placement, diag.Diagnostics) {
	var diags diag.Diagnostics
	p := deploy.Placement{
		Name:               m.Name.ValueString(),
		Image:              m.Image.ValueString(),
		ModelHostPath:      m.ModelHostPath.ValueString(),
		HostPort:           int(m.HostPort.ValueInt64()),
		BindAddress:        m.BindAddress.ValueString(),
		HostNetwork:        m.NetworkMode.ValueString() == "host",
		ShmSizeBytes:       m.ShmSizeMB.ValueInt64() << 20,
		RestartPolicy:      m.RestartPolicy.ValueString(),
		StopTimeoutSeconds: int(m.StopGraceSeconds.ValueInt64()),
		Meta:               map[string]string{metaReadiness: m.ReadinessTimeout.ValueString()},
	}
	if !m.SecretsVersion.IsNull() {
		p.Meta[metaSecrets] = m.SecretsVersion.ValueString()
	}
	diags.Append(m.Environment.ElementsAs(ctx, &p.Env, false)...)
	diags.Append(m.Labels.ElementsAs(ctx, &p.Labels, false)...)
	diags.Append(m.GroupAdd.ElementsAs(ctx, &p.GroupAdd, false)...)
	diags.Append(m.GPUIDs.ElementsAs(ctx, &p.GPUIDs, false)...)
	var mounts []mountModel
	diags.Append(m.Mounts.ElementsAs(ctx, &mounts, false)...)
	for _, mm := range mounts {
		p.Mounts = append(p.Mounts, deploy.Mount{Type: mm.Type.ValueString(), Source: mm.Source.ValueString(), Target: mm.Target.ValueString(), ReadOnly: mm.ReadOnly.ValueBool()})
	}
	return p, diags
}

func (m inferenceServerModel) readiness(spec deploy.Spec, sec deploy.Secrets) deploy.Readiness {
	d, _ := time.ParseDuration(m.ReadinessTimeout.ValueString()) // validated at plan time
	return deploy.Readiness{Engine: spec.Engine, Model: spec.RequestModel(), APIKey: sec.APIKey, Timeout: d,
		Redact: []string{sec.APIKey, sec.HubToken}}
}

// setStatus copies what the engine host reports; these are the values that drift.
func (m *inferenceServerModel) setStatus(ctx context.Context, spec deploy.Spec, st deploy.Status) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(st.ID)
	m.Running = types.BoolValue(st.Running)
	m.ImageDigest = types.StringValue(st.ImageDigest)
	if st.HostPort != 0 || m.HostPort.IsUnknown() {
		m.HostPort = types.Int64Value(int64(st.HostPort))
	}
	// A stopped container has no published port; keep the last endpoint so references to it
	// do not churn while the plan restarts the server.
	if st.Endpoint != "" || m.Endpoint.IsUnknown() || m.Endpoint.IsNull() {
		m.Endpoint = types.StringValue(st.Endpoint)
	}
	cmd, d := types.ListValueFrom(ctx, types.StringType, spec.Command())
	diags.Append(d...)
	m.Command = cmd
	return diags
}

func (m *inferenceServerModel) setExperiment(ctx context.Context, spec deploy.Spec, st deploy.Status, info deploy.ServerInfo, kernel string) diag.Diagnostics {
	exp := results.Experiment{
		ImageTag: m.Image.ValueString(), ImageDigest: st.ImageDigest, Model: spec.Model, Checkpoint: spec.Revision,
		Hardware: string(spec.Accelerator), Kernel: kernel, TensorParallelism: spec.TensorParallel,
		ContextLength: spec.ContextLength, PhysicalTokenPool: info.TokenPool,
	}
	if info.ContextLength != 0 {
		exp.ContextLength = info.ContextLength
	}
	if sp := spec.Speculative; sp != nil {
		exp.SpeculativeMode = &results.SpeculativeMode{Algorithm: sp.Algorithm, Steps: sp.Steps, TopK: sp.TopK, DraftTokens: sp.DraftTokens}
	}
	m.ServerVersion = types.StringValue(info.Version)
	obj, diags := experimentValue(ctx, exp)
	m.Experiment = obj
	return diags
}

// fromRecord fills the configuration of an imported container from its launch record,
// writing null where the record holds the zero value so an unset attribute stays unset.
func (m *inferenceServerModel) fromRecord(ctx context.Context, rec deploy.Record) diag.Diagnostics {
	var diags diag.Diagnostics
	s, p := rec.Spec, rec.Placement
	str := func(v string) types.String {
		if v == "" {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	num := func(v int) types.Int64 {
		if v == 0 {
			return types.Int64Null()
		}
		return types.Int64Value(int64(v))
	}
	list := func(vs []string) types.List {
		if len(vs) == 0 {
			return types.ListNull(types.StringType)
		}
		l, d := types.ListValueFrom(ctx, types.StringType, vs)
		diags.Append(d...)
		return l
	}
	mp := func(vs map[string]string) types.Map {
		if len(vs) == 0 {
			return types.MapNull(types.StringType)
		}
		v, d := types.MapValueFrom(ctx, types.StringType, vs)
		diags.Append(d...)
		return v
	}
	m.Name, m.Image, m.Engine, m.Model = types.StringValue(p.Name), types.StringValue(p.Image), types.StringValue(string(s.Engine)), types.StringValue(s.Model)
	m.ModelHostPath, m.Revision, m.ServedModelName = str(p.ModelHostPath), str(s.Revision), str(s.ServedModelName)
	m.TensorParallelSize, m.ContextLength, m.MaxRunningRequests = types.Int64Value(int64(s.TensorParallel)), num(s.ContextLength), num(s.MaxRunningRequests)
	m.MemFraction = types.Float64Null()
	if s.MemFraction != 0 {
		m.MemFraction = types.Float64Value(s.MemFraction)
	}
	m.Speculative = types.ObjectNull(speculativeAttrTypes)
	if sp := s.Speculative; sp != nil {
		v, d := types.ObjectValueFrom(ctx, speculativeAttrTypes, speculativeModel{
			Algorithm: types.StringValue(sp.Algorithm), Steps: types.Int64Value(int64(sp.Steps)), TopK: num(sp.TopK),
			DraftTokens: num(sp.DraftTokens), DraftModel: str(sp.DraftModel),
		})
		diags.Append(d...)
		m.Speculative = v
	}
	m.Accelerator, m.Port = types.StringValue(string(s.Accelerator)), types.Int64Value(int64(s.Port))
	m.GPUIDs, m.GroupAdd, m.ExtraArgs, m.Entrypoint = list(p.GPUIDs), list(p.GroupAdd), list(s.ExtraArgs), list(s.Entrypoint)
	m.ShmSizeMB = num(int(p.ShmSizeBytes >> 20))
	m.BindAddress = types.StringValue(orString(p.BindAddress, "127.0.0.1"))
	m.NetworkMode = types.StringValue("bridge")
	if p.HostNetwork {
		m.NetworkMode = types.StringValue("host")
	}
	m.Environment, m.Labels = mp(p.Env), mp(p.Labels)
	m.Mounts = types.ListNull(types.ObjectType{AttrTypes: mountAttrTypes})
	if len(p.Mounts) > 0 {
		var mounts []mountModel
		for _, mt := range p.Mounts {
			mounts = append(mounts, mountModel{Type: types.StringValue(mt.Type), Source: types.StringValue(mt.Source), Target: types.StringValue(mt.Target), ReadOnly: types.BoolValue(mt.ReadOnly)})
		}
		v, d := types.ListValueFrom(ctx, types.ObjectType{AttrTypes: mountAttrTypes}, mounts)
		diags.Append(d...)
		m.Mounts = v
	}
	m.HubTokenWO, m.APIKeyWO = types.StringNull(), types.StringNull()
	m.SecretsVersion = str(p.Meta[metaSecrets])
	m.StopGraceSeconds = types.Int64Value(int64(p.StopTimeoutSeconds))
	m.ReadinessTimeout = types.StringValue(orString(p.Meta[metaReadiness], defaultReadinessTimeout))
	m.Experiment = types.ObjectNull(experimentAttrTypes)
	m.ServerVersion = types.StringNull()
	return diags
}

func orString(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func enumStrings[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// enginePortDefault fills an omitted port with the engine's own default, so the plan shows
// the real port and switching engines does not keep the old engine's port.
type enginePortDefault struct{}

func (enginePortDefault) Description(context.Context) string {
	return "defaults to the engine's port: sglang 30000, vllm 8000, llamacpp 8080"
}
func (d enginePortDefault) MarkdownDescription(ctx context.Context) string { return d.Description(ctx) }
func (enginePortDefault) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var engine types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("engine"), &engine)...)
	if engine.IsNull() || engine.IsUnknown() {
		return
	}
	resp.PlanValue = types.Int64Value(int64(deploy.DefaultPort(deploy.Engine(engine.ValueString()))))
}

// durationValidator accepts Go durations ("90s", "30m").
type durationValidator struct{}

func (durationValidator) Description(context.Context) string {
	return "a positive Go duration such as 90s or 30m"
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if d, err := time.ParseDuration(req.ConfigValue.ValueString()); err != nil || d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			"must be a positive Go duration such as "+strconv.Quote("90s")+" or "+strconv.Quote("30m")+", got "+strconv.Quote(req.ConfigValue.ValueString()))
	}
}
