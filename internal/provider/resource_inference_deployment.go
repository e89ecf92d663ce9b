package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// NewInferenceDeploymentResource is the llmserve_inference_deployment resource.
func NewInferenceDeploymentResource() resource.Resource { return &inferenceDeploymentResource{} }

type inferenceDeploymentResource struct {
	engineResource
}

func (r *inferenceDeploymentResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inference_deployment"
}

// cluster connects to the provider's Kubernetes cluster.
func (r *inferenceDeploymentResource) cluster(diags *diag.Diagnostics) *kubernetes.Cluster {
	return connect(r.provider, diags, "Kubernetes", "Cannot use the Kubernetes cluster",
		"\n\nConfigure the provider's kubernetes block (config_path, or host with a token or client certificate).",
		func(p *providerData) (*kubernetes.Cluster, error) { return p.kubernetes.Cluster() })
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
