package provider

// The Kubernetes variant of where a benchmark's measurement runs (`runner.kubernetes`): a
// runner Job in the server's namespace, followed through the API server.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

func kubernetesRunnerAttribute() schema.Attribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "A runner Job in the cluster of the provider's `kubernetes` block, in the namespace of the server (`llmserve_inference_deployment` or any Service): " +
			"it reaches the Service's cluster IP and every pod IP of `replica_endpoints` from inside the cluster, so the Service can stay `ClusterIP` and `endpoint` is its in-cluster address " +
			"(`llmserve_inference_deployment.<name>.endpoint`). The provider reads the runner's events (every " + runner.KubePoll.String() + "), its result and its records through the API server's pod proxy " +
			"(or the pod network, `pod_access`), and creates nothing cluster-wide: a Secret holding the run's spec (API keys included, mounted as a file, never in the environment) and a Job, both labelled " +
			"`" + runner.KindLabel + "=kubernetes` with the run's key, removed once the result is collected or the benchmark destroyed. " +
			"The provider's identity needs, in the namespace: " + runner.KubeRBAC + "; the runner's pod needs none (no service account token is mounted). " +
			"Faults and their bounds: a runner image that cannot start (`ErrImagePull`, `CrashLoopBackOff`) fails the apply as soon as the pod says so; a pod no node accepts after " + runner.UnschedulableBound.String() +
			"; an API server that fails every request for " + runner.APILostBound.String() + " stops the apply while the runner goes on; each of the first two removes the Job. " +
			"Each request to the API server has its own bound of " + shortDuration(kubernetes.APICallTimeout) + " (`" + deploy.CallTimeoutEnv + "` replaces it): one not answered within it fails the apply naming the API server's address and the request. " +
			"A runner process that dies is restarted in its pod by the kubelet and resumes from its journal there; a pod that is lost takes its journal with it, and the next apply resumes from `progress_file`.",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{Required: true, Validators: []validator.String{printableValidator{}},
				MarkdownDescription: "Namespace of the runner Job: the server's (`llmserve_inference_deployment.<name>.namespace`); a DNS-1123 label, checked at plan."},
			"image": schema.StringAttribute{Required: true, Validators: []validator.String{printableValidator{}},
				MarkdownDescription: "The runner image of this provider version: the release publishes `ghcr.io/llmserve/llmserve-runner:<version>` (the provider's Linux binary as its entrypoint, FROM scratch); " +
					"a copy in a registry the cluster pulls from works the same. Checked at plan as the kubelet parses it (an image id alone is refused: no kubelet pulls one)."},
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Node labels the runner's pod must match (for example the server's node pool, to measure from next to it)."},
			"tolerations": tolerationsAttribute(),
			"pods": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "How many runner pods send every trial (default 1, at most " + strconv.Itoa(capacity.MaxPods) + "), for a load no one process holds (a fleet behind a gateway, hundreds of streams): an Indexed Job of that many pods at once, " +
					"each requesting 1 CPU and 256 MiB (or a namespace LimitRange's lower default limit, which then caps it). Pod 0 runs the search and hands each other pod its share of every trial over the pod network: " +
					"a closed loop's concurrency split as evenly as possible (7 over 3 pods: 3, 2, 2) and its requests in proportion; a users trial's users the same way; " +
					"an open-loop rate's one schedule dealt between the pods, by a seeded draw for `poisson` (each pod's arrivals are then an independent Poisson stream at rate/pods) and `gamma`, " +
					"in turn for `constant` (each pod a constant stream at rate/pods), so the arrivals the server meets are the configured process exactly; " +
					"a replayed trace by session (`session_id`), each session's requests in order on one pod. " +
					"No pod sends before every pod holds its share and said so; then all start at one instant set ahead (at least 50 ms, four round trips), and each trial records the start skew between the pods " +
					"and each pod's share (`pods` in `results_json`). Every pod's per-request records are merged into the one trial, its percentiles computed over all requests, never averaged across pods, " +
					"and each record says which pod sent it. A pod lost in a trial loses that trial, which is sent again once the pod answers; pod 0 waits " + runner.PeerWait.String() + " for a pod " +
					"(the provider tells it where the others are: the pods hold no API credentials), then stops the run with its trials kept. Pods no node accepts fail the apply naming how many. " +
					"Above 1, `trial.measured_requests` (and `arrival.max_in_flight`, when set) must be at least `pods`, and the provider's identity also needs `pods/proxy: create` (`api_proxy`)."},
			"pod_access": schema.StringAttribute{Optional: true,
				Validators:          []validator.String{stringvalidator.OneOf(enumStrings(kubernetes.Accesses)...)},
				MarkdownDescription: "How the provider reads the runner's pod: `api_proxy` (default; the API server's pod proxy, with the provider's credentials) or `pod_network` (the pod IP directly, where Terraform runs inside the cluster network)."},
		},
	}
}

