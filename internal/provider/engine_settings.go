package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// engineSettings are the attributes every resource that launches an engine shares
// (llmserve_inference_server on Docker, llmserve_inference_deployment on Kubernetes): the
// image, the typed engine settings that become the launch command, the write-only secrets,
// the readiness bound, and what the running server reports back. Both resources embed this
// struct in their model and take their schema from engineSettingsAttributes, so the two
// cannot drift apart.
type engineSettings struct {
	Image              types.String   `tfsdk:"image"`
	Engine             types.String   `tfsdk:"engine"`
	Model              types.String   `tfsdk:"model"`
	Revision           types.String   `tfsdk:"revision"`
	ServedModelName    types.String   `tfsdk:"served_model_name"`
	TensorParallelSize types.Int64    `tfsdk:"tensor_parallel_size"`
	ContextLength      types.Int64    `tfsdk:"context_length"`
	MaxRunningRequests types.Int64    `tfsdk:"max_running_requests"`
	MemFraction        types.Float64  `tfsdk:"mem_fraction"`
	Speculative        types.Object   `tfsdk:"speculative"`
	Accelerator        types.String   `tfsdk:"accelerator"`
	Port               types.Int64    `tfsdk:"port"`
	ExtraArgs          types.List     `tfsdk:"extra_args"`
	Entrypoint         types.List     `tfsdk:"entrypoint"`
	EngineVersion      types.String   `tfsdk:"engine_version"`
	HubTokenWO         types.String   `tfsdk:"hub_token_wo"`
	APIKeyWO           types.String   `tfsdk:"api_key_wo"`
	AdminAPIKeyWO      types.String   `tfsdk:"admin_api_key_wo"`
	SecretsVersion     types.String   `tfsdk:"secrets_version"`
	ReadinessTimeout   durationValue  `tfsdk:"readiness_timeout"`
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

var speculativeAttrTypes = objectAttrTypes(speculativeAttribute())

func speculativeAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		MarkdownDescription: "Speculative decoding. SGLang: `EAGLE`/`EAGLE3`/`NEXTN` with steps, topk and draft tokens (topk 1 needs draft_tokens = steps + 1, which SGLang would otherwise rewrite with only a log warning); with `accelerator = \"xpu\"` only topk 1, launched as Intel's runbook measured it on `lmsysorg/sglang:v0.5.20-xpu` (`--attention-backend intel_xpu --page-size 64 --disable-decode-cuda-graph`; an `--attention-backend` in `extra_args` is kept, `--page-size` other than 64 on `intel_xpu` is refused); `MTP` is no SGLang algorithm (use `NEXTN`), and plan warns about drafts known to need `--dtype bfloat16` or `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`. vLLM: method `eagle`/`eagle3`/`mtp`/`ngram`/`draft_model`, steps = speculative tokens; `eagle`, `eagle3` and `draft_model` need `draft_model` (vLLM refuses to start without it). llama.cpp: `draft` with a draft GGUF.",
		Attributes: map[string]schema.Attribute{
			"algorithm":    schema.StringAttribute{Required: true, MarkdownDescription: "Algorithm or method, e.g. `EAGLE` (SGLang, also for MTP heads)."},
			"steps":        schema.Int64Attribute{Required: true, MarkdownDescription: "Draft steps per verification."},
			"topk":         schema.Int64Attribute{Optional: true, MarkdownDescription: "Branching per draft step (SGLang)."},
			"draft_tokens": schema.Int64Attribute{Optional: true, MarkdownDescription: "Tokens verified per step (SGLang)."},
			"draft_model":  schema.StringAttribute{Optional: true, MarkdownDescription: "Draft model repository or path, where the algorithm needs one."},
		}}
}

const (
	defaultReadinessTimeout = "30m"
	// maxContextLength and maxRunningRequests bound the engine settings far above any real
	// deployment, so a typo of a few digits fails the plan instead of the engine's start.
	maxContextLength   = 1 << 24
	maxRunningRequests = 100_000
)

