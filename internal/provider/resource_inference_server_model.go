package provider

// llmserve_inference_server's model and its translation: to the engine spec and the container's
// placement, and back from what the engine host reports and from a container's launch record.

import (
	"cmp"
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

type inferenceServerModel struct {
	engineResourceModel

	ModelHostPath    types.String `tfsdk:"model_host_path"`
	GPUIDs           types.List   `tfsdk:"gpu_ids"`
	GroupAdd         types.List   `tfsdk:"group_add"`
	Devices          types.List   `tfsdk:"devices"`
	HostPort         types.Int64  `tfsdk:"host_port"`
	BindAddress      types.String `tfsdk:"bind_address"`
	NetworkMode      types.String `tfsdk:"network_mode"`
	Publish          types.Bool   `tfsdk:"publish"`
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

// metaReadiness and metaSecrets keep Terraform-only settings in the container's launch
// record so an import restores them.
const (
	metaReadiness = "readiness_timeout"
	metaSecrets   = "secrets_version"
)

// hostNetwork says whether the container shares the host's network namespace
// (network_mode = "host"): nothing is published and the engine binds bind_address itself.
func (m inferenceServerModel) hostNetwork() bool { return m.NetworkMode.ValueString() == "host" }

// unpublished says whether the server publishes nothing (publish = false).
func (m inferenceServerModel) unpublished() bool {
	return !m.Publish.IsNull() && !m.Publish.IsUnknown() && !m.Publish.ValueBool()
}

// launchSpec is the engine settings' launch spec as this resource runs it, listening where
// its placement says (deploy.Placement.ListenAddress: bind_address with host networking).
func (m inferenceServerModel) launchSpec(ctx context.Context) (engine.Spec, diag.Diagnostics) {
	spec, diags := m.spec(ctx)
	if !m.BindAddress.IsUnknown() {
		spec.ListenAddress = deploy.Placement{BindAddress: m.BindAddress.ValueString(), HostNetwork: m.hostNetwork(), Unpublished: m.unpublished()}.ListenAddress()
	}
	return spec, diags
}

// translate turns the planned model into the engine spec, the container to launch and how
// to wait for it. Values unknown at plan are checked here, by the same rules, before anything
// is created.
func (m inferenceServerModel) translate(ctx context.Context, config inferenceServerModel) (engine.Spec, deploy.Container, deploy.Readiness, diag.Diagnostics) {
	spec, diags := m.launchSpec(ctx)
	placement, d := m.placement(ctx)
	diags.Append(d...)
	if diags.HasError() {
		return spec, deploy.Container{}, deploy.Readiness{}, diags
	}
	if problems := append(append(spec.Validate(), spec.CheckStrings()...), placement.Validate(spec)...); len(problems) > 0 {
		diags.Append(problemDiagnostics(problems, serverProblem, nil, false)...)
		return spec, deploy.Container{}, deploy.Readiness{}, diags
	}
	secrets := config.secrets()
	c, err := deploy.NewContainer(spec, placement, secrets)
	if err != nil {
		diags.AddError("Invalid inference server", err.Error())
		return spec, deploy.Container{}, deploy.Readiness{}, diags
	}
	return spec, c, m.readiness(spec, secrets), diags
}

// placementKnown says whether every container setting is known, including each element of
// its lists and maps.
func (m inferenceServerModel) placementKnown() bool {
	for _, v := range []attr.Value{m.Name, m.Image, m.ModelHostPath, m.HostPort, m.BindAddress, m.NetworkMode, m.Publish, m.ShmSizeMB,
		m.RestartPolicy, m.StopGraceSeconds, m.ReadinessTimeout, m.SecretsVersion, m.Environment, m.Labels, m.GroupAdd, m.Devices, m.GPUIDs, m.Mounts} {
		if !fullyKnown(v) {
			return false
		}
	}
	return true
}

func (m inferenceServerModel) specKnown() bool {
	return m.engineSettings.specKnown() && !m.ModelHostPath.IsUnknown()
}

// inPlace is what Update changes without replacing the container.
func (m inferenceServerModel) inPlace() deploy.InPlace {
	return deploy.InPlace{
		Running: m.Running.ValueBool(), RestartPolicy: m.RestartPolicy.ValueString(),
		StopTimeoutSeconds: int(m.StopGraceSeconds.ValueInt64()),
		Meta:               map[string]string{metaReadiness: m.ReadinessTimeout.ValueString()},
	}
}

func (m inferenceServerModel) placement(ctx context.Context) (deploy.Placement, diag.Diagnostics) {
	var diags diag.Diagnostics
	p := deploy.Placement{
		Name:               m.Name.ValueString(),
		Image:              m.Image.ValueString(),
		ModelHostPath:      m.ModelHostPath.ValueString(),
		HostPort:           int(m.HostPort.ValueInt64()),
		BindAddress:        m.BindAddress.ValueString(),
		HostNetwork:        m.hostNetwork(),
		Unpublished:        m.unpublished(),
		ShmSizeBytes:       m.ShmSizeMB.ValueInt64() << 20,
		RestartPolicy:      m.RestartPolicy.ValueString(),
		StopTimeoutSeconds: int(m.StopGraceSeconds.ValueInt64()),
		Meta:               map[string]string{metaReadiness: m.ReadinessTimeout.ValueString()},
	}
	if !m.SecretsVersion.IsNull() {
		p.Meta[metaSecrets] = m.SecretsVersion.ValueString()
	}
	diags.Append(stringMapOf(ctx, path.Root("environment"), m.Environment, &p.Env)...)
	diags.Append(stringMapOf(ctx, path.Root("labels"), m.Labels, &p.Labels)...)
	diags.Append(stringsOf(ctx, path.Root("group_add"), m.GroupAdd, &p.GroupAdd)...)
	diags.Append(stringsOf(ctx, path.Root("gpu_ids"), m.GPUIDs, &p.GPUIDs)...)
	diags.Append(stringsOf(ctx, path.Root("devices"), m.Devices, &p.Devices)...)
	if !m.Devices.IsNull() && p.Devices == nil {
		p.Devices = []string{} // configured empty: map no device, recorded as []
	}
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
	switch {
	case st.Unpublished:
		m.HostPort = types.Int64Null()
	case st.HostPort != 0 || m.HostPort.IsUnknown():
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

// recordExperiment records the deployment for results, with the engine host's kernel and
// the devices the probe found (deploy.Hardware), or the accelerator family. A kernel or device
// the host does not report is no failure.
func (m *inferenceServerModel) recordExperiment(ctx context.Context, b *docker.Backend, spec engine.Spec, st deploy.Status, info engine.ServerInfo) diag.Diagnostics {
	exp := m.experiment(spec, st.ImageDigest, info)
	kernel, _ := b.KernelVersion(ctx)
	exp.Kernel, exp.Hardware = kernel, cmp.Or(deploy.Hardware(ctx, b, st.ID, spec), exp.Hardware)
	return m.setExperiment(ctx, exp, info)
}

// fromRecord fills the configuration of an imported container from its launch record,
// writing null where the record holds the zero value so an unset attribute stays unset.
func (m *inferenceServerModel) fromRecord(ctx context.Context, rec deploy.LaunchRecord) diag.Diagnostics {
	s, p := rec.Spec, rec.Placement
	diags := m.fromSpec(ctx, p.Image, s, p.Meta[metaSecrets], p.Meta[metaReadiness])
	m.Name, m.ModelHostPath = types.StringValue(p.Name), nullableString(p.ModelHostPath)
	m.GPUIDs, m.GroupAdd = stringList(ctx, p.GPUIDs, &diags), stringList(ctx, p.GroupAdd, &diags)
	m.Devices = stringList(ctx, p.Devices, &diags)
	m.ShmSizeMB = nullableInt(int(p.ShmSizeBytes >> 20))
	m.BindAddress = types.StringValue(orString(p.BindAddress, "127.0.0.1"))
	m.NetworkMode = types.StringValue("bridge")
	m.Publish = types.BoolValue(!p.Unpublished)
	if p.HostNetwork {
		m.NetworkMode = types.StringValue("host")
	}
	m.Environment, m.Labels = stringMap(ctx, p.Env, &diags), stringMap(ctx, p.Labels, &diags)
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