// checkRunnerPlace refuses a runner with no place or two: it runs in one.
// checkRunnerPlacement applies Kubernetes' rules to the runner Job's node selector and
// tolerations at plan, as the deployment's own are (kubernetes.ValidatePlacement).
func checkRunnerPlacement(ctx context.Context, v types.Object, resp *resource.ValidateConfigResponse) {
	m, ok := kubernetesRunnerSettings(v)
	if !ok || m.NodeSelector.IsUnknown() || m.Tolerations.IsUnknown() {
		return
	}
	var selector map[string]string
	if d := m.NodeSelector.ElementsAs(ctx, &selector, false); d.HasError() {
		return // an unknown key or value: Terraform validates again once it is known
	}
	tols, d := kubernetesTolerations(ctx, m.Tolerations)
	if d.HasError() {
		return
	}
	at := attrpath.Root("runner").At("kubernetes")
	resp.Diagnostics.Append(problemDiagnostics(kubernetes.ValidatePlacement(at, selector, tols), "Invalid runner placement", nil, true)...)
}

func checkRunnerPlace(v types.Object, resp *resource.ValidateConfigResponse) {
	set := 0
	for _, name := range []string{"docker", "kubernetes"} {
		if o, ok := v.Attributes()[name].(types.Object); ok && !o.IsNull() {
			set++
		}
	}
	if set != 1 {
		resp.Diagnostics.AddAttributeError(path.Root("runner"), "Runner needs one place",
			"runner runs the measurement in one place: set exactly one of runner.docker (a container next to the server on its Docker Engine) and runner.kubernetes (a Job in the server's namespace); "+
				"remove runner to measure from where Terraform runs.")
	}
}

type kubernetesRunnerModel struct {
	Namespace    types.String `tfsdk:"namespace"`
	Image        types.String `tfsdk:"image"`
	NodeSelector types.Map    `tfsdk:"node_selector"`
	Tolerations  types.List   `tfsdk:"tolerations"`
	PodAccess    types.String `tfsdk:"pod_access"`
	Pods         types.Int64  `tfsdk:"pods"`
}

// kubernetesPlace runs the measurement in a runner Job in the cluster.
type kubernetesPlace struct {
	data *providerData
	m    kubernetesRunnerModel
}

// kubernetesRunnerSettings reads `runner.kubernetes`; ok is false when it is not set.
func kubernetesRunnerSettings(v types.Object) (kubernetesRunnerModel, bool) {
	var m kubernetesRunnerModel
	if v.IsNull() || v.IsUnknown() {
		return m, false
	}
	k, isObj := v.Attributes()["kubernetes"].(types.Object)
	if !isObj || k.IsNull() || k.IsUnknown() {
		return m, false
	}
	attrs := k.Attributes()
	m.Namespace, _ = attrs["namespace"].(types.String)
	m.Image, _ = attrs["image"].(types.String)
	m.NodeSelector, _ = attrs["node_selector"].(types.Map)
	m.Tolerations, _ = attrs["tolerations"].(types.List)
	m.PodAccess, _ = attrs["pod_access"].(types.String)
	m.Pods, _ = attrs["pods"].(types.Int64)
	return m, true
}

func (p kubernetesPlace) runner(ctx context.Context) (*runner.Kubernetes, error) {
	if p.data == nil || p.data.kubernetes == nil {
		return nil, errors.New("the provider is not configured with a Kubernetes cluster")
	}
	c, err := p.data.kubernetes.Cluster()
	if err != nil {
		return nil, fmt.Errorf("runner.kubernetes: %w", err)
	}
	k := &runner.Kubernetes{Cluster: c, Namespace: p.m.Namespace.ValueString(), Image: p.m.Image.ValueString(),
		Access: kubernetes.Access(orString(p.m.PodAccess.ValueString(), string(kubernetes.APIProxy)))}
	if d := p.m.NodeSelector.ElementsAs(ctx, &k.NodeSelector, false); d.HasError() {
		return nil, errors.New("runner.kubernetes.node_selector: not a map of strings")
	}
	tols, d := kubernetesTolerations(ctx, p.m.Tolerations)
	if d.HasError() {
		return nil, errors.New("runner.kubernetes.tolerations: not a list of tolerations")
	}
	for _, t := range tols {
		k.Tolerations = append(k.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds})
	}
	return k, nil
}

func (p kubernetesPlace) run(ctx context.Context, cfg capacity.Config, files capacity.Files) (capacity.Report, error) {
	k, err := p.runner(ctx)
	if err != nil {
		return capacity.Report{}, err
	}
	return runOnRunner(cfg, files, func(job runner.Job) (runner.Outcome, string, *results.Runner, error) {
		out, err := k.Run(ctx, job, cfg.Endpoint)
		return out, "the runner Job " + k.Namespace + "/" + out.Container, &results.Runner{Kind: "kubernetes", Host: k.Cluster.Host(), Network: out.Network}, err
	})
}

// remove removes the benchmark's runner Jobs (destroy).
func (p kubernetesPlace) remove(ctx context.Context, key string) error {
	k, err := p.runner(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return k.Remove(ctx, key)
}