// defaultTimeouts are the defaults of the timeouts block of a resource that launches an
// engine: long enough for a first pull of a multi-GiB image and a model download within the
// 30 m readiness bound.
var defaultTimeouts = map[string]time.Duration{"create": 40 * time.Minute, "update": 40 * time.Minute, "delete": 10 * time.Minute}

// checkReadinessBounds warns when readiness_timeout is longer than the create or update
// bound of the timeouts block: the wait would be cut short by the operation's deadline,
// silently, and the error would blame the timeout the user did not set.
func (m engineSettings) checkReadinessBounds() diag.Diagnostics {
	var diags diag.Diagnostics
	wait, ok := m.readinessTimeout()
	if !ok {
		return diags // unknown until apply, or the attribute's type reports it
	}
	for _, op := range []string{"create", "update"} {
		if bound := configuredTimeout(m.Timeouts, op, defaultTimeouts[op]); bound > 0 && wait > bound {
			diags.AddAttributeWarning(path.Root("readiness_timeout"), "readiness_timeout is longer than timeouts."+op,
				fmt.Sprintf("readiness_timeout is %s but timeouts.%s is %s, so the wait for the server would be cut at %s. "+
					"Raise timeouts.%s above %s (timeouts = { %s = %q }), or shorten readiness_timeout.",
					shortDuration(wait), op, shortDuration(bound), shortDuration(bound), op, shortDuration(wait), op, shortDuration(wait+10*time.Minute)))
		}
	}
	return diags
}

// readinessTimeout is readiness_timeout as a duration, its default when omitted; false while
// it is unknown or does not parse (the attribute's type reports that).
func (m engineSettings) readinessTimeout() (time.Duration, bool) {
	if m.ReadinessTimeout.IsUnknown() {
		return 0, false
	}
	d, err := time.ParseDuration(orString(m.ReadinessTimeout.ValueString(), defaultReadinessTimeout))
	return d, err == nil
}

// operation bounds ctx by the timeouts block's value for op (create, update or delete), or
// the default for op.
func (m engineSettings) operation(ctx context.Context, op string, diags *diag.Diagnostics) (context.Context, context.CancelFunc) {
	var bound time.Duration
	var d diag.Diagnostics
	switch op {
	case "create":
		bound, d = m.Timeouts.Create(ctx, defaultTimeouts[op])
	case "update":
		bound, d = m.Timeouts.Update(ctx, defaultTimeouts[op])
	default:
		bound, d = m.Timeouts.Delete(ctx, defaultTimeouts["delete"])
	}
	diags.Append(d...)
	return context.WithTimeout(ctx, bound)
}

