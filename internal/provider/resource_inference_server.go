package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
)

// NewInferenceServerResource is the llmserve_inference_server resource.
func NewInferenceServerResource() resource.Resource { return &inferenceServerResource{} }

type inferenceServerResource struct {
	engineResource
}

type inferenceServerModel struct {
	engineResourceModel

	ModelHostPath    types.String `tfsdk:"model_host_path"`
	GPUIDs           types.List   `tfsdk:"gpu_ids"`
	GroupAdd         types.List   `tfsdk:"group_add"`
	HostPort         types.Int64  `tfsdk:"host_port"`
	BindAddress      types.String `tfsdk:"bind_address"`
	NetworkMode      types.String `tfsdk:"network_mode"`
	Mounts           types.List   `tfsdk:"mounts"`
	RestartPolicy    types.String `tfsdk:"restart_policy"`
	StopGraceSeconds types.Int64  `tfsdk:"stop_grace_period_seconds"`
	Running          types.Bool   `tfsdk:"running"`
}

type mountModel struct {
	Type     types.String `tfsdk:"type"`
	Source   types.String `tfsdk:"source"`
	Target   types.String `tfsdk:"target"`
	ReadOnly types.Bool   `tfsdk:"read_only"`
}

var mountAttrTypes = objectAttrTypes(mountsAttribute())

func mountsAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true, PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
		MarkdownDescription: "Host paths or named volumes in the container, e.g. the Hugging Face cache.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"type":      schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("bind"), Validators: []validator.String{stringvalidator.OneOf("bind", "volume")}, MarkdownDescription: "`bind` (default) or `volume`."},
			"source":    schema.StringAttribute{Required: true, MarkdownDescription: "Host path or volume name."},
			"target":    schema.StringAttribute{Required: true, MarkdownDescription: "Path inside the container."},
			"read_only": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false), MarkdownDescription: "Mount read-only."},
		}}}
}

// containerNameRE is Docker's rule for container names.
var containerNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

const (
	defaultStopGrace = 30
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
		Attributes: withAttributes(engineSettingsAttributes(ctx), map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keepStr,
				MarkdownDescription: "Container id."},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(containerNameRE, "must be a valid container name: letters, digits, and _ . - after the first character")},
				MarkdownDescription: "Container name, unique on the engine host."},
			"model_host_path": schema.StringAttribute{Optional: true, PlanModifiers: replace, Validators: []validator.String{printableValidator{}},
				MarkdownDescription: "Host file or directory bind-mounted read-only at `model` (e.g. a GGUF file for `llamacpp`)."},
			"gpu_ids": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "The GPUs the server may use, each listed once; all of them when omitted. `cuda`: NVIDIA GPU indices or UUIDs (as `nvidia-smi -L` shows), passed as the device request. `xpu`: Level Zero device indices (`\"0\"`) or device.sub-device pairs (`\"0.1\"`), in the order `sycl-ls` or `xpu-smi discovery` number them, set as `ZE_AFFINITY_MASK` in the container (every `/dev/dri` node stays mapped; the Level Zero loader hides the others from SGLang and vLLM); at least `tensor_parallel_size` of them, and not together with `ZE_AFFINITY_MASK` in `environment`. Refused with `cpu`, which would ignore it."},
			"group_add": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "Supplementary groups, replacing the accelerator's defaults. Use numeric ids when the image lacks the host's group names."},
			"shm_size_mb": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Size of `/dev/shm` in MiB when IPC is private (`cpu`). Refused with `xpu` and `cuda`, which share the host's IPC namespace and its shared memory."},
			"host_port": schema.Int64Attribute{Optional: true, Computed: true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "Host port the engine is published on; the engine host picks a free one when omitted. Ignored with `network_mode = \"host\"`."},
			"bind_address": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("127.0.0.1"), PlanModifiers: replace,
				Validators:          []validator.String{ipAddressValidator{}},
				MarkdownDescription: "Host address the port is published on, as an IP literal (a host name such as `localhost` is refused: the engine host would publish on every address it resolves to). Default `127.0.0.1`; use `0.0.0.0` to serve other machines (and for a remote engine). With `network_mode = \"host\"` nothing is published and the engine itself listens on this address (`--host`)."},
			"network_mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("bridge"), PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.OneOf("bridge", "host")},
				MarkdownDescription: "`bridge` (default, port published) or `host` (the engine answers on `port` of the host)."},
			"environment": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Environment variables. Names must not be empty or contain `=`, spaces or control characters; values may hold tab and newline but no other control characters. Stored in state, so the secret names `HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, `VLLM_API_KEY` and `LLAMA_API_KEY` are refused: put secrets in `hub_token_wo` / `api_key_wo`."},
			"mounts": mountsAttribute(),
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Container labels. The provider adds `" + deploy.ManagedLabel + "` and `" + deploy.SpecLabel + "` (the launch record import reads); those two keys are refused."},
			"restart_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("no"),
				Validators:          []validator.String{stringvalidator.OneOf("no", "on-failure", "unless-stopped", "always")},
				MarkdownDescription: "Docker restart policy, changed in place. Default `no`, so a crash shows as drift instead of a silent restart loop."},
			"stop_grace_period_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultStopGrace),
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: "Seconds between SIGTERM and SIGKILL on stop and destroy. Default 30."},
			"running": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Whether the server should be running. A container stopped out of band reads back as `false`, so the plan shows the change and apply starts it again."},
		}),
	}
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
	st, info, err := deploy.Launch(ctx, b, c, ready)
	if err != nil {
		detail := err.Error()
		if !errors.Is(err, deploy.ErrContainerLeft) {
			detail += "\n\nThe container this apply created was removed; nothing is left on the engine host."
		}
		resp.Diagnostics.AddError("Inference server did not become ready", detail)
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
	resp.Diagnostics.Append(state.setStatus(ctx, rec.Spec, st)...)
	state.RestartPolicy = types.StringValue(orString(st.RestartPolicy, "no"))
	if state.Experiment.IsNull() && st.Running {
		// After an import: ask the running server for what create would have recorded.
		infoCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info := deploy.ReadServerInfo(infoCtx, st.Endpoint, deploy.Readiness{Engine: rec.Spec.Engine, Model: rec.Spec.RequestModel(), APIKey: st.APIKey.Reveal()})
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
	done, err := deploy.Restart(ctx, b, state.ID.ValueString(), state.inPlace(), plan.inPlace(), plan.readiness(spec, config.secrets()))
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

// ImportState takes a container name or id; Read fills everything else from the container's
// launch record.
func (r *inferenceServerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importID(ctx, req.ID, resp)
}
