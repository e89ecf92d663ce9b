package provider

// The llmserve_inference_server schema: every attribute, its default and its description.

import (
	"context"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
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
)

func (r *inferenceServerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceInt := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	keepStr := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One LLM inference server (SGLang, vLLM or llama.cpp) in a container on the provider's Docker Engine. " +
			"Create returns only once the server **generates**: the engine's health endpoint answers and a 16-token completion succeeds. " +
			"If the container exits or restarts meanwhile, apply fails at once with its last log lines and the container is removed; so it does when that " +
			"completion is degenerate (empty although tokens were counted, or one code point for 80 % of it, such as `!!!!`: the rules of " +
			"`correctness.degenerate_outputs` in the results schema guide), quoting it.\n\n" +
			dockerCallBounds() + "\n\n" +
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
				MarkdownDescription: "The GPUs the server may use, each listed once; all of them when omitted. `cuda`: NVIDIA GPU indices or UUIDs (as `nvidia-smi -L` shows), passed as the device request. `xpu` with SGLang or vLLM: Level Zero device indices (`\"0\"`) or device.sub-device pairs (`\"0.1\"`), in the order `sycl-ls` or `xpu-smi discovery` number them, set as `ZE_AFFINITY_MASK` in the container (every `/dev/dri` node stays mapped; the Level Zero loader hides the others from SGLang and vLLM). " +
					"`llamacpp` on `xpu` or `vulkan`: Vulkan device indices in the order the Vulkan loader lists them (`vulkaninfo --summary`: GPU0, GPU1, …), set as `GGML_VK_VISIBLE_DEVICES`; llama.cpp then sees them as `Vulkan0`, `Vulkan1`, … and computes on the first `tensor_parallel_size` of them. A CPU-type device (lavapipe) is used only when listed here. " +
					"At least `tensor_parallel_size` ids, and not together with the same variable in `environment`. Refused with `cpu`, which would ignore it."},
			"devices": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceList,
				MarkdownDescription: "Host device nodes mapped into the container, replacing the accelerator's default: `xpu` and `vulkan` map `/dev/dri` (the GPUs' render nodes), the others none (NVIDIA GPUs come through the device request). " +
					"`[]` maps none, and then adds none of the accelerator's groups either: lavapipe, Mesa's Vulkan implementation on the CPU, needs no device node, and Docker refuses to start a container whose device is missing on the host. " +
					"Each is an absolute, clean path under `/dev` on the engine host, listed once, mapped to the same path in the container with read, write and mknod (`rwm`); Docker's `host:container:permissions` form is refused."},
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
			"publish": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
				MarkdownDescription: "Publish the engine's port on the engine host (`bind_address`:`host_port`). Default `true`. " +
					"`false` publishes nothing: the engine listens on `127.0.0.1` inside its container, and `endpoint` is that address (`http://127.0.0.1:<port>`), " +
					"which only its own network namespace reaches: a `llmserve_capacity_benchmark` with `runner = { docker = { container = <this id> } }` measures it from there. " +
					"The provider checks readiness through the Docker Engine it already talks to (local socket, `tcp://` with TLS, `ssh://`): each of its connections is a short-lived relay container " +
					"of the runner image (the provider's own binary, built on the engine as the benchmark's runner is) in the server's network namespace, removed when the connection closes. " +
					"Refused with `network_mode = \"host\"`, with `host_port` and with a `bind_address` other than a loopback address (each would be ignored), and at plan when the engine answers then and the provider binary cannot run on it (another architecture: set `LLMSERVE_RUNNER_BINARY` to the provider's Linux release binary for it)."},
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

const defaultStopGrace = 30

// containerNameRE is Docker's rule for container names.
var containerNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