// shortDuration writes a duration as a user would, "1h10m" rather than "1h10m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// configuredTimeout reads one bound of a timeouts block at validation: the configured value,
// the default when it is left out, and 0 (no comparison) while it is unknown or unparsable,
// which the timeouts attribute reports itself.
func configuredTimeout(t timeouts.Value, name string, def time.Duration) time.Duration {
	if t.IsUnknown() {
		return 0
	}
	if t.IsNull() {
		return def
	}
	v, ok := t.Attributes()[name].(types.String)
	switch {
	case !ok || v.IsNull():
		return def
	case v.IsUnknown():
		return 0
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil {
		return 0
	}
	return d
}

// engineSettingsAttributes is the schema of engineSettings. Every setting that changes the
// launch command forces a new server: a running engine cannot change its flags. The caller
// merges its own placement attributes in and may reword a description for its platform
// (withAttributes).
func engineSettingsAttributes(ctx context.Context) map[string]schema.Attribute {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceInt := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	keepStr := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	return map[string]schema.Attribute{
		"image": schema.StringAttribute{Required: true, PlanModifiers: replace,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Engine image, by tag or pinned `repo@sha256:...` (one word, lowercase repository). Pulled only when the engine host lacks it."},
		"engine": schema.StringAttribute{Required: true, PlanModifiers: replace,
			Validators:          []validator.String{stringvalidator.OneOf(enumStrings(engine.Names)...)},
			MarkdownDescription: "Inference engine: `sglang`, `vllm` or `llamacpp`. Decides the launch command, default port and readiness endpoint."},
		"model": schema.StringAttribute{Required: true, PlanModifiers: replace,
			MarkdownDescription: "Model the engine loads: a Hugging Face repository id or a path inside the container. For `llamacpp`, the absolute path of a `.gguf` file."},
		"revision": schema.StringAttribute{Optional: true, PlanModifiers: replace,
			MarkdownDescription: "Model revision (commit, branch or tag) to pin."},
		"served_model_name": schema.StringAttribute{Optional: true, Computed: true,
			PlanModifiers: []planmodifier.String{servedModelNameDefault, stringplanmodifier.RequiresReplace()},
			MarkdownDescription: "Name clients send as `model`. When omitted, the engine serves the model under `model` itself, " +
				"and this attribute says so at plan: pass `llmserve_inference_server.<name>.served_model_name` to a benchmark " +
				"instead of repeating the model string."},
		"tensor_parallel_size": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(engine.DefaultTensorParallel), PlanModifiers: replaceInt,
			Validators:          []validator.Int64{int64validator.AtLeast(1)},
			MarkdownDescription: "Tensor parallel size (GPUs per replica). Default 1."},
		"context_length": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
			Validators:          []validator.Int64{intRange{min: 1, max: maxContextLength, hint: "0 would be ignored (the engine would use the model's own length); omit context_length for that, or give the length in tokens."}},
			MarkdownDescription: fmt.Sprintf("Context length in tokens, 1 to %d; the model's own when omitted. For `llamacpp` this is the total KV cache shared by all slots.", maxContextLength)},
		"max_running_requests": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
			Validators:          []validator.Int64{intRange{min: 1, max: maxRunningRequests, hint: "0 would be ignored (the engine would use its default); omit max_running_requests for that."}},
			MarkdownDescription: fmt.Sprintf("Requests decoded together, 1 to %d: SGLang `--max-running-requests`, vLLM `--max-num-seqs`, llama.cpp `--parallel` slots. The engine's default when omitted.", maxRunningRequests)},
		"mem_fraction": schema.Float64Attribute{Optional: true, PlanModifiers: []planmodifier.Float64{float64planmodifier.RequiresReplace()},
			Validators:          []validator.Float64{fractionValidator{}},
			MarkdownDescription: "Fraction of accelerator memory for weights and KV cache, in (0, 1]: SGLang `--mem-fraction-static`, vLLM `--gpu-memory-utilization`. The engine's default when omitted."},
		"speculative": speculativeAttribute(),
		"accelerator": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(engine.DefaultAccelerator)), PlanModifiers: replace,
			Validators: []validator.String{stringvalidator.OneOf(enumStrings(engine.Accelerators)...)},
			MarkdownDescription: "`xpu` (Intel GPUs: maps `/dev/dri`, adds the `render` and `video` groups; host IPC for SGLang and vLLM; `llamacpp` computes there through ggml's Vulkan backend, the one Debian ships), " +
				"`vulkan` (`llamacpp` only: any Vulkan device, Intel or AMD GPUs or Mesa's lavapipe on the CPU; maps `/dev/dri` unless `devices` says otherwise, adds the `render` and `video` groups), " +
				"`cuda` (NVIDIA device request, host IPC) or `cpu` (default). On `xpu` and `vulkan`, llama.cpp offloads every layer (`--n-gpu-layers 999`) to `Vulkan0`…`Vulkan<tensor_parallel_size - 1>` (`--device`), " +
				"split by whole layers (`--split-mode layer`) when `tensor_parallel_size` > 1; its image must hold the Vulkan backend (`scripts/build-llamacpp-image.sh --vulkan`)."},
		"port": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{enginePortDefault, int64planmodifier.RequiresReplace()},
			Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			MarkdownDescription: "Port the engine listens on inside the container; the engine's default (SGLang 30000, vLLM 8000, llama.cpp 8080) when omitted."},
		"extra_args": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
			MarkdownDescription: "Engine arguments appended verbatim after the typed ones. Flags that take a secret (`--api-key`, `--admin-api-key`, `--hf-token`) are refused: they would be stored in state; use `api_key_wo` / `hub_token_wo`."},
		"entrypoint": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
			MarkdownDescription: "Program that starts the engine, when the image installs it elsewhere than the engine's default (`python3 -m sglang.launch_server`, `python3 -m vllm.entrypoints.openai.api_server`, `llama-server`)."},
		"engine_version": schema.StringAttribute{Optional: true, PlanModifiers: replace,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Engine release the image holds, where launch flags changed between releases. llama.cpp: the build (`b8846`, or `b8846-<commit>` as `/props` reports it; anything else is refused, since it would silently select the newest flags); builds before b10749 get `--draft-max` for speculative decoding, later or unset ones `--spec-type draft-simple --spec-draft-n-max` (upstream removed `--draft-max`)."},
		"hub_token_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Hugging Face token (as `HF_TOKEN`). Write-only: never stored in state or plan (Terraform >= 1.11). Bump `secrets_version` to apply a new one."},
		"api_key_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
			Validators: []validator.String{printableValidator{}},
			MarkdownDescription: "API key the server demands as `Authorization: Bearer`. Write-only: never in state, plan or `command`. " +
				"On Docker, llama.cpp reads it from a file written into the container before start (`--api-key-file`), so `docker inspect` does not show it; " +
				"vLLM reads it from `VLLM_API_KEY` and SGLang only from `--api-key`, so for those two it is visible to `docker inspect` (environment or arguments) on the engine host: restrict who can reach the engine."},
		"admin_api_key_wo": schema.StringAttribute{Optional: true, Sensitive: true, WriteOnly: true,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "SGLang only (refused for the other engines, which have no admin key): key for its admin endpoints (`--admin-api-key`), among them `/flush_cache`, which a benchmark's cache flush calls; give the same value to the benchmark's `admin_api_key`. Kept out of `command`. Write-only, never stored."},
		"secrets_version": schema.StringAttribute{Optional: true, PlanModifiers: replace,
			Validators:          []validator.String{printableValidator{}},
			MarkdownDescription: "Any value; changing it re-creates the server so new write-only secrets take effect."},
		"readiness_timeout": schema.StringAttribute{Optional: true, Computed: true, CustomType: durationType{}, Default: stringdefault.StaticString(defaultReadinessTimeout),
			Validators: []validator.String{durationValidator{}},
			MarkdownDescription: "How long to wait for the server to generate (download and load included), as a Go duration. Default `30m`. " +
				"The operation's own bound (`timeouts.create`, default `40m`) applies too: plan warns when this is longer."},

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
		"timeouts": positiveTimeouts(ctx, timeouts.Opts{
			Create: true, Update: true, Delete: true,
			CreateDescription: "How long creating the server may take, image pull, start and `readiness_timeout` included, as a Go duration. Default `40m`.",
			UpdateDescription: "How long an in-place change may take, a restart or rollout and the wait until it generates included, as a Go duration. Default `40m`.",
			DeleteDescription: "How long stopping and removing the server may take, as a Go duration. Default `10m`.",
		}),
	}
}

