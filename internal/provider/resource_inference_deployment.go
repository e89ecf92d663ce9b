package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
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
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

var (
	_ resource.Resource                   = (*inferenceDeploymentResource)(nil)
	_ resource.ResourceWithConfigure      = (*inferenceDeploymentResource)(nil)
	_ resource.ResourceWithImportState    = (*inferenceDeploymentResource)(nil)
	_ resource.ResourceWithValidateConfig = (*inferenceDeploymentResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*inferenceDeploymentResource)(nil)
)

// NewInferenceDeploymentResource is the llmserve_inference_deployment resource.
func NewInferenceDeploymentResource() resource.Resource { return &inferenceDeploymentResource{} }

type inferenceDeploymentResource struct {
	kube *kubernetes.Connection
}

type inferenceDeploymentModel struct {
	engineSettings

	ID                  types.String   `tfsdk:"id"`
	Name                types.String   `tfsdk:"name"`
	Namespace           types.String   `tfsdk:"namespace"`
	Replicas            types.Int64    `tfsdk:"replicas"`
	AcceleratorResource types.String   `tfsdk:"accelerator_resource"`
	AcceleratorCount    types.Int64    `tfsdk:"accelerator_count"`
	NodeSelector        types.Map      `tfsdk:"node_selector"`
	Tolerations         types.List     `tfsdk:"tolerations"`
	ShmSizeMB           types.Int64    `tfsdk:"shm_size_mb"`
	ModelCache          types.Object   `tfsdk:"model_cache"`
	Environment         types.Map      `tfsdk:"environment"`
	ServiceType         types.String   `tfsdk:"service_type"`
	ServicePort         types.Int64    `tfsdk:"service_port"`
	Labels              types.Map      `tfsdk:"labels"`
	Annotations         types.Map      `tfsdk:"annotations"`
	PodAccess           types.String   `tfsdk:"pod_access"`
	Timeouts            timeouts.Value `tfsdk:"timeouts"`
}

type tolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

var tolerationAttrTypes = map[string]attr.Type{
	"key": types.StringType, "operator": types.StringType, "value": types.StringType,
	"effect": types.StringType, "toleration_seconds": types.Int64Type,
}

type modelCacheModel struct {
	HostPath  types.String `tfsdk:"host_path"`
	ClaimName types.String `tfsdk:"claim_name"`
	MountPath types.String `tfsdk:"mount_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

var modelCacheAttrTypes = map[string]attr.Type{
	"host_path": types.StringType, "claim_name": types.StringType, "mount_path": types.StringType, "read_only": types.BoolType,
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
	shared := engineSettingsAttributes()
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
			"SGLang's and vLLM's prefix-cache flush is an HTTP call that the Service hands to one replica; with several replicas the benchmark warns that the others keep their caches.",
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
			"accelerator_resource": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.String{acceleratorResourceDefault{}, stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "Extended resource each replica requests from the device plugin, e.g. `nvidia.com/gpu`, `gpu.intel.com/i915` or `gpu.intel.com/xe`. " +
					"Defaults from `accelerator`: `cuda` → `nvidia.com/gpu`, `xpu` → `gpu.intel.com/i915`, `cpu` → none (empty string)."},
			"accelerator_count": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{acceleratorCountDefault{}, int64planmodifier.RequiresReplace()},
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: "Accelerators per replica; `tensor_parallel_size` when omitted (0 without an `accelerator_resource`)."},
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Node labels a replica's node must carry, e.g. `{\"gpu.intel.com/family\" = \"B70\"}`."},
			"tolerations": schema.ListNestedAttribute{Optional: true, PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
				MarkdownDescription: "Taints the pods tolerate, as in a pod spec (GPU nodes are often tainted).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":                schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; empty with `Exists` matches every taint."},
					"operator":           schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf("Equal", "Exists")}, MarkdownDescription: "`Equal` (Kubernetes' default) or `Exists`."},
					"value":              schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value, with `Equal`."},
					"effect":             schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")}, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; every effect when omitted."},
					"toleration_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "How long a `NoExecute` taint is tolerated."},
				}}},
			"shm_size_mb": schema.Int64Attribute{Optional: true, PlanModifiers: replaceInt,
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Size of a memory-backed `emptyDir` mounted at `/dev/shm`, in MiB (tensor-parallel workers exchange tensors there; the runtime's default is 64 MiB). It counts against the pod's memory."},
			"model_cache": schema.SingleNestedAttribute{Optional: true,
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
				}},
			"environment": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Environment variables of the engine container. Stored in state and the pod spec: put secrets in `hub_token_wo` / `api_key_wo`."},
			"service_type": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("ClusterIP"),
				Validators:          []validator.String{stringvalidator.OneOf("ClusterIP", "NodePort", "LoadBalancer")},
				MarkdownDescription: "Service type, changed in place. `endpoint` is the cluster IP (`ClusterIP`, default: reachable inside the cluster), a node's address and node port (`NodePort`) or the load balancer's address (`LoadBalancer`)."},
			"service_port": schema.Int64Attribute{Optional: true, Computed: true, PlanModifiers: []planmodifier.Int64{servicePortDefault{}},
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "Port the Service listens on, changed in place; the engine's `port` when omitted."},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Labels on the Deployment, Service, Secret and pods. The provider adds `app.kubernetes.io/managed-by`, `app.kubernetes.io/name` and `app.kubernetes.io/instance`."},
			"annotations": schema.MapAttribute{ElementType: types.StringType, Optional: true, PlanModifiers: replaceMap,
				MarkdownDescription: "Annotations on the Deployment, Service, Secret and pods. The provider adds `" + kubernetes.RecordAnnotation + "` to the Deployment (the launch record import reads)."},
			"pod_access": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(kubernetes.APIProxy)),
				Validators:          []validator.String{stringvalidator.OneOf(enumStrings(kubernetes.Accesses)...)},
				MarkdownDescription: "How this machine reaches each replica for the generation check: `api_proxy` (default; the API server's pod proxy, with the provider's credentials) or `pod_network` (the pod IPs directly, for runners inside the cluster network). The API server consumes the `Authorization` header, so `api_key_wo` needs `pod_network`."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		}),
	}
}

