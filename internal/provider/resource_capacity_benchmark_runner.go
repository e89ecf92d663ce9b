package provider

// Where llmserve_capacity_benchmark's measurement runs: here, in the Terraform process, or
// next to the server (`runner`). Both places take the same capacity.Config and files and
// return the same capacity.Report, so Create reports a run the same wherever it ran.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

func benchmarkRunnerAttribute() schema.Attribute {
	return schema.SingleNestedAttribute{
		Optional:      true,
		PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
		MarkdownDescription: "Where the load runs. Unset: in the Terraform process, which must reach `endpoint`. " +
			"`docker`: in a runner container on the server's Docker Engine, reached through the provider's own connection (`docker_host`: the local socket, `tcp://` with TLS, `ssh://`), " +
			"sharing the network namespace of the server container (`container:<id>`): it reaches the server on the container's loopback, so the server needs to publish nothing to the network " +
			"and the figures do not depend on the link between Terraform and the engine host. `endpoint` is then the server's address as the runner sees it: `http://127.0.0.1:<port inside the container>`.\n\n" +
			"The runner is the provider's own binary (its `runner` mode) in an image built on the engine FROM scratch from nothing but that binary (`llmserve-runner:<binary hash>`, built once per provider build and engine, no registry), " +
			"or `image`. It does everything a local run does (flushes and idle waits, prompt fitting, load, scrapes, records); " +
			"`progress_file` and `progress_log` are mirrored where Terraform runs as the runner's lines arrive, and `records_directory` is copied back at the end. " +
			"The results document records where the load ran (`runner`).\n\n" +
			"`kubernetes`: in a runner Job in the server's namespace, in the cluster of the provider's `kubernetes` block; the same runner program, followed through the API server (below).\n\n" +
			"The runner is detached from Terraform: an apply interrupted (or out of `timeouts.create`) while it measures leaves it measuring; the next apply of the same configuration " +
			"attaches to it, collects its result if it finished meanwhile, or resumes from its journal if it died, so no trial is lost or measured twice. " +
			"A runner of another configuration of the same server is stopped and removed (one measurement per server at a time). The runner is removed once its result is collected; " +
			"destroying the benchmark removes any runner of it that is left. The API keys reach the runner in a file written into its container before it starts, which the runner deletes once read: " +
			"never in its environment, labels, logs or state.\n\n" +
			"Faults of the `docker` runner, each a diagnostic naming what failed and what is kept: a runner image that cannot be built for the engine (refused at plan when the engine answers then); " +
			"an image that cannot start (the apply fails, the runner container is removed); the engine host out of disk (no runner is started; the local `progress_file` and an ended runner with its journal are kept); " +
			"a runner killed or out of memory (its journal is kept in its stopped container and the next apply resumes from it); " +
			"the engine lost while the apply follows the runner (reported within " + shortDuration(runner.EngineLostWithin) + " of its last answer; the runner keeps measuring if the host is up, and the next apply attaches to it). " +
			dockerCallBounds() + " " +
			"A server that publishes nothing (`llmserve_inference_server` with `publish = false`) is measured this way, with `endpoint = llmserve_inference_server.<name>.endpoint`.\n\n" +
			"The runner dials `endpoint`, `replica_endpoints` and `telemetry_endpoints` from where it runs, and the plan warns where one cannot be the server there: a loopback address " +
			"(`127.0.0.1`, `localhost`, `::1`) with `kubernetes`, whose Job's pod holds the runner alone; a private or link-local IP with `docker`, which reaches the server on the shared namespace's loopback " +
			"(a private address is reached only through the engine's port publishing, which then enters every figure, and not at all with `publish = false`; it stays a warning because a gateway there can be meant). " +
			"Host names are not resolved at plan.",
		Attributes: map[string]schema.Attribute{
			"kubernetes": kubernetesRunnerAttribute(),
			"docker": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "A runner container on the server's Docker Engine.",
				Attributes: map[string]schema.Attribute{
					"container": schema.StringAttribute{
						Required:   true,
						Validators: []validator.String{printableValidator{}},
						MarkdownDescription: "The server container, by id or name: `llmserve_inference_server.<name>.id`, or any running container on the provider's engine. The runner shares its network namespace. " +
							"Plan refuses what Docker would (empty, or not a container name: letters, digits and `_ . -` after the first character).",
					},
					"image": schema.StringAttribute{
						Optional:   true,
						Validators: []validator.String{printableValidator{}},
						MarkdownDescription: "An image holding the provider's Linux binary as its entrypoint (for example `FROM scratch`, `COPY terraform-provider-llmserve_v<version> /llmserve-runner`, `ENTRYPOINT [\"/llmserve-runner\"]`), " +
							"of the same provider version, a reference as Docker parses one (checked at plan). Needed when the engine host's architecture or OS differs from the provider's (the plan says so when the engine can be asked then, " +
							"else the apply before anything is created); pulled when the engine does not have it. Unset: built on the engine from the running provider's binary " +
							"(`" + runner.BinaryEnv + "` overrides which binary).",
					},
				},
			},
		},
	}
}