// withAttributes merges a resource's own attributes into the shared ones; a resource that
// names a shared attribute replaces it (to reword its description for its platform).
func withAttributes(shared, own map[string]schema.Attribute) map[string]schema.Attribute {
	out := maps.Clone(shared)
	maps.Copy(out, own)
	return out
}

func inferenceServerExperimentAttributes() map[string]schema.Attribute {
	str := func(d string) schema.Attribute { return schema.StringAttribute{Computed: true, MarkdownDescription: d} }
	num := func(d string) schema.Attribute { return schema.Int64Attribute{Computed: true, MarkdownDescription: d} }
	return map[string]schema.Attribute{
		"image_tag":    str("Image reference as configured."),
		"image_digest": str("Image digest."),
		"model":        str("Model repository or path."),
		"checkpoint":   str("Model revision."),
		"hardware": str("The devices the server's container sees, as the engine image's own tools report them (`2 x NVIDIA H200, 143771 MiB each`): `nvidia-smi` on CUDA, PyTorch's `torch.xpu` on XPU, `llama-server --list-devices` for llama.cpp, read at create and at import. " +
			"The accelerator family (`xpu`, `cuda`, `cpu`) when no device can be read: a CPU server, a probe the image cannot run, or a Kubernetes deployment (its pods are not probed)."),
		"driver":              str("Accelerator driver version; empty, the engine host does not report it."),
		"kernel":              str("Kernel of the engine host."),
		"tensor_parallelism":  num("Tensor parallel size."),
		"context_length":      num("Most tokens (prompt plus output) one request may use, as the server reports it (SGLang `context_length`, vLLM `max_model_len`, llama.cpp the per-slot `n_ctx` of `/props`, which is `context_length` divided among the slots unless the KV cache is unified), else the configured one."),
		"physical_token_pool": num("KV cache token pool the server reports (SGLang `max_total_num_tokens`, vLLM GPU blocks × block size); null when it reports none (llama.cpp)."),
		"replicas":            num("Engine replicas behind `endpoint`: `replicas` of an `llmserve_inference_deployment`, 0 for a single server."),
		"accelerator": str("The accelerator family the server was launched on (`accelerator`: `cpu`, `cuda`, `xpu`, `vulkan`). A `llmserve_capacity_benchmark` given this `experiment` reads it: on `xpu` and `vulkan` its `trial.engine_warmup_requests` defaults to 16. " +
			"Null in state written before the attribute existed, until the server is replaced or imported."),
		"speculative_mode": schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "Speculative decoding; null when off.",
			Attributes: map[string]schema.Attribute{
				"algorithm": str("Algorithm."), "steps": num("Steps."), "topk": num("Top-k."), "draft_tokens": num("Draft tokens."),
			}},
	}
}

