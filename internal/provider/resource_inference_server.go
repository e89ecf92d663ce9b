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
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
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
	docker *docker.Connection
}

type inferenceServerModel struct {
	engineSettings

	ID               types.String   `tfsdk:"id"`
	Name             types.String   `tfsdk:"name"`
	ModelHostPath    types.String   `tfsdk:"model_host_path"`
	GPUIDs           types.List     `tfsdk:"gpu_ids"`
	GroupAdd         types.List     `tfsdk:"group_add"`
	ShmSizeMB        types.Int64    `tfsdk:"shm_size_mb"`
	HostPort         types.Int64    `tfsdk:"host_port"`
	BindAddress      types.String   `tfsdk:"bind_address"`
	NetworkMode      types.String   `tfsdk:"network_mode"`
	Environment      types.Map      `tfsdk:"environment"`
	Mounts           types.List     `tfsdk:"mounts"`
	Labels           types.Map      `tfsdk:"labels"`
	RestartPolicy    types.String   `tfsdk:"restart_policy"`
	StopGraceSeconds types.Int64    `tfsdk:"stop_grace_period_seconds"`
	Running          types.Bool     `tfsdk:"running"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
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
		Attributes: withAttributes(engineSettingsAttributes(), map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keepStr,
				MarkdownDescription: "Container id."},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(containerNameRE, "must be a valid container name: letters, digits, and _ . - after the first character")},
				MarkdownDescription: "Container name, unique on the engine host."},
			"model_host_path": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Host file or directory bind-mounted read-only at `model` (e.g. a GGUF file for `llamacpp`)."},
			"gpu_ids": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "NVIDIA GPU ids or UUIDs for `cuda`, each listed once; all GPUs when omitted. Refused with other accelerators, which would ignore it."},
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
				MarkdownDescription: "Container labels. The provider adds `" + deploy.ManagedLabel + "` and `" + deploy.SpecLabel + "` (the launch record import reads); those two keys are refused."},
			"restart_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("no"),
				Validators:          []validator.String{stringvalidator.OneOf("no", "on-failure", "unless-stopped", "always")},
				MarkdownDescription: "Docker restart policy, changed in place. Default `no`, so a crash shows as drift instead of a silent restart loop."},
			"stop_grace_period_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultStopGrace),
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: "Seconds between SIGTERM and SIGKILL on stop and destroy. Default 30."},
			"running": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Whether the server should be running. A container stopped out of band reads back as `false`, so the plan shows the change and apply starts it again."},
			"timeouts": positiveTimeouts(ctx, timeouts.Opts{
				Create: true, Update: true, Delete: true,
				CreateDescription: "How long creating the server may take, pull, start and `readiness_timeout` included, as a Go duration. Default `40m`.",
				UpdateDescription: "How long an in-place change (a restart included) may take, as a Go duration. Default `40m`.",
				DeleteDescription: "How long stopping and removing the container may take, as a Go duration. Default `10m`.",
			}),
		}),
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
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(readinessBeyondTimeouts(ctx, m.ReadinessTimeout, map[string]time.Duration{
		"create": configuredTimeout(m.Timeouts, "create", defaultServerCreateTimeout),
		"update": configuredTimeout(m.Timeouts, "update", defaultServerUpdateTimeout),
	})...)
	if !m.specKnown() {
		return
	}
	spec, diags := m.validateSpec(ctx)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	if m.placementKnown() {
		placement, diags := m.placement(ctx)
		resp.Diagnostics.Append(diags...)
		for _, p := range placement.Validate(spec) {
			resp.Diagnostics.AddAttributeError(problemPath(p.Field), "Invalid inference server setting", p.Error())
		}
	}
	if m.NetworkMode.ValueString() == "host" && !m.HostPort.IsNull() && !m.HostPort.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("host_port"), "host_port does not apply with host networking",
			"With network_mode = \"host\" the engine listens on the host at port; remove host_port and set port instead.")
	}
}

// launchSpec is the engine settings' launch spec as this resource runs it: with host
// networking no port publishing restricts the engine, so it listens on bind_address itself
// (state saying 127.0.0.1 while the engine answered on every interface would be a lie).
func (m inferenceServerModel) launchSpec(ctx context.Context) (engine.Spec, diag.Diagnostics) {
	spec, diags := m.spec(ctx)
	if m.NetworkMode.ValueString() == "host" && !m.BindAddress.IsUnknown() {
		spec.ListenAddress = m.BindAddress.ValueString()
	}
	return spec, diags
}

// placementKnown says whether every container setting is known, including each element of
// its lists and maps.
func (m inferenceServerModel) placementKnown() bool {
	for _, v := range []attr.Value{m.Name, m.Image, m.ModelHostPath, m.HostPort, m.BindAddress, m.NetworkMode, m.ShmSizeMB,
		m.RestartPolicy, m.StopGraceSeconds, m.ReadinessTimeout, m.SecretsVersion, m.Environment, m.Labels, m.GroupAdd, m.GPUIDs, m.Mounts} {
		if !fullyKnown(v) {
			return false
		}
	}
	return true
}

// fullyKnown is false when v or anything inside it is unknown.
func fullyKnown(v attr.Value) bool {
	if v.IsUnknown() {
		return false
	}
	var elems []attr.Value
	switch c := v.(type) {
	case types.List:
		elems = c.Elements()
	case types.Map:
		for _, e := range c.Elements() {
			elems = append(elems, e)
		}
	case types.Object:
		for _, e := range c.Attributes() {
			elems = append(elems, e)
		}
	}
	for _, e := range elems {
		if !fullyKnown(e) {
			return false
		}
	}
	return true
}

func (m inferenceServerModel) specKnown() bool {
	return m.engineSettings.specKnown() && !m.ModelHostPath.IsUnknown()
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
	if plan.Running.ValueBool() && !state.Running.ValueBool() && config.HostPort.IsNull() && plan.NetworkMode.ValueString() != "host" {
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
	if diags.HasError() || len(spec.Validate()) > 0 {
		return // ValidateConfig reports it
	}
	resp.Diagnostics.Append(plan.setCommand(ctx, spec)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("command"), plan.Command)...)

	if r.docker == nil || plan.BindAddress.IsUnknown() || plan.NetworkMode.IsUnknown() {
		return
	}
	bind, port := plan.BindAddress.ValueString(), plan.HostPort
	if plan.NetworkMode.ValueString() == "host" {
		bind, port = "", types.Int64Value(int64(spec.Port))
	}
	if port.IsNull() || port.IsUnknown() {
		return // the engine host picks a free port at start
	}
	if endpoint, ok := r.docker.Endpoint(bind, int(port.ValueInt64())); ok {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringValue(endpoint))...)
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
	var bind types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("bind_address"), &bind)...)
	// With host networking the engine itself listens on bind_address, so the same applies.
	if bind.IsUnknown() || !net.ParseIP(bind.ValueString()).IsLoopback() {
		return
	}
	resp.Diagnostics.AddAttributeWarning(path.Root("bind_address"), "Endpoint unreachable from this machine",
		fmt.Sprintf("The engine host %s is remote, and bind_address %s serves only on its loopback, so this machine (and a benchmark run from it) cannot reach the server; readiness would wait out readiness_timeout. Set bind_address = \"0.0.0.0\" (or the host's address) and restrict access with a firewall.", u.Hostname(), bind.ValueString()))
}

// problemPath turns a domain Problem.Field ("speculative.steps", "mounts[1].target",
// `environment["HF_TOKEN"]`) into the attribute path the diagnostic points at.
func problemPath(field string) path.Path {
	var p path.Path
	first := true
	for field != "" {
		var step string
		switch {
		case strings.HasPrefix(field, "["):
			end := strings.Index(field, "]")
			if end < 0 {
				return p
			}
			step, field = field[1:end], field[end+1:]
			if key, err := strconv.Unquote(step); err == nil {
				p = p.AtMapKey(key)
			} else if i, err := strconv.Atoi(step); err == nil {
				p = p.AtListIndex(i)
			}
			continue
		case strings.HasPrefix(field, "."):
			field = field[1:]
			continue
		}
		end := strings.IndexAny(field, ".[")
		if end < 0 {
			end = len(field)
		}
		step, field = field[:end], field[end:]
		if first {
			p, first = path.Root(step), false
		} else {
			p = p.AtName(step)
		}
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
	timeout, diags := plan.Timeouts.Create(ctx, defaultServerCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, diags := r.backend()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, diags := plan.launchSpec(ctx)
	resp.Diagnostics.Append(diags...)
	placement, diags := plan.placement(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Values unknown at plan are checked here, by the same rules, before anything is created.
	if problems := append(append(spec.Validate(), spec.CheckStrings()...), placement.Validate(spec)...); len(problems) > 0 {
		for _, p := range problems {
			resp.Diagnostics.AddAttributeError(problemPath(p.Field), "Invalid "+string(spec.Engine)+" setting", p.Error())
		}
		return
	}
	secrets := config.secrets()
	c, err := deploy.NewContainer(spec, placement, secrets)
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
	imported := state.Engine.IsNull()
	rec, err := deploy.ParseLaunchRecord(st.Labels[deploy.SpecLabel])
	if err != nil {
		resp.Diagnostics.AddError("Container was not created by llmserve", err.Error())
		return
	}
	if imported {
		// Only an import reads the in-place settings; a refresh keeps its own.
		if rec, err = currentRecord(ctx, b, st); err != nil {
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
	timeout, diags := plan.Timeouts.Update(ctx, defaultServerUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, diags := r.backend()
	resp.Diagnostics.Append(diags...)
	spec, diags := plan.launchSpec(ctx)
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
	if !plan.RestartPolicy.Equal(state.RestartPolicy) || !plan.StopGraceSeconds.Equal(state.StopGraceSeconds) || !plan.ReadinessTimeout.Equal(state.ReadinessTimeout) {
		if err := amendRecord(ctx, b, id, plan); err != nil {
			// The change itself is made; only an import would read the old values.
			resp.Diagnostics.AddWarning("Launch record not updated",
				fmt.Sprintf("The in-place change is applied, but the container's launch record could not be updated (%v), so an import of this container would restore the previous restart_policy, stop_grace_period_seconds and readiness_timeout.", err))
		}
	}
	grace := time.Duration(plan.StopGraceSeconds.ValueInt64()) * time.Second
	switch want, is := plan.Running.ValueBool(), state.Running.ValueBool(); {
	case want && !is:
		if _, _, err := deploy.StartAndWait(ctx, b, id, plan.readiness(spec, config.secrets())); err != nil {
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
	timeout, diags := state.Timeouts.Delete(ctx, defaultServerDeleteTimeout)
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

// currentRecord is the container's launch record: the one written at create (SpecLabel), or
// the one in-place changes amended since.
func currentRecord(ctx context.Context, b deploy.Backend, st deploy.Status) (deploy.LaunchRecord, error) {
	rec, err := deploy.ParseLaunchRecord(st.Labels[deploy.SpecLabel])
	if err != nil {
		return deploy.LaunchRecord{}, err
	}
	if keeper, ok := b.(deploy.RecordKeeper); ok {
		amended, found, err := keeper.ReadRecord(ctx, st.ID)
		if err != nil {
			return deploy.LaunchRecord{}, err
		}
		if found {
			return amended, nil
		}
	}
	return rec, nil
}

// amendRecord records the in-place settings of plan in the container's launch record, so
// an import restores them rather than the ones the container was created with.
func amendRecord(ctx context.Context, b deploy.Backend, id string, plan inferenceServerModel) error {
	keeper, ok := b.(deploy.RecordKeeper)
	if !ok {
		return errors.New("the backend cannot amend a launch record")
	}
	st, err := b.Inspect(ctx, id)
	if err != nil {
		return err
	}
	rec, err := currentRecord(ctx, b, st)
	if err != nil {
		return err
	}
	rec.Placement.RestartPolicy = plan.RestartPolicy.ValueString()
	rec.Placement.StopTimeoutSeconds = int(plan.StopGraceSeconds.ValueInt64())
	if rec.Placement.Meta == nil {
		rec.Placement.Meta = map[string]string{}
	}
	rec.Placement.Meta[metaReadiness] = plan.ReadinessTimeout.ValueString()
	return keeper.WriteRecord(ctx, id, rec)
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
	if !m.Mounts.IsNull() {
		p.Mounts = []deploy.Mount{} // configured empty: recorded as [], not as unset
	}
	for _, mm := range mounts {
		p.Mounts = append(p.Mounts, deploy.Mount{Type: mm.Type.ValueString(), Source: mm.Source.ValueString(), Target: mm.Target.ValueString(), ReadOnly: mm.ReadOnly.ValueBool()})
	}
	return p, diags
}

// setStatus copies what the engine host reports; these are the values that drift.
func (m *inferenceServerModel) setStatus(ctx context.Context, spec engine.Spec, st deploy.Status) diag.Diagnostics {
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
	diags.Append(m.setCommand(ctx, spec)...)
	return diags
}

func (m *inferenceServerModel) setExperiment(ctx context.Context, spec engine.Spec, st deploy.Status, info engine.ServerInfo, kernel string) diag.Diagnostics {
	exp := m.experiment(spec, st.ImageDigest, info)
	exp.Kernel = kernel
	return m.engineSettings.setExperiment(ctx, exp, info)
}

// fromRecord fills the configuration of an imported container from its launch record,
// writing null where the record holds the zero value so an unset attribute stays unset.
func (m *inferenceServerModel) fromRecord(ctx context.Context, rec deploy.LaunchRecord) diag.Diagnostics {
	s, p := rec.Spec, rec.Placement
	diags := m.fromSpec(ctx, p.Image, s, p.Meta[metaSecrets], p.Meta[metaReadiness])
	// nil is unset; an empty collection was configured as [] or {} and is restored as such.
	list := func(vs []string) types.List {
		if vs == nil {
			return types.ListNull(types.StringType)
		}
		l, d := types.ListValueFrom(ctx, types.StringType, vs)
		diags.Append(d...)
		return l
	}
	mp := func(vs map[string]string) types.Map {
		if vs == nil {
			return types.MapNull(types.StringType)
		}
		v, d := types.MapValueFrom(ctx, types.StringType, vs)
		diags.Append(d...)
		return v
	}
	m.Name, m.ModelHostPath = types.StringValue(p.Name), nullableString(p.ModelHostPath)
	m.GPUIDs, m.GroupAdd = list(p.GPUIDs), list(p.GroupAdd)
	m.ShmSizeMB = nullableInt(int(p.ShmSizeBytes >> 20))
	m.BindAddress = types.StringValue(orString(p.BindAddress, "127.0.0.1"))
	m.NetworkMode = types.StringValue("bridge")
	if p.HostNetwork {
		m.NetworkMode = types.StringValue("host")
	}
	m.Environment, m.Labels = mp(p.Env), mp(p.Labels)
	m.Mounts = types.ListNull(types.ObjectType{AttrTypes: mountAttrTypes})
	if p.Mounts != nil {
		mounts := []mountModel{}
		for _, mt := range p.Mounts {
			mounts = append(mounts, mountModel{Type: types.StringValue(mt.Type), Source: types.StringValue(mt.Source), Target: types.StringValue(mt.Target), ReadOnly: types.BoolValue(mt.ReadOnly)})
		}
		v, d := types.ListValueFrom(ctx, types.ObjectType{AttrTypes: mountAttrTypes}, mounts)
		diags.Append(d...)
		m.Mounts = v
	}
	m.StopGraceSeconds = types.Int64Value(int64(p.StopTimeoutSeconds))
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
			req.Path.String()+" must be a positive Go duration such as "+strconv.Quote("90s")+" or "+strconv.Quote("30m")+", got "+strconv.Quote(req.ConfigValue.ValueString()))
	}
}
