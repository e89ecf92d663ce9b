package provider

// llmserve_inference_deployment's model and its translation: to the engine spec and the
// Kubernetes Deployment, and back from what the cluster reports and from a launch record.

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

type inferenceDeploymentModel struct {
	engineResourceModel

	Namespace           types.String `tfsdk:"namespace"`
	Replicas            types.Int64  `tfsdk:"replicas"`
	AcceleratorResource types.String `tfsdk:"accelerator_resource"`
	AcceleratorCount    types.Int64  `tfsdk:"accelerator_count"`
	AcceleratorClaim    types.Object `tfsdk:"accelerator_claim"`
	GPUIDs              types.List   `tfsdk:"gpu_ids"`
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

type modelCacheModel struct {
	HostPath  types.String `tfsdk:"host_path"`
	ClaimName types.String `tfsdk:"claim_name"`
	MountPath types.String `tfsdk:"mount_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
}

var modelCacheAttrTypes = objectAttrTypes(modelCacheAttribute())

type acceleratorClaimModel struct {
	DeviceClass types.String `tfsdk:"device_class"`
	Count       types.Int64  `tfsdk:"count"`
	Selectors   types.List   `tfsdk:"selectors"`
}

var acceleratorClaimAttrTypes = objectAttrTypes(acceleratorClaimAttribute())

const metaPodAccess = "pod_access"

// translate turns the planned model into the engine spec, the deployment and how to wait
// for it; create and update share it.
func (m inferenceDeploymentModel) translate(ctx context.Context, config inferenceDeploymentModel) (engine.Spec, kubernetes.Deployment, engine.Secrets, deploy.Readiness, diag.Diagnostics) {
	spec, diags := m.validateSpec(ctx, deploymentProblem)
	if diags.HasError() {
		return spec, kubernetes.Deployment{}, engine.Secrets{}, deploy.Readiness{}, diags
	}
	d, dd := m.deployment(ctx, spec)
	diags.Append(dd...)
	// Values unknown at plan are checked here, by the same rules, before anything is applied.
	diags.Append(problemDiagnostics(d.Validate(spec), deploymentProblem, nil, false)...)
	if diags.HasError() {
		return spec, d, engine.Secrets{}, deploy.Readiness{}, diags
	}
	secrets := config.secrets()
	return spec, d, secrets, m.readiness(spec, secrets), diags
}

// deployment translates the placement attributes. Callers make sure values are known.
func (m inferenceDeploymentModel) deployment(ctx context.Context, spec engine.Spec) (kubernetes.Deployment, diag.Diagnostics) {
	var diags diag.Diagnostics
	timeout, _ := m.readinessTimeout() // validated at plan time
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
	diags.Append(stringMapOf(ctx, path.Root("node_selector"), m.NodeSelector, &d.NodeSelector)...)
	diags.Append(stringMapOf(ctx, path.Root("environment"), m.Environment, &d.Env)...)
	diags.Append(stringMapOf(ctx, path.Root("labels"), m.Labels, &d.Labels)...)
	diags.Append(stringMapOf(ctx, path.Root("annotations"), m.Annotations, &d.Annotations)...)
	var tolDiags diag.Diagnostics
	d.Tolerations, tolDiags = kubernetesTolerations(ctx, m.Tolerations)
	diags.Append(tolDiags...)
	diags.Append(stringsOf(ctx, path.Root("gpu_ids"), m.GPUIDs, &d.GPUIDs)...)
	if !m.AcceleratorClaim.IsNull() {
		var ac acceleratorClaimModel
		diags.Append(m.AcceleratorClaim.As(ctx, &ac, basetypes.ObjectAsOptions{})...)
		d.AcceleratorClaim = &kubernetes.AcceleratorClaim{DeviceClass: ac.DeviceClass.ValueString(), Count: ac.Count.ValueInt64()}
		diags.Append(stringsOf(ctx, path.Root("accelerator_claim").AtName("selectors"), ac.Selectors, &d.AcceleratorClaim.Selectors)...)
	}
	if !m.ModelCache.IsNull() {
		var mc modelCacheModel
		diags.Append(m.ModelCache.As(ctx, &mc, basetypes.ObjectAsOptions{})...)
		d.ModelCache = &kubernetes.ModelCache{HostPath: mc.HostPath.ValueString(), ClaimName: mc.ClaimName.ValueString(),
			MountPath: mc.MountPath.ValueString(), ReadOnly: mc.ReadOnly.ValueBool()}
	}
	return d, diags
}

// placementKnown says whether every value Deployment.Validate reads is known.
func (m inferenceDeploymentModel) placementKnown() bool {
	for _, v := range []attr.Value{m.Name, m.Namespace, m.Image, m.Replicas, m.AcceleratorResource, m.AcceleratorCount, m.AcceleratorClaim, m.GPUIDs, m.NodeSelector, m.Tolerations,
		m.ShmSizeMB, m.ModelCache, m.Environment, m.ServiceType, m.ServicePort, m.Labels, m.Annotations, m.ReadinessTimeout, m.SecretsVersion, m.PodAccess} {
		if !fullyKnown(v) {
			return false
		}
	}
	return true
}

func (m inferenceDeploymentModel) access() kubernetes.Access {
	return kubernetes.Access(orString(m.PodAccess.ValueString(), string(kubernetes.APIProxy)))
}

func (m *inferenceDeploymentModel) setStatus(ctx context.Context, spec engine.Spec, st kubernetes.Status) diag.Diagnostics {
	m.Endpoint = types.StringValue(st.Endpoint)
	m.ImageDigest = types.StringValue(st.ImageDigest)
	return m.setCommand(ctx, spec)
}

// recordExperiment records the deployment for results, with the replicas the cluster runs.
func (m *inferenceDeploymentModel) recordExperiment(ctx context.Context, spec engine.Spec, st kubernetes.Status, info engine.ServerInfo) diag.Diagnostics {
	exp := m.experiment(spec, st.ImageDigest, info)
	exp.Replicas = int(st.Replicas)
	return m.setExperiment(ctx, exp, info)
}

// fromRecord fills an imported deployment's configuration from its launch record.
func (m *inferenceDeploymentModel) fromRecord(ctx context.Context, rec kubernetes.LaunchRecord) diag.Diagnostics {
	d := rec.Deployment
	diags := m.fromSpec(ctx, d.Image, rec.Spec, d.Meta[metaSecrets], d.Meta[metaReadiness])
	m.Name, m.Namespace = types.StringValue(d.Name), types.StringValue(d.Namespace)
	m.AcceleratorResource, m.AcceleratorCount = types.StringValue(d.AcceleratorResource), types.Int64Value(d.AcceleratorCount)
	m.GPUIDs = stringList(ctx, d.GPUIDs, &diags)
	m.AcceleratorClaim = types.ObjectNull(acceleratorClaimAttrTypes)
	if a := d.AcceleratorClaim; a != nil {
		v, dd := types.ObjectValueFrom(ctx, acceleratorClaimAttrTypes, acceleratorClaimModel{DeviceClass: types.StringValue(a.DeviceClass),
			Count: nullableInt(int(a.Count)), Selectors: stringList(ctx, a.Selectors, &diags)})
		diags.Append(dd...)
		m.AcceleratorClaim = v
	}
	// The record omits empty maps, so {} reads back as unset, as it was stored.
	m.NodeSelector, m.Environment = stringMap(ctx, d.NodeSelector, &diags), stringMap(ctx, d.Env, &diags)
	m.Labels, m.Annotations = stringMap(ctx, d.Labels, &diags), stringMap(ctx, d.Annotations, &diags)
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

// kubernetesTolerations reads a tolerations attribute (tolerationsAttribute): a deployment's
// replicas and a runner Job take the same shape.
func kubernetesTolerations(ctx context.Context, l types.List) ([]kubernetes.Toleration, diag.Diagnostics) {
	var tols []tolerationModel
	diags := l.ElementsAs(ctx, &tols, false)
	var out []kubernetes.Toleration
	for _, t := range tols {
		kt := kubernetes.Toleration{Key: t.Key.ValueString(), Operator: t.Operator.ValueString(), Value: t.Value.ValueString(), Effect: t.Effect.ValueString()}
		if !t.TolerationSeconds.IsNull() {
			s := t.TolerationSeconds.ValueInt64()
			kt.TolerationSeconds = &s
		}
		out = append(out, kt)
	}
	return out, diags
}