// spec translates the engine settings into the launch spec. Callers make sure the values
// are known (specKnown).
func (m engineSettings) spec(ctx context.Context) (engine.Spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := engine.Spec{
		Engine:             engine.Name(m.Engine.ValueString()),
		Model:              m.Model.ValueString(),
		Revision:           m.Revision.ValueString(),
		ServedModelName:    m.ServedModelName.ValueString(),
		TensorParallel:     int(m.TensorParallelSize.ValueInt64()),
		ContextLength:      int(m.ContextLength.ValueInt64()),
		MaxRunningRequests: int(m.MaxRunningRequests.ValueInt64()),
		MemFraction:        m.MemFraction.ValueFloat64(),
		Accelerator:        acceleratorOf(m.Accelerator),
		Port:               int(m.Port.ValueInt64()),
		EngineVersion:      m.EngineVersion.ValueString(),
	}
	if m.TensorParallelSize.IsNull() {
		s.TensorParallel = engine.DefaultTensorParallel
	}
	if s.ServedModelName == s.Model {
		// The engines' own default: no flag, so the computed value changes no command.
		s.ServedModelName = ""
	}
	if m.Port.IsNull() || m.Port.IsUnknown() {
		s.Port = engine.DefaultPort(s.Engine)
	}
	diags.Append(stringsOf(ctx, path.Root("extra_args"), m.ExtraArgs, &s.ExtraArgs)...)
	diags.Append(stringsOf(ctx, path.Root("entrypoint"), m.Entrypoint, &s.Entrypoint)...)
	if !m.Speculative.IsNull() {
		var sp speculativeModel
		diags.Append(m.Speculative.As(ctx, &sp, basetypes.ObjectAsOptions{})...)
		s.Speculative = &engine.Speculative{
			Algorithm: sp.Algorithm.ValueString(), Steps: int(sp.Steps.ValueInt64()), TopK: int(sp.TopK.ValueInt64()),
			DraftTokens: int(sp.DraftTokens.ValueInt64()), DraftModel: sp.DraftModel.ValueString(),
		}
	}
	return s, diags
}