func (r *inferenceDeploymentResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("expected *providerData, got %T; this is a provider bug, please report it", req.ProviderData))
		return
	}
	r.kube = data.kubernetes
}

func (r *inferenceDeploymentResource) cluster() (*kubernetes.Cluster, diag.Diagnostics) {
	var diags diag.Diagnostics
	if r.kube == nil {
		diags.AddError("Provider not configured", "the llmserve provider has no Kubernetes configuration; this is a provider bug, please report it")
		return nil, diags
	}
	c, err := r.kube.Cluster()
	if err != nil {
		diags.AddError("Cannot use the Kubernetes cluster", err.Error()+"\n\nConfigure the provider's kubernetes block (config_path, or host with a token or client certificate).")
	}
	return c, diags
}

func (r *inferenceDeploymentResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m inferenceDeploymentModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.specKnown() {
		_, diags := m.validateSpec(ctx)
		resp.Diagnostics.Append(diags...)
	}
	resp.Diagnostics.Append(readinessBeyondTimeouts(ctx, m.ReadinessTimeout, map[string]time.Duration{
		"create": configuredTimeout(m.Timeouts, "create", defaultServerCreateTimeout),
		"update": configuredTimeout(m.Timeouts, "update", defaultServerUpdateTimeout),
	})...)
	var access types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("pod_access"), &access)...)
	var apiKey types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("api_key_wo"), &apiKey)...)
	if !apiKey.IsNull() && !access.IsUnknown() && (access.IsNull() || access.ValueString() == string(kubernetes.APIProxy)) {
		resp.Diagnostics.AddAttributeError(path.Root("pod_access"), "api_key_wo needs pod_access = \"pod_network\"",
			"The API server's pod proxy consumes the Authorization header, so the generation check cannot present the engine's API key through it. "+
				"Set pod_access = \"pod_network\" and run Terraform where the pod IPs are reachable, or drop api_key_wo and protect the Service with a NetworkPolicy.")
	}
}

// ModifyPlan shows a new deployment's launch command at plan (from the function Create
// uses), and marks the endpoint unknown when a Service change moves it.
func (r *inferenceDeploymentResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	if req.State.Raw.IsNull() {
		var plan inferenceDeploymentModel
		resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
		if resp.Diagnostics.HasError() || !plan.specKnown() {
			return
		}
		spec, diags := plan.spec(ctx)
		if diags.HasError() || len(spec.Validate()) > 0 {
			return // ValidateConfig reports it
		}
		resp.Diagnostics.Append(plan.setCommand(ctx, spec)...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("command"), plan.Command)...)
		return
	}
	var plan, state inferenceDeploymentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	changed := !plan.ServiceType.Equal(state.ServiceType) || !plan.ServicePort.Equal(state.ServicePort)
	// A NodePort endpoint names a node running a replica, which a rollout may move.
	if changed || (plan.ServiceType.ValueString() == "NodePort" && !plan.Replicas.Equal(state.Replicas)) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint"), types.StringUnknown())...)
	}
	// The experiment records the replica count.
	if !plan.Replicas.Equal(state.Replicas) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("experiment"), types.ObjectUnknown(experimentAttrTypes))...)
	}
}