// checkRunnerSettings applies the runner's rules (runner.CheckDocker, runner.CheckKubernetes)
// to the settings known at plan; one known only at apply is checked by Terraform's
// validation then, before the runner is created.
func checkRunnerSettings(v types.Object, resp *resource.ValidateConfigResponse) {
	at := attrpath.Root("runner")
	var problems []problem.Problem
	var unknown []attrpath.Path
	str := func(o types.Object, name string, place attrpath.Path) types.String {
		s, _ := o.Attributes()[name].(types.String)
		if s.IsUnknown() {
			unknown = append(unknown, place.At(name))
		}
		return s
	}
	if d, ok := v.Attributes()["docker"].(types.Object); ok && !d.IsNull() && !d.IsUnknown() {
		c, i := str(d, "container", at.At("docker")), str(d, "image", at.At("docker"))
		problems = append(problems, runner.CheckDocker(at.At("docker"), c.ValueString(), i.ValueString(), !i.IsNull())...)
	}
	if k, ok := v.Attributes()["kubernetes"].(types.Object); ok && !k.IsNull() && !k.IsUnknown() {
		ns, i := str(k, "namespace", at.At("kubernetes")), str(k, "image", at.At("kubernetes"))
		problems = append(problems, runner.CheckKubernetes(at.At("kubernetes"), ns.ValueString(), i.ValueString())...)
	}
	resp.Diagnostics.Append(problemDiagnostics(problems, "Invalid runner setting", unknown, true)...)
}

// checkRunnerEndpoints warns about the addresses the runner would dial that cannot be the
// server where it runs (runner.CheckKubernetesEndpoints, runner.CheckDockerEndpoints); an
// address unknown at plan is left out.
func checkRunnerEndpoints(v types.Object, cfg capacity.Config, resp *resource.ValidateConfigResponse) {
	urls := []runner.Dialled{{Path: attrpath.Root("endpoint"), URL: cfg.Endpoint}}
	for i, u := range cfg.ReplicaEndpoints {
		urls = append(urls, runner.Dialled{Path: attrpath.Root("replica_endpoints").Index(i), URL: u})
	}
	for i, u := range cfg.TelemetryEndpoints {
		urls = append(urls, runner.Dialled{Path: attrpath.Root("telemetry_endpoints").Index(i), URL: u})
	}
	var problems []problem.Problem
	if _, ok := kubernetesRunnerSettings(v); ok {
		problems = runner.CheckKubernetesEndpoints(attrpath.Root("runner").At("kubernetes"), urls)
	}
	if _, _, ok := runnerSettings(v); ok {
		problems = runner.CheckDockerEndpoints(attrpath.Root("runner").At("docker"), urls)
	}
	resp.Diagnostics.Append(problemDiagnostics(problems, "Runner cannot reach the endpoint", nil, true)...)
}

// benchmarkPlace is where a benchmark's measurement runs.
type benchmarkPlace interface {
	run(ctx context.Context, cfg capacity.Config, files capacity.Files) (capacity.Report, error)
}

// localPlace runs the measurement in the Terraform process.
type localPlace struct{}

func (localPlace) run(ctx context.Context, cfg capacity.Config, files capacity.Files) (capacity.Report, error) {
	return capacity.Resume(ctx, cfg, files)
}

// dockerPlace runs it in a runner container next to the server container.
type dockerPlace struct {
	data             *providerData
	container, image string
}

// runnerSettings reads `runner`; ok is false when the measurement runs here.
func runnerSettings(v types.Object) (container, image string, ok bool) {
	if v.IsNull() || v.IsUnknown() {
		return "", "", false
	}
	d, isObj := v.Attributes()["docker"].(types.Object)
	if !isObj || d.IsNull() || d.IsUnknown() {
		return "", "", false
	}
	c, _ := d.Attributes()["container"].(types.String)
	i, _ := d.Attributes()["image"].(types.String)
	return c.ValueString(), i.ValueString(), true
}

func (r *capacityBenchmarkResource) place(m capacityBenchmarkModel) benchmarkPlace {
	if k, ok := kubernetesRunnerSettings(m.Runner); ok {
		return kubernetesPlace{data: r.data, m: k}
	}
	if c, img, ok := runnerSettings(m.Runner); ok {
		return dockerPlace{data: r.data, container: c, image: img}
	}
	return localPlace{}
}