// acceleratorOf is the configured accelerator, engine.DefaultAccelerator when omitted (a plan
// default reads the configuration, before the schema's default applies).
func acceleratorOf(v types.String) engine.Accelerator {
	return engine.Accelerator(orString(v.ValueString(), string(engine.DefaultAccelerator)))
}

// specKnown says whether every value the launch spec depends on is known, so it can be
// checked at plan time.
func (m engineSettings) specKnown() bool {
	for _, v := range []attr.Value{m.Engine, m.Model, m.Revision, m.ServedModelName, m.TensorParallelSize, m.ContextLength,
		m.MaxRunningRequests, m.MemFraction, m.Speculative, m.Accelerator, m.Port, m.ExtraArgs, m.Entrypoint, m.EngineVersion} {
		if v.IsUnknown() {
			return false
		}
	}
	return true
}

// validateSpec checks the engine's constraints, naming the attribute to fix, under the
// resource's title summary. It returns the spec when it is usable.
func (m engineSettings) validateSpec(ctx context.Context, summary string) (engine.Spec, diag.Diagnostics) {
	spec, diags := m.spec(ctx)
	if diags.HasError() {
		return spec, diags
	}
	if !slices.Contains(engine.Names, spec.Engine) {
		// The engine attribute's own validator names the typo; the other constraints of an
		// engine that does not exist would only add a second, confusing error.
		return spec, diags
	}
	problems := append(spec.Validate(), spec.CheckStrings()...)
	if !m.AdminAPIKeyWO.IsUnknown() {
		problems = append(problems, spec.CheckSecrets(m.secrets())...)
	}
	diags.Append(problemDiagnostics(problems, summary, nil, false)...)
	return spec, diags
}

// secrets are the write-only values, which exist only in the configuration, never in the
// plan or state.
func (m engineSettings) secrets() engine.Secrets {
	return engine.Secrets{HubToken: m.HubTokenWO.ValueString(), APIKey: m.APIKeyWO.ValueString(), AdminAPIKey: m.AdminAPIKeyWO.ValueString()}
}

func (m engineSettings) readiness(spec engine.Spec, sec engine.Secrets) deploy.Readiness {
	d, _ := m.readinessTimeout() // validated at plan time
	return deploy.Readiness{Engine: spec.Engine, Model: spec.RequestModel(), APIKey: sec.APIKey, Timeout: d,
		Redact: []string{sec.APIKey, sec.HubToken, sec.AdminAPIKey}, StallHint: spec.FirstCompletionHint()}
}

func (m *engineSettings) setCommand(ctx context.Context, spec engine.Spec) diag.Diagnostics {
	cmd, diags := types.ListValueFrom(ctx, types.StringType, spec.Command())
	m.Command = cmd
	return diags
}

// experiment is the deployment in the results document's shape; a resource adds what only
// it knows (kernel, replicas).
func (m *engineSettings) experiment(spec engine.Spec, imageDigest string, info engine.ServerInfo) results.Experiment {
	return deploy.Experiment(spec, m.Image.ValueString(), imageDigest, info)
}

func (m *engineSettings) setExperiment(ctx context.Context, exp results.Experiment, info engine.ServerInfo) diag.Diagnostics {
	m.ServerVersion = nullableString(info.Version)
	obj, diags := experimentValue(ctx, exp)
	m.Experiment = obj
	return diags
}