// deployment translates the placement attributes. Callers make sure values are known.
func (m inferenceDeploymentModel) deployment(ctx context.Context, spec engine.Spec) (kubernetes.Deployment, diag.Diagnostics) {
	var diags diag.Diagnostics
	timeout, _ := time.ParseDuration(m.ReadinessTimeout.ValueString()) // validated at plan time
	d := kubernetes.Deployment{
		Name: m.Name.ValueString(), Namespace: m.Namespace.ValueString(), Image: m.Image.ValueString(),
		Replicas:            int32(m.Replicas.ValueInt64()),
		AcceleratorResource: m.AcceleratorResource.ValueString(), AcceleratorCount: m.AcceleratorCount.ValueInt64(),
		ShmSizeBytes: m.ShmSizeMB.ValueInt64() << 20,
		ServiceType:  m.ServiceType.ValueString(), ServicePort: int32(m.ServicePort.ValueInt64()),
		ReadinessTimeoutSeconds: int64(timeout / time.Second),
		Meta:                    map[string]string{metaReadiness: m.ReadinessTimeout.ValueString(), metaPodAccess: m.PodAccess.ValueString()},
	}
	if d.ServicePort == 0 {
		d.ServicePort = int32(spec.Port)
	}
	if !m.SecretsVersion.IsNull() {
		d.Meta[metaSecrets] = m.SecretsVersion.ValueString()
	}
	diags.Append(m.NodeSelector.ElementsAs(ctx, &d.NodeSelector, false)...)
	diags.Append(m.Environment.ElementsAs(ctx, &d.Env, false)...)
	diags.Append(m.Labels.ElementsAs(ctx, &d.Labels, false)...)
	diags.Append(m.Annotations.ElementsAs(ctx, &d.Annotations, false)...)
	var tols []tolerationModel
	diags.Append(m.Tolerations.ElementsAs(ctx, &tols, false)...)
	for _, t := range tols {
		kt := kubernetes.Toleration{Key: t.Key.ValueString(), Operator: t.Operator.ValueString(), Value: t.Value.ValueString(), Effect: t.Effect.ValueString()}
		if !t.TolerationSeconds.IsNull() {
			s := t.TolerationSeconds.ValueInt64()
			kt.TolerationSeconds = &s
		}
		d.Tolerations = append(d.Tolerations, kt)
	}
	if !m.ModelCache.IsNull() {
		var mc modelCacheModel
		diags.Append(m.ModelCache.As(ctx, &mc, basetypes.ObjectAsOptions{})...)
		d.ModelCache = &kubernetes.ModelCache{HostPath: mc.HostPath.ValueString(), ClaimName: mc.ClaimName.ValueString(),
			MountPath: mc.MountPath.ValueString(), ReadOnly: mc.ReadOnly.ValueBool()}
	}
	return d, diags
}

func (m inferenceDeploymentModel) access() kubernetes.Access {
	return kubernetes.Access(orString(m.PodAccess.ValueString(), string(kubernetes.APIProxy)))
}

// rollOut applies the objects, waits for the rollout and proves every replica generates;
// create and update share it.
func (r *inferenceDeploymentResource) rollOut(ctx context.Context, c *kubernetes.Cluster, plan, config inferenceDeploymentModel) (engine.Spec, kubernetes.Deployment, engine.ServerInfo, diag.Diagnostics) {
	spec, diags := plan.validateSpec(ctx)
	if diags.HasError() {
		return spec, kubernetes.Deployment{}, engine.ServerInfo{}, diags
	}
	d, dd := plan.deployment(ctx, spec)
	diags.Append(dd...)
	if diags.HasError() {
		return spec, d, engine.ServerInfo{}, diags
	}
	secrets := config.secrets()
	ready := plan.readiness(spec, secrets)
	if err := c.Apply(ctx, d, spec, secrets); err != nil {
		diags.AddError("Cannot apply the inference deployment", err.Error())
		return spec, d, engine.ServerInfo{}, diags
	}
	rolloutCtx, cancel := context.WithTimeout(ctx, ready.Timeout)
	defer cancel()
	if err := c.WaitRollout(rolloutCtx, d, ready.Redact); err != nil {
		diags.AddError("Inference deployment did not roll out", err.Error())
		return spec, d, engine.ServerInfo{}, diags
	}
	info, _, err := c.ProveGenerates(ctx, d, spec.Port, plan.access(), ready)
	if err != nil {
		diags.AddError("Inference deployment does not generate on every replica", err.Error())
	}
	return spec, d, info, diags
}