func (p dockerPlace) docker() (*runner.Docker, error) {
	if p.data == nil || p.data.docker == nil {
		return nil, errors.New("the provider is not configured with a Docker Engine")
	}
	b, err := p.data.docker.Backend()
	if err != nil {
		return nil, fmt.Errorf("runner.docker: %w", err)
	}
	return &runner.Docker{Cli: b.Client(), Host: p.data.docker.Host(), Image: p.image}, nil
}

// runnerSpec is what the runner measures: cfg with its records written inside the container.
func runnerSpec(cfg capacity.Config) runner.Spec {
	if cfg.RecordsDirectory != "" {
		cfg.RecordsDirectory = runner.RecordsPath
	}
	return runner.Spec{Config: cfg}
}

func (p dockerPlace) run(ctx context.Context, cfg capacity.Config, files capacity.Files) (capacity.Report, error) {
	d, err := p.docker()
	if err != nil {
		return capacity.Report{}, err
	}
	return runOnRunner(cfg, files, func(job runner.Job) (runner.Outcome, string, *results.Runner, error) {
		job.Target = p.container
		out, err := d.Run(ctx, job)
		return out, "the runner container " + shortContainer(out.Container), &results.Runner{Kind: "docker", Host: d.Host, Network: out.Network}, err
	})
}

// runOnRunner is a run on either runner backend: the progress mirror, the journal the runner
// resumes from (progress_file, read as the local run reads it), the job that start runs and
// waits for, and the report with where the load ran (start names the runner and its place).
func runOnRunner(cfg capacity.Config, files capacity.Files, start func(runner.Job) (runner.Outcome, string, *results.Runner, error)) (capacity.Report, error) {
	if err := files.Check(); err != nil {
		return capacity.Report{}, err
	}
	mirror, err := runner.OpenMirror(cfg, files.ProgressFile, files.ProgressLog, files.Say)
	if err != nil {
		return capacity.Report{}, err
	}
	defer mirror.Close()
	var seed []byte
	if files.ProgressFile != "" {
		seed, err = localfile.ReadFile(files.ProgressFile, capacity.JournalFile)
		if errors.Is(err, fs.ErrNotExist) {
			seed, err = nil, nil // a first run
		}
		if err != nil {
			return capacity.Report{}, fmt.Errorf("progress_file: %w", err)
		}
	}
	out, name, where, err := start(runner.Job{
		Spec:             runnerSpec(cfg),
		Seed:             seed,
		Event:            mirror.Event,
		Note:             mirror.Line,
		RecordsDirectory: cfg.RecordsDirectory,
	})
	if err != nil {
		return capacity.Report{}, err
	}
	journal := "the journal of " + name
	if files.ProgressFile != "" {
		journal += " (mirrored in " + files.ProgressFile + ")"
	}
	rep, err := out.Result.Report(journal)
	if rep.Document != nil {
		rep.Document.Runner = where
	}
	if err == nil {
		if cerr := mirror.Complete(); cerr != nil {
			mirror.Line(fmt.Sprintf("cannot mark the run complete in the progress file %s: %v", files.ProgressFile, cerr))
		}
	}
	return rep, err
}

// removeRunners removes what is left of the benchmark's runner (destroy).
func (r *capacityBenchmarkResource) removeRunners(ctx context.Context, m capacityBenchmarkModel) error {
	place := r.place(m)
	cfg, _, diags := m.capacityConfig(ctx)
	if diags.HasError() {
		return nil
	}
	if r.data != nil {
		cfg.ToolVersion = r.data.version
	}
	if k, ok := place.(kubernetesPlace); ok {
		return k.remove(ctx, runnerSpec(cfg).Key())
	}
	p, ok := place.(dockerPlace)
	if !ok {
		return nil
	}
	d, err := p.docker()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return d.Remove(ctx, p.container, runnerSpec(cfg).Key())
}

// checkRunnerImage refuses at plan a runner image that cannot be built for the engine,
// when the engine can be asked then; an engine not reachable at plan is left to apply.
func (r *capacityBenchmarkResource) checkRunnerImage(ctx context.Context, m capacityBenchmarkModel, resp *resource.ModifyPlanResponse) {
	p, ok := r.place(m).(dockerPlace)
	if !ok || p.image != "" || r.data == nil || r.data.docker == nil {
		return
	}
	d, err := p.docker()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, deploy.CallTimeout(planEngineWait))
	defer cancel()
	var imgErr *runner.ImageError
	if err := d.CheckEngine(ctx); errors.As(err, &imgErr) {
		resp.Diagnostics.AddAttributeError(path.Root("runner").AtName("docker").AtName("image"), "Runner image cannot be built for this engine", err.Error())
	}
}

func shortContainer(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