// fromSpec fills the engine settings of an imported server from its stored launch spec,
// writing null where the spec holds the zero value so an unset attribute stays unset.
func (m *engineSettings) fromSpec(ctx context.Context, image string, s engine.Spec, secretsVersion, readinessTimeout string) diag.Diagnostics {
	var diags diag.Diagnostics
	m.Image, m.Engine, m.Model = types.StringValue(image), types.StringValue(string(s.Engine)), types.StringValue(s.Model)
	m.Revision, m.ServedModelName = nullableString(s.Revision), types.StringValue(s.RequestModel())
	m.TensorParallelSize, m.ContextLength, m.MaxRunningRequests = types.Int64Value(int64(s.TensorParallel)), nullableInt(s.ContextLength), nullableInt(s.MaxRunningRequests)
	m.MemFraction = types.Float64Null()
	if s.MemFraction != 0 {
		m.MemFraction = types.Float64Value(s.MemFraction)
	}
	m.Speculative = types.ObjectNull(speculativeAttrTypes)
	if sp := s.Speculative; sp != nil {
		v, d := types.ObjectValueFrom(ctx, speculativeAttrTypes, speculativeModel{
			Algorithm: types.StringValue(sp.Algorithm), Steps: types.Int64Value(int64(sp.Steps)), TopK: nullableInt(sp.TopK),
			DraftTokens: nullableInt(sp.DraftTokens), DraftModel: nullableString(sp.DraftModel),
		})
		diags.Append(d...)
		m.Speculative = v
	}
	m.Accelerator, m.Port = types.StringValue(string(s.Accelerator)), types.Int64Value(int64(s.Port))
	m.ExtraArgs, m.Entrypoint = stringList(ctx, s.ExtraArgs, &diags), stringList(ctx, s.Entrypoint, &diags)
	m.EngineVersion = nullableString(s.EngineVersion)
	m.HubTokenWO, m.APIKeyWO, m.AdminAPIKeyWO = types.StringNull(), types.StringNull(), types.StringNull()
	m.SecretsVersion = nullableString(secretsVersion)
	m.ReadinessTimeout = newDurationValue(orString(readinessTimeout, defaultReadinessTimeout))
	m.Experiment = types.ObjectNull(experimentAttrTypes)
	m.ServerVersion = types.StringNull()
	return diags
}

// servedModelNameDefault plans an omitted served_model_name as the name the engine will
// serve: the model itself. A server stored before the attribute was computed (null) keeps
// null until its model changes, so upgrading the provider replaces nothing.
var servedModelNameDefault = planDefault[types.String]{
	description: "defaults to model, the name the engines serve a model under",
	fill: func(ctx context.Context, req defaultRequest, diags *diag.Diagnostics) (types.String, bool) {
		var model types.String
		diags.Append(req.Plan.GetAttribute(ctx, path.Root("model"), &model)...)
		if !req.State.Raw.IsNull() && req.StateValue.IsNull() {
			var prior types.String
			diags.Append(req.State.GetAttribute(ctx, path.Root("model"), &prior)...)
			if model.Equal(prior) {
				return types.StringNull(), true // stored before the attribute was computed: keep null
			}
		}
		return model, true // unknown while the model is
	},
}

// enginePortDefault fills an omitted port with the engine's own default, so the plan shows
// the real port and switching engines does not keep the old engine's port.
var enginePortDefault = planDefault[types.Int64]{
	description: "defaults to the engine's port: sglang 30000, vllm 8000, llamacpp 8080",
	fill: func(ctx context.Context, req defaultRequest, diags *diag.Diagnostics) (types.Int64, bool) {
		name := configString(ctx, req.Config, "engine", diags)
		if name.IsNull() || name.IsUnknown() {
			return types.Int64{}, false
		}
		return types.Int64Value(int64(engine.DefaultPort(engine.Name(name.ValueString())))), true
	},
}
