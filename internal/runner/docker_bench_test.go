package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/llmserve/terraform-provider-llmserve/internal/capacity"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// BenchmarkDockerRunner measures, on the local Docker Engine, a runner's start to its first
// finished trial with the runner image built first (cold_start_s: no llmserve-runner image on
// the engine) and already there (warm_start_s), and the progress lag: how long after the
// runner recorded a trial (its journal time) the provider had the event (lag_max_ms,
// lag_mean_ms). Runner and provider share one clock here.
//
//	go test -run '^$' -bench BenchmarkDockerRunner -benchtime 1x ./internal/runner
func BenchmarkDockerRunner(b *testing.B) {
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := enginetest.BuildBinaries(ctx, dir); err != nil {
		b.Fatal(err)
	}
	const simImage = "llmserve-test-engine:runner-bench"
	if err := enginetest.BuildImage(ctx, cli, dir, simImage); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = enginetest.Sweep(context.Background(), cli, true) })
	bin := filepath.Join(dir, "provider")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	srv, err := cli.ContainerCreate(ctx, &container.Config{Image: simImage, Entrypoint: []string{"/simengine"},
		Cmd:    []string{"-host", "127.0.0.1", "-port", "30000", "-model", "sim", "-slots", "2", "-prefill-per-token", "20us", "-prefill-overhead", "2ms", "-decode-step", "40ms", "-decode-per-seq", "0"},
		Labels: map[string]string{enginetest.TestLabel: "true", enginetest.RunLabel: enginetest.RunID}}, nil, nil, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	if err := cli.ContainerStart(ctx, srv.ID, container.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	removeImages := func() {
		imgs, _ := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", KindLabel+"=docker"))})
		for _, im := range imgs {
			_, _ = cli.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	}
	b.Cleanup(removeImages)
	removeImages()
	cfg := capacity.Config{
		Endpoint: "http://127.0.0.1:30000", Model: "sim", API: "chat",
		Workloads:      []capacity.Workload{{Label: "64 / 8", InputTokens: 64, OutputTokens: 8}},
		SLOs:           []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 150, Comparison: "strictly_less_than"}},
		MinConcurrency: 1, MaxConcurrency: 5, WarmupRequests: 1, MeasuredRequests: 8, ConfirmationTrials: 2,
		CacheFlush: "auto", Seed: 1, StallTimeout: 30 * time.Second, RequestTimeout: time.Minute,
	}
	d := &Docker{Cli: cli, Host: "local", Binary: bin}
	var lags []time.Duration
	run := func(seed string) time.Duration {
		c := cfg
		c.Triggers = map[string]string{"run": seed} // a new run each time: nothing to attach to
		start := time.Now()
		var first time.Duration
		_, err := d.Run(ctx, Job{Target: srv.ID, Spec: Spec{Config: c}, Event: func(e Event) {
			if e.Trial == nil {
				return
			}
			now := time.Now()
			if first == 0 {
				first = now.Sub(start)
			}
			lags = append(lags, now.Sub(e.Trial.Time))
		}})
		if err != nil {
			b.Fatal(err)
		}
		return first
	}
	for b.Loop() {
		cold := run("cold")
		warm := run("warm")
		b.ReportMetric(cold.Seconds(), "cold_start_s")
		b.ReportMetric(warm.Seconds(), "warm_start_s")
	}
	var sum, most time.Duration
	for _, l := range lags {
		sum += l
		most = max(most, l)
	}
	b.ReportMetric(float64(most.Microseconds())/1000, "lag_max_ms")
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(lags)), "lag_mean_ms")
	b.Logf("%d trial events; load: %s", len(lags), loadAverage())
	_ = cli.ContainerRemove(ctx, srv.ID, container.RemoveOptions{Force: true})
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// BenchmarkDockerRunnerBoundary measures the quickstart's llama.cpp server (the tiny model,
// two slots, its 256 / 32 workload under p95 TTFT < 1500 ms, concurrency 1..8) three times
// from here and three times from a runner in its network namespace, and prints each run's
// boundary: the two places should agree as often as three runs of one place do.
//
//	go test -run '^$' -bench BenchmarkDockerRunnerBoundary -benchtime 1x -timeout 60m ./internal/runner
func BenchmarkDockerRunnerBoundary(b *testing.B) {
	ctx := context.Background()
	model, err := filepath.Abs(filepath.Join("..", "..", ".cache", "models", "tiny-llama.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		b.Fatalf("the tiny model is missing (%v): run scripts/build-model.sh", err)
	}
	be, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		b.Fatal(err)
	}
	spec := engine.Spec{Engine: engine.LlamaCpp, Model: "/models/tiny-llama.gguf", ServedModelName: "tiny", Port: 8080,
		MaxRunningRequests: 2, ContextLength: 4096, Accelerator: engine.CPU}
	c, err := deploy.NewContainer(spec, deploy.Placement{Name: "llmserve-runner-bench-llama", Image: "llmserve/llamacpp:latest",
		BindAddress: "127.0.0.1", ModelHostPath: model,
		Labels: map[string]string{enginetest.TestLabel: "true", enginetest.RunLabel: enginetest.RunID}}, engine.Secrets{})
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := deploy.Launch(ctx, be, c, deploy.Readiness{Engine: spec.Engine, Model: spec.RequestModel(), Timeout: 3 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Remove(context.Background(), st.ID, 0) })
	dir := b.TempDir()
	bin := filepath.Join(dir, "provider")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	cfg := func(endpoint, run string) capacity.Config {
		return capacity.Config{
			Endpoint: endpoint, Model: "tiny", API: "chat",
			Workloads:      []capacity.Workload{{Label: "256 / 32", InputTokens: 256, OutputTokens: 32}},
			SLOs:           []results.SLO{{Metric: "time_to_first_token", Percentile: 95, ThresholdMs: 1500, Comparison: "strictly_less_than"}},
			MinConcurrency: 1, MaxConcurrency: 8, WarmupRequests: 2, MeasuredRequests: 8, ConfirmationTrials: 2,
			CacheFlush: "auto", Seed: 1, StallTimeout: time.Minute, RequestTimeout: 2 * time.Minute,
			Triggers: map[string]string{"run": run},
		}
	}
	boundary := func(doc *results.Document) string {
		w := doc.Workloads[0]
		mp := "none"
		if w.MaximumPassingConcurrency != nil {
			mp = fmt.Sprint(*w.MaximumPassingConcurrency)
		}
		ff := "none"
		if w.FirstFailingConcurrency != nil {
			ff = fmt.Sprint(*w.FirstFailingConcurrency)
		}
		return mp + "/" + ff
	}
	d := &Docker{Cli: be.Client(), Host: "local", Binary: bin}
	for b.Loop() {
		for i := range 3 {
			start := time.Now()
			rep, err := capacity.Resume(ctx, cfg(st.Endpoint, fmt.Sprint("local", i)), capacity.Files{})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("local  run %d: maximum passing / first failing %s (%.0f s; load %s)", i+1, boundary(rep.Document), time.Since(start).Seconds(), loadAverage())

			start = time.Now()
			out, err := d.Run(ctx, Job{Target: st.ID, Spec: Spec{Config: cfg("http://127.0.0.1:8080", fmt.Sprint("runner", i))}})
			if err != nil {
				b.Fatal(err)
			}
			rep, err = out.Result.Report("runner")
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("runner run %d: maximum passing / first failing %s (%.0f s; load %s)", i+1, boundary(rep.Document), time.Since(start).Seconds(), loadAverage())
		}
	}
}