func (r *inferenceDeploymentResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config inferenceDeploymentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultServerCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, diags := r.cluster()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	owned := kubernetes.Deployment{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	if err := c.CheckOwnership(ctx, owned); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Name taken in the cluster", err.Error())
		return
	}
	spec, d, info, diags := r.rollOut(ctx, c, plan, config)
	if diags.HasError() {
		resp.Diagnostics.Append(diags...)
		if d.Name == "" {
			return
		}
		// Nothing of a failed create stays behind: state would not know about it.
		delCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := c.Delete(delCtx, d); err != nil {
			resp.Diagnostics.AddError("Cannot remove the failed inference deployment", err.Error()+"\n\nRemove the Deployment, Service and Secret by hand.")
		}
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
		diags.AddError("Cannot read the inference deployment after rollout", err.Error())
		return diags
	}
	m.ID = types.StringValue(d.Namespace + "/" + d.Name)
	m.Replicas = types.Int64Value(int64(st.Replicas))
	m.ServicePort = types.Int64Value(int64(d.ServicePort))
	diags.Append(m.setStatus(ctx, spec, st)...)
	exp := m.experiment(spec, st.ImageDigest, info)
	exp.Replicas = int(st.Replicas)
	diags.Append(m.setExperiment(ctx, exp, info)...)
	return diags
}

func (m *inferenceDeploymentModel) setStatus(ctx context.Context, spec engine.Spec, st kubernetes.Status) diag.Diagnostics {
	m.Endpoint = types.StringValue(st.Endpoint)
	m.ImageDigest = types.StringValue(st.ImageDigest)
	return m.setCommand(ctx, spec)
}

func (r *inferenceDeploymentResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state inferenceDeploymentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, diags := r.cluster()
	resp.Diagnostics.Append(diags...)
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
		resp.Diagnostics.AddError("Cannot read inference deployment", err.Error())
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
		infoCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info := engine.ServerInfo{}
		if reps, err := c.Replicas(infoCtx, rec.Deployment, rec.Spec.Port, state.access()); err == nil && len(reps) > 0 {
			info = deploy.ReadServerInfo(infoCtx, reps[0].Base, deploy.Readiness{Engine: rec.Spec.Engine, HTTPClient: reps[0].Client})
		}
		cancel()
		exp := state.experiment(rec.Spec, st.ImageDigest, info)
		exp.Replicas = int(st.Replicas)
		resp.Diagnostics.Append(state.setExperiment(ctx, exp, info)...)
	}
	state.Replicas = types.Int64Value(int64(st.Replicas))
	resp.Diagnostics.Append(state.setStatus(ctx, rec.Spec, st)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *inferenceDeploymentResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state, config inferenceDeploymentModel
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
	c, diags := r.cluster()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, d, info, diags := r.rollOut(ctx, c, plan, config)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
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
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultServerDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, diags := r.cluster()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := c.Delete(ctx, kubernetes.Deployment{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}); err != nil {
		resp.Diagnostics.AddError("Cannot remove inference deployment", err.Error())
	}
}

// ImportState takes namespace/name; Read fills everything else from the Deployment's
// launch record.
func (r *inferenceDeploymentResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if _, _, err := splitID(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid import id", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("timeouts"), timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
		"create": types.StringType, "update": types.StringType, "delete": types.StringType,
	})})...)
}

func splitID(id string) (string, string, error) {
	ns, name, ok := strings.Cut(id, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("want namespace/name (e.g. default/llama), got %q", id)
	}
	return ns, name, nil
}

