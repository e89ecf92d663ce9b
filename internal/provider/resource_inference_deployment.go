package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
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
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// NewInferenceDeploymentResource is the llmserve_inference_deployment resource.
func NewInferenceDeploymentResource() resource.Resource { return &inferenceDeploymentResource{} }

type inferenceDeploymentResource struct {
	engineResource
}

type inferenceDeploymentModel struct {
	engineResourceModel

	Namespace           types.String `tfsdk:"namespace"`
	Replicas            types.Int64  `tfsdk:"replicas"`
	AcceleratorResource types.String `tfsdk:"accelerator_resource"`
	AcceleratorCount    types.Int64  `tfsdk:"accelerator_count"`
	NodeSelector        types.Map    `tfsdk:"node_selector"`
	Tolerations         types.List   `tfsdk:"tolerations"`
	ModelCache          types.Object `tfsdk:"model_cache"`
	ServiceType         types.String `tfsdk:"service_type"`
	ServicePort         types.Int64  `tfsdk:"service_port"`
	Annotations         types.Map    `tfsdk:"annotations"`
	PodAccess           types.String `tfsdk:"pod_access"`
	ReplicaEndpoints    types.List   `tfsdk:"replica_endpoints"`
}

type tolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

var tolerationAttrTypes = objectAttrTypes(tolerationsAttribute())

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

type modelCacheModel struct {
	HostPath  types.String `tfsdk:"host_path"`
	ClaimName types.String `tfsdk:"claim_name"`
	MountPath types.String `tfsdk:"mount_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

var modelCacheAttrTypes = objectAttrTypes(modelCacheAttribute())

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

const metaPodAccess = "pod_access"

func (r *inferenceDeploymentResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inference_deployment"
}

func (r *inferenceDeploymentResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceInt := []planmodifier.Int64{int64planmodifier.RequiresReplace()}
	replaceMap := []planmodifier.Map{mapplanmodifier.RequiresReplace()}
	shared := engineSettingsAttributes(ctx)
	image := shared["image"].(schema.StringAttribute)
	image.MarkdownDescription = "Engine image, by tag or pinned `repo@sha256:...`; the nodes' container runtime pulls it."
	accel := shared["accelerator"].(schema.StringAttribute)
	accel.MarkdownDescription = "Accelerator family the engine computes on: `cuda`, `xpu` or `cpu` (default). Decides engine flags and the default `accelerator_resource`."
	port := shared["port"].(schema.Int64Attribute)
	port.MarkdownDescription = "Port the engine listens on in the pod; the engine's default (SGLang 30000, vLLM 8000, llama.cpp 8080) when omitted."
	resp.Schema = schema.Schema{
		MarkdownDescription: "An LLM inference engine (SGLang, vLLM or llama.cpp) as a Kubernetes Deployment with a Service in front, " +
			"with the same engine settings as `llmserve_inference_server`. The API key and hub token go into a Secret the pods read; they are never in state, plan or the pod spec.\n\n" +
			"Create and update return only once the rollout completed **and one real completion reached every replica**, pod by pod: through the API server's " +
			"pod proxy (`pod_access = \"api_proxy\"`, the default, which works from anywhere the API server is reachable) or directly to the pod IPs " +
			"(`pod_access = \"pod_network\"`, for runners inside the cluster network). A rollout that does not complete within `readiness_timeout` fails " +
			"with the failing pod's conditions, events and last log lines.\n\n" +
			"`replicas`, `service_type`, `service_port`, `pod_access`, `readiness_timeout` and `timeouts` change in place; every other setting changes the pod " +
			"template, which Kubernetes rolls out as new pods, so it is planned as a replacement. A Deployment or Service deleted by hand is re-created by the next apply; " +
			"one scaled by hand shows as a `replicas` change. Destroy removes the Deployment, Service and Secret it created (only objects carrying its labels).\n\n" +
			"A `llmserve_capacity_benchmark` given `endpoint` and `experiment` measures the whole replicated Service, and its results record `replicas`. " +
			"The benchmark runs where Terraform runs, so `endpoint` must be reachable from there (`LoadBalancer`, `NodePort`, or a runner inside the cluster for `ClusterIP`). " +
			"SGLang's and vLLM's prefix-cache flush is an HTTP call that the Service hands to one replica: give the benchmark `replica_endpoints = llmserve_inference_deployment.<name>.replica_endpoints` " +
			"and it waits for idle and flushes every replica before each trial, and reads each replica's prefix-cache counters; without it, with several replicas, it warns that the others keep their caches.\n\n" +
			fmt.Sprintf("When the API server cannot be used, the error says what failed and at which address: a refused connection at once, a TLS handshake that does not finish within %s "+
				"(something listening that is no TLS server), a request the API server does not answer within %s (a TCP connection not opened within %s), "+
				"credentials it refuses (401) or that lack a permission (403). Only an object of the same name that llmserve did not create is reported as a name taken.",
				shortDuration(kubernetes.TLSHandshakeTimeout), shortDuration(kubernetes.APICallTimeout), shortDuration(kubernetes.DialTimeout)),
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
				MarkdownDescription: "Extended resource each replica requests from the device plugin, e.g. `nvidia.com/gpu`, `gpu.intel.com/i915` or `gpu.intel.com/xe`. " +
					"Defaults from `accelerator`: `cuda` → `nvidia.com/gpu`, `xpu` → `gpu.intel.com/i915`, `cpu` → none (empty string)."},
			"accelerator_count": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{acceleratorCountDefault, int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: "Accelerators per replica; `tensor_parallel_size` when omitted (0 without an `accelerator_resource`)."},
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

