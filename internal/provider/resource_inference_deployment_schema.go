package provider

// The llmserve_inference_deployment schema: every attribute, its default and its description.

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
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

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

func (r *inferenceDeploymentResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceInt := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	replaceMap := []planmodifier.Map{mapplanmodifier.RequiresReplace()}
	shared := engineSettingsAttributes(ctx)
	image := shared["image"].(schema.StringAttribute)
	image.MarkdownDescription = "Engine image, by tag or pinned `repo@sha256:...`; the nodes' container runtime pulls it."
	accel := shared["accelerator"].(schema.StringAttribute)
	accel.MarkdownDescription = "Accelerator family the engine computes on, as for `llmserve_inference_server`: `xpu` (Intel GPUs; `llamacpp` computes there through ggml's Vulkan backend), " +
		"`vulkan` (`llamacpp` only: any Vulkan device), `cuda` or `cpu` (default). Decides the engine flags (on `xpu` and `vulkan` llama.cpp offloads every layer to `Vulkan0`…`Vulkan<tensor_parallel_size - 1>`, " +
		"split by whole layers when `tensor_parallel_size` > 1; its image must hold the Vulkan backend), the plan's checks and warnings for Intel GPUs, and the default `accelerator_resource`. " +
		"Unlike a Docker host, a pod sees no `/dev/dri` unless a device plugin (`accelerator_resource`) or a resource driver (`accelerator_claim`) gives it GPUs: with `vulkan` and neither, plan warns."
	port := shared["port"].(schema.Int64Attribute)
	port.MarkdownDescription = "Port the engine listens on in the pod; the engine's default (SGLang 30000, vLLM 8000, llama.cpp 8080) when omitted."
	resp.Schema = schema.Schema{
		MarkdownDescription: "An LLM inference engine (SGLang, vLLM or llama.cpp) as a Kubernetes Deployment with a Service in front, " +
			"with the same engine settings as `llmserve_inference_server`. The API key and hub token go into a Secret the pods read; they are never in state, plan or the pod spec.\n\n" +
			"Create and update return only once the rollout completed **and one real completion reached every replica**, pod by pod: through the API server's " +
			"pod proxy (`pod_access = \"api_proxy\"`, the default, which works from anywhere the API server is reachable) or directly to the pod IPs " +
			"(`pod_access = \"pod_network\"`, for runners inside the cluster network). A rollout that does not complete within `readiness_timeout` fails " +
			"with the failing pod's conditions, events and last log lines; a replica whose completion is degenerate (`!!!!`, or empty although " +
			"tokens were counted: the rules of `correctness.degenerate_outputs` in the results schema guide) fails it at once, naming the pod and quoting the text.\n\n" +
			"`replicas`, `service_type`, `service_port`, `pod_access`, `readiness_timeout` and `timeouts` change in place; every other setting changes the pod " +
			"template, which Kubernetes rolls out as new pods, so it is planned as a replacement. A Deployment or Service deleted by hand is re-created by the next apply; " +
			"one scaled by hand shows as a `replicas` change. Destroy removes the Deployment, Service, Secret and ResourceClaimTemplate it created (only objects carrying its labels) and waits until the pods and their ResourceClaims are gone.\n\n" +
			"A `llmserve_capacity_benchmark` given `endpoint` and `experiment` measures the whole replicated Service, and its results record `replicas`. " +
			"With `runner = { kubernetes = { namespace, image } }` the benchmark runs in a Job in the deployment's namespace and reaches a `ClusterIP` Service and every pod from inside the cluster; " +
			"without a runner it runs where Terraform runs, so `endpoint` must be reachable from there (`LoadBalancer`, `NodePort`). " +
			"SGLang's and vLLM's prefix-cache flush is an HTTP call that the Service hands to one replica: give the benchmark `replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints` " +
			"and it waits for idle and flushes every replica before each trial, and reads each replica's prefix-cache counters; without it, with several replicas, it warns that the others keep their caches.\n\n" +
			fmt.Sprintf("When the API server cannot be used, the error says what failed and at which address: a refused connection at once, a TLS handshake that does not finish within %s "+
				"(something listening that is no TLS server), a request the API server does not answer within %s (a TCP connection not opened within %s), "+
				"credentials it refuses (401) or that lack a permission (403). Only an object of the same name that llmserve did not create is reported as a name taken. "+
				"The environment variable `%s` (a Go duration) replaces the bound on a request.",
				shortDuration(kubernetes.TLSHandshakeTimeout), shortDuration(kubernetes.APICallTimeout), shortDuration(kubernetes.DialTimeout), deploy.CallTimeoutEnv),
		Attributes: withAttributes(shared, map[string]schema.Attribute{
			"image":       image,
			"accelerator": accel,
			"port":        port,
			"id": schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "`namespace/name`, the import id."},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(dnsLabelRE, "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, at most 63 characters")},
				MarkdownDescription: "Name of the Deployment and the Service (the Secret is `<name>-llmserve`)."},
			"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("default"), PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`), "must be a DNS-1123 label")},
				MarkdownDescription: "Namespace, which must exist. Default `default`."},
			"replicas": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				Validators:          []validator.Int64{int64validator.Between(1, 1000)},
				MarkdownDescription: "Pods, each a whole engine. Changed in place: new replicas must generate before apply returns. Default 1."},
			"accelerator_resource": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.String{acceleratorResourceDefault, stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "Extended resource each replica requests from the device plugin, e.g. `nvidia.com/gpu`, `gpu.intel.com/i915` or `gpu.intel.com/xe` (Intel's plugin names GPUs driven by the `xe` kernel driver, Battlemage's Arc Pro B-series among them, `xe`). " +
					"Defaults from `accelerator`: `cuda` → `nvidia.com/gpu`, `xpu` → `gpu.intel.com/i915`, `vulkan` and `cpu` → none (empty string); none with `accelerator_claim`, which it excludes."},
			"accelerator_count": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{acceleratorCountDefault, int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: "Accelerators per replica; `tensor_parallel_size` when omitted (0 without an `accelerator_resource`)."},
			"accelerator_claim": acceleratorClaimAttribute(),
			"gpu_ids": schema.ListAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
				MarkdownDescription: "Which of the devices a pod was given the engine uses, by the rules of `llmserve_inference_server`'s `gpu_ids` and through the same variables, each listed once and at least `tensor_parallel_size` of them: " +
					"`xpu` with SGLang or vLLM sets `ZE_AFFINITY_MASK` (Level Zero indices `\"0\"` or `\"0.1\"`), `llamacpp` on `xpu` or `vulkan` sets `GGML_VK_VISIBLE_DEVICES` (Vulkan indices; a CPU-type device, Mesa's lavapipe, is used only when listed). " +
					"On Kubernetes the indices count the devices the device plugin or the claim gave the pod, not the node's: which physical GPUs a pod gets is the plugin's or the resource driver's choice. " +
					"Refused with `cuda` (NVIDIA's plugin sets `NVIDIA_VISIBLE_DEVICES` itself) and `cpu`. A Docker server's `devices` has no counterpart: device nodes reach a pod only through `accelerator_resource` or `accelerator_claim`."},
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Node labels a replica's node must carry, e.g. `{\"gpu.intel.com/family\" = \"B70\"}`."},
			"tolerations": tolerationsAttribute(),
			"shm_size_mb": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Size of a memory-backed `emptyDir` mounted at `/dev/shm`, in MiB (tensor-parallel workers exchange tensors there; the runtime's default is 64 MiB). It counts against the pod's memory."},
			"model_cache": modelCacheAttribute(),
			"environment": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Environment variables of the engine container. Stored in state and the pod spec: put secrets in `hub_token_wo` / `api_key_wo`."},
			"service_type": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("ClusterIP"),
				Validators:          []validator.String{stringvalidator.OneOf("ClusterIP", "NodePort", "LoadBalancer")},
				MarkdownDescription: "Service type, changed in place. `endpoint` is the cluster IP (`ClusterIP`, default: reachable inside the cluster), a node's address and node port (`NodePort`) or the load balancer's address (`LoadBalancer`)."},
			"service_port": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{servicePortDefault},
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "Port the Service listens on, changed in place; the engine's `port` when omitted."},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Labels on the Deployment, Service, Secret and pods. The provider adds `app.kubernetes.io/managed-by`, `app.kubernetes.io/name` and `app.kubernetes.io/instance`."},
			"annotations": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Annotations on the Deployment, Service, Secret and pods. The provider adds `" + kubernetes.RecordAnnotation + "` to the Deployment (the launch record import reads)."},
			"replica_endpoints": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Base URL of every ready replica on the pod network (`http://POD_IP:PORT`), one per pod, in pod-name order, read again at every refresh. " +
					"Feed it to `llmserve_capacity_benchmark`'s `replica_endpoints` so the benchmark flushes and waits for every replica, not only the one the Service picks. " +
					"Pod IPs are reachable from inside the cluster network (like a `ClusterIP` endpoint); unknown in a plan that changes `replicas`."},
			"pod_access": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(kubernetes.APIProxy)),
				Validators:          []validator.String{stringvalidator.OneOf(enumStrings(kubernetes.Accesses)...)},
				MarkdownDescription: "How this machine reaches each replica for the generation check: `api_proxy` (default; the API server's pod proxy, with the provider's credentials) or `pod_network` (the pod IPs directly, for runners inside the cluster network). The API server consumes the `Authorization` header, so `api_key_wo` needs `pod_network`."},
		}),
	}
}

func tolerationsAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true, PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
		MarkdownDescription: "Taints the pods tolerate, as in a pod spec (GPU nodes are often tainted).",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"key":                schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; empty with `Exists` matches every taint."},
			"operator":           schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf("Equal", "Exists")}, MarkdownDescription: "`Equal` (Kubernetes' default) or `Exists`."},
			"value":              schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value, with `Equal`."},
			"effect":             schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")}, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; every effect when omitted."},
			"toleration_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "How long a `NoExecute` taint is tolerated."},
		}}}
}

func acceleratorClaimAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		MarkdownDescription: "Devices claimed through Dynamic Resource Allocation (`resource.k8s.io/v1`, Kubernetes 1.34+) instead of a device plugin's extended resource: " +
			"the provider applies a ResourceClaimTemplate `<name>-accelerator` that every pod references, so each replica gets a ResourceClaim of its own, which the scheduler allocates from the devices the class's driver publishes (ResourceSlices). " +
			"Refused together with `accelerator_resource`. Apply checks first that the cluster serves `resource.k8s.io/v1` and has the DeviceClass; a claim no node can satisfy fails the rollout after `readiness_timeout` with the class, the count and the scheduler's words. " +
			"Destroy removes the template and waits until the pods' claims are gone (their devices free again).",
		Attributes: map[string]schema.Attribute{
			"device_class": schema.StringAttribute{Required: true,
				MarkdownDescription: "DeviceClass to claim from, e.g. `gpu.intel.com` (Intel's resource driver for Arc GPUs) or `gpu.nvidia.com`; `kubectl get deviceclasses` lists the cluster's."},
			"count": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, int64(kubernetes.MaxClaimDevices))},
				MarkdownDescription: fmt.Sprintf("Devices per replica, 1 to %d; `tensor_parallel_size` when omitted.", kubernetes.MaxClaimDevices)},
			"selectors": schema.ListAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "CEL expressions every claimed device must satisfy, over `device` (`device.driver`, `device.attributes[\"<driver>\"].<name>`, `device.capacity[\"<driver>\"].memory`), e.g. `device.attributes[\"gpu.intel.com\"].deviceType == \"discrete\"`. The API server checks them at apply."},
		}}
}

func modelCacheAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		PlanModifiers:       []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		Validators:          []validator.Object{objectvalidator.AlsoRequires(path.MatchRelative().AtName("mount_path"))},
		MarkdownDescription: "Volume for model weights that outlives pods: a node directory (`host_path`) or a PersistentVolumeClaim (`claim_name`, ReadWriteMany or ReadOnlyMany for several replicas), mounted at `mount_path` (e.g. `/root/.cache/huggingface`).",
		Attributes: map[string]schema.Attribute{
			"host_path": schema.StringAttribute{Optional: true,
				Validators:          []validator.String{stringvalidator.ExactlyOneOf(path.MatchRelative().AtParent().AtName("claim_name"))},
				MarkdownDescription: "Directory on the node (created when missing)."},
			"claim_name": schema.StringAttribute{Optional: true, MarkdownDescription: "PersistentVolumeClaim in the namespace."},
			"mount_path": schema.StringAttribute{Required: true, MarkdownDescription: "Absolute path in the engine container."},
			"read_only":  schema.BoolAttribute{Optional: true, MarkdownDescription: "Mount read-only."},
		}}
}

// dnsLabelRE is Kubernetes' rule for Service names (RFC 1035 label), the strictest of the
// objects the resource creates.
var dnsLabelRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