// fromRecord fills an imported deployment's configuration from its launch record.
func (m *inferenceDeploymentModel) fromRecord(ctx context.Context, rec kubernetes.LaunchRecord) diag.Diagnostics {
	d := rec.Deployment
	diags := m.fromSpec(ctx, d.Image, rec.Spec, d.Meta[metaSecrets], d.Meta[metaReadiness])
	mp := func(vs map[string]string) types.Map {
		if len(vs) == 0 {
			return types.MapNull(types.StringType)
		}
		v, dd := types.MapValueFrom(ctx, types.StringType, vs)
		diags.Append(dd...)
		return v
	}
	m.Name, m.Namespace = types.StringValue(d.Name), types.StringValue(d.Namespace)
	m.AcceleratorResource, m.AcceleratorCount = types.StringValue(d.AcceleratorResource), types.Int64Value(d.AcceleratorCount)
	m.NodeSelector, m.Environment, m.Labels, m.Annotations = mp(d.NodeSelector), mp(d.Env), mp(d.Labels), mp(d.Annotations)
	m.ShmSizeMB = nullableInt(int(d.ShmSizeBytes >> 20))
	m.ServiceType, m.ServicePort = types.StringValue(d.ServiceType), types.Int64Value(int64(d.ServicePort))
	m.PodAccess = types.StringValue(orString(d.Meta[metaPodAccess], string(kubernetes.APIProxy)))
	m.Tolerations = types.ListNull(types.ObjectType{AttrTypes: tolerationAttrTypes})
	if len(d.Tolerations) > 0 {
		var tols []tolerationModel
		for _, t := range d.Tolerations {
			tm := tolerationModel{Key: nullableString(t.Key), Operator: nullableString(t.Operator), Value: nullableString(t.Value),
				Effect: nullableString(t.Effect), TolerationSeconds: types.Int64Null()}
			if t.TolerationSeconds != nil {
				tm.TolerationSeconds = types.Int64Value(*t.TolerationSeconds)
			}
			tols = append(tols, tm)
		}
		v, dd := types.ListValueFrom(ctx, types.ObjectType{AttrTypes: tolerationAttrTypes}, tols)
		diags.Append(dd...)
		m.Tolerations = v
	}
	m.ModelCache = types.ObjectNull(modelCacheAttrTypes)
	if mc := d.ModelCache; mc != nil {
		ro := types.BoolNull()
		if mc.ReadOnly {
			ro = types.BoolValue(true)
		}
		v, dd := types.ObjectValueFrom(ctx, modelCacheAttrTypes, modelCacheModel{HostPath: nullableString(mc.HostPath),
			ClaimName: nullableString(mc.ClaimName), MountPath: types.StringValue(mc.MountPath), ReadOnly: ro})
		diags.Append(dd...)
		m.ModelCache = v
	}
	return diags
}

// acceleratorResourceDefault fills an omitted accelerator_resource from accelerator, so the
// plan shows what each replica requests.
type acceleratorResourceDefault struct{}

func (acceleratorResourceDefault) Description(context.Context) string {
	return "defaults from accelerator: cuda nvidia.com/gpu, xpu gpu.intel.com/i915, cpu none"
}
func (d acceleratorResourceDefault) MarkdownDescription(ctx context.Context) string {
	return d.Description(ctx)
}
func (acceleratorResourceDefault) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var accel types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("accelerator"), &accel)...)
	if accel.IsUnknown() {
		return
	}
	resp.PlanValue = types.StringValue(kubernetes.DefaultAcceleratorResource(engine.Accelerator(orString(accel.ValueString(), string(engine.CPU)))))
}

// acceleratorCountDefault fills an omitted accelerator_count with tensor_parallel_size (one
// accelerator per tensor-parallel rank), or 0 when no accelerator resource is requested.
type acceleratorCountDefault struct{}

func (acceleratorCountDefault) Description(context.Context) string {
	return "defaults to tensor_parallel_size, or 0 without an accelerator resource"
}
func (d acceleratorCountDefault) MarkdownDescription(ctx context.Context) string {
	return d.Description(ctx)
}
func (acceleratorCountDefault) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var res, accel types.String
	var tp types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("accelerator_resource"), &res)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("accelerator"), &accel)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("tensor_parallel_size"), &tp)...)
	if res.IsUnknown() || accel.IsUnknown() || tp.IsUnknown() {
		return
	}
	name := res.ValueString()
	if res.IsNull() {
		name = kubernetes.DefaultAcceleratorResource(engine.Accelerator(orString(accel.ValueString(), string(engine.CPU))))
	}
	if name == "" {
		resp.PlanValue = types.Int64Value(0)
		return
	}
	resp.PlanValue = types.Int64Value(1)
	if !tp.IsNull() {
		resp.PlanValue = types.Int64Value(max(tp.ValueInt64(), 1))
	}
}

// servicePortDefault fills an omitted service_port with the engine's port.
type servicePortDefault struct{}

func (servicePortDefault) Description(context.Context) string { return "defaults to port" }
func (d servicePortDefault) MarkdownDescription(ctx context.Context) string {
	return d.Description(ctx)
}
func (servicePortDefault) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var port types.Int64
	var name types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("port"), &port)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("engine"), &name)...)
	switch {
	case port.IsUnknown():
	case !port.IsNull():
		resp.PlanValue = port
	case !name.IsUnknown() && !name.IsNull():
		resp.PlanValue = types.Int64Value(int64(engine.DefaultPort(engine.Name(name.ValueString()))))
	}
}