// cluster connects to the provider's Kubernetes cluster.
func (r *inferenceDeploymentResource) cluster(diags *diag.Diagnostics) *kubernetes.Cluster {
	return connect(r.provider, diags, "Kubernetes", "Cannot use the Kubernetes cluster",
		"\n\nConfigure the provider's kubernetes block (config_path, or host with a token or client certificate).",
		func(p *providerData) (*kubernetes.Cluster, error) { return p.kubernetes.Cluster() })
}

// translate turns the planned model into the engine spec, the deployment and how to wait
// for it; create and update share it.
func (m inferenceDeploymentModel) translate(ctx context.Context, config inferenceDeploymentModel) (engine.Spec, kubernetes.Deployment, engine.Secrets, deploy.Readiness, diag.Diagnostics) {
	spec, diags := m.validateSpec(ctx, deploymentProblem)
	if diags.HasError() {
		return spec, kubernetes.Deployment{}, engine.Secrets{}, deploy.Readiness{}, diags
	}
	d, dd := m.deployment(ctx, spec)
	diags.Append(dd...)
	secrets := config.secrets()
	return spec, d, secrets, m.readiness(spec, secrets), diags
}

// addLaunchError reports a failed launch under the step that failed, and a failed create
// that could not be removed again with what to do about it.
func addLaunchError(diags *diag.Diagnostics, err error) {
	var le *kubernetes.LaunchError
	if errors.As(err, &le) {
		switch le.Step {
		case kubernetes.StepApply:
			addClusterError(diags, "Cannot apply the inference deployment", le.Err)
		case kubernetes.StepRollout:
			diags.AddError("Inference deployment did not roll out", le.Err.Error())
		default:
			diags.AddError("Inference deployment does not generate on every replica", le.Err.Error())
		}
	} else {
		diags.AddError("Cannot launch the inference deployment", err.Error())
	}
	var left *kubernetes.LeftError
	if errors.As(err, &left) {
		diags.AddError("Cannot remove the failed inference deployment", left.Err.Error()+"\n\nRemove the Deployment, Service and Secret by hand.")
	}
}

func (r *inferenceDeploymentResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config inferenceDeploymentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	ctx, cancel := plan.operation(ctx, "create", &resp.Diagnostics)
	defer cancel()
	c := r.cluster(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	owned := kubernetes.Deployment{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	if err := c.CheckOwnership(ctx, owned); err != nil {
		var taken *kubernetes.NameTakenError
		if errors.As(err, &taken) {
			resp.Diagnostics.AddAttributeError(path.Root("name"), "Name taken in the cluster", err.Error())
		} else {
			addClusterError(&resp.Diagnostics, "Cannot check the name in the cluster", err)
		}
		return
	}
	spec, d, secrets, ready, diags := plan.translate(ctx, config)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	info, err := c.LaunchNew(ctx, d, spec, secrets, plan.access(), ready)
	if err != nil {
		addLaunchError(&resp.Diagnostics, err)
		return
	}
	resp.Diagnostics.Append(r.finish(ctx, c, &plan, spec, d, info)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// finish records what the cluster reports after a rollout.
func (r *inferenceDeploymentResource) finish(ctx context.Context, c *kubernetes.Cluster, m *inferenceDeploymentModel, spec engine.Spec, d kubernetes.Deployment, info engine.ServerInfo) diag.Diagnostics {
	var diags diag.Diagnostics
	st, err := c.Read(ctx, d.Namespace, d.Name)
	if err != nil {
		addClusterError(&diags, "Cannot read the inference deployment after rollout", err)
		return diags
	}
	m.ID = types.StringValue(d.Namespace + "/" + d.Name)
	m.Replicas = types.Int64Value(int64(st.Replicas))
	m.ServicePort = types.Int64Value(int64(d.ServicePort))
	diags.Append(m.setStatus(ctx, spec, st)...)
	diags.Append(m.setReplicaEndpoints(ctx, c, d, spec.Port)...)
	diags.Append(m.recordExperiment(ctx, spec, st, info)...)
	return diags
}

func (r *inferenceDeploymentResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state inferenceDeploymentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	c := r.cluster(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ns, name, err := splitID(state.ID.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Invalid inference deployment id", err.Error())
		return
	}
	st, err := c.Read(ctx, ns, name)
	if errors.Is(err, kubernetes.ErrNotFound) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addClusterError(&resp.Diagnostics, "Cannot read inference deployment", err)
		return
	}
	if !st.ServiceFound {
		// Half of it is gone: plan a create, which applies both objects again.
		resp.Diagnostics.AddWarning("Service of the inference deployment is missing",
			fmt.Sprintf("Service %s/%s was deleted outside Terraform; the next apply re-creates it (the Deployment is applied unchanged).", ns, name))
		resp.State.RemoveResource(ctx)
		return
	}
	rec := st.Record
	if state.Engine.IsNull() {
		resp.Diagnostics.Append(state.fromRecord(ctx, rec)...)
		if resp.Diagnostics.HasError() {
			return
		}
		// After an import: ask one replica for what create would have recorded.
		info := c.ServerInfo(ctx, rec.Deployment, rec.Spec, state.access(), 10*time.Second)
		resp.Diagnostics.Append(state.recordExperiment(ctx, rec.Spec, st, info)...)
	}
	state.Replicas = types.Int64Value(int64(st.Replicas))
	resp.Diagnostics.Append(state.setStatus(ctx, rec.Spec, st)...)
	resp.Diagnostics.Append(state.setReplicaEndpoints(ctx, c, rec.Deployment, rec.Spec.Port)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *inferenceDeploymentResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state, config inferenceDeploymentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	ctx, cancel := plan.operation(ctx, "update", &resp.Diagnostics)
	defer cancel()
	c := r.cluster(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, d, secrets, ready, diags := plan.translate(ctx, config)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	info, err := c.Launch(ctx, d, spec, secrets, plan.access(), ready)
	if err != nil {
		addLaunchError(&resp.Diagnostics, err)
		return
	}
	resp.Diagnostics.Append(r.finish(ctx, c, &plan, spec, d, info)...)
	// The version the server reports does not change in place.
	plan.ServerVersion = state.ServerVersion
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *inferenceDeploymentResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state inferenceDeploymentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	ctx, cancel := state.operation(ctx, "delete", &resp.Diagnostics)
	defer cancel()
	c := r.cluster(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := c.Delete(ctx, kubernetes.Deployment{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}); err != nil {
		addClusterError(&resp.Diagnostics, "Cannot remove inference deployment", err)
	}
}

// ImportState takes namespace/name; Read fills everything else from the Deployment's
// launch record.
func (r *inferenceDeploymentResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if _, _, err := splitID(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid import id", err.Error())
		return
	}
	importID(ctx, req.ID, resp)
}

// setReplicaEndpoints records the ready pods' base URLs.
func (m *inferenceDeploymentModel) setReplicaEndpoints(ctx context.Context, c *kubernetes.Cluster, d kubernetes.Deployment, port int) diag.Diagnostics {
	var diags diag.Diagnostics
	eps, err := c.ReplicaEndpoints(ctx, d, port)
	if err != nil {
		addClusterError(&diags, "Cannot list the replicas of the inference deployment", err)
		return diags
	}
	m.ReplicaEndpoints, diags = types.ListValueFrom(ctx, types.StringType, eps)
	return diags
}

// addClusterError reports err under what failed when the cluster itself could not be used
// (a refused connection, no TLS, no answer, refused credentials: kubernetes.ClusterError),
// and under summary otherwise. The detail says what was being done and what failed.
func addClusterError(diags *diag.Diagnostics, summary string, err error) {
	var ce *kubernetes.ClusterError
	if errors.As(err, &ce) {
		summary = ce.Summary
	}
	diags.AddError(summary, err.Error())
}

func splitID(id string) (string, string, error) {
	ns, name, ok := strings.Cut(id, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("want namespace/name (e.g. default/llama), got %q", id)
	}
	return ns, name, nil
}
