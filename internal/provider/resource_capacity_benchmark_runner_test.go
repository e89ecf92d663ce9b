package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

// runnerBinary is the provider built as the release builds it (static, CGO_ENABLED=0), once
// per test process (the in-process provider of resource.Test is the test binary), into the
// module's git-ignored cache so that test runs leave no binaries behind in /tmp.
var runnerBinary struct {
	sync.Mutex
	path string
}

func buildRunnerBinary(t *testing.T) string {
	t.Helper()
	runnerBinary.Lock()
	defer runnerBinary.Unlock()
	if runnerBinary.path == "" {
		dir, err := filepath.Abs(filepath.Join("..", "..", ".cache", "runner-bin"))
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "terraform-provider-llmserve")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the runner binary: %v\n%s", err, out)
		}
		runnerBinary.path = bin
	}
	return runnerBinary.path
}

// testAccRunnerBinary is buildRunnerBinary's program; the runner image the engine builds from
// it is removed when the test ends.
func testAccRunnerBinary(t *testing.T, b *docker.Backend) string {
	t.Helper()
	bin := buildRunnerBinary(t)
	// The image built from it is this test's to remove.
	t.Cleanup(func() {
		imgs, err := b.Client().ImageList(context.Background(), image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", runner.KindLabel+"=docker"))})
		if err != nil {
			return
		}
		for _, im := range imgs {
			_, _ = b.Client().ImageRemove(context.Background(), im.ID, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	})
	return bin
}

// quietServerArgs is the two-slot simulated engine (simengine.TwoSlotModel: boundary at
// concurrency 2 for a 150 ms p95 TTFT), listening on the container's loopback only and
// logging one line per finished request.
var quietServerArgs = []string{"-host", "127.0.0.1", "-port", "30000", "-model", "sim-qwen",
	"-slots", "2", "-prefill-per-token", "20us", "-prefill-overhead", "2ms", "-decode-step", "40ms", "-decode-per-seq", "0",
	"-log-requests"}

// startQuietServer starts a server container that publishes no port: nothing outside its
// network namespace can reach it.
func startQuietServer(t *testing.T, b *docker.Backend, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := b.Client()
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image: accImage, Entrypoint: []string{"/simengine"}, Cmd: quietServerArgs,
		Labels: map[string]string{enginetest.TestLabel: "true", enginetest.RunLabel: enginetest.RunID},
	}, &container.HostConfig{}, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(containerLogs(t, b, created.ID), "fired up") {
		if ctx.Err() != nil {
			t.Fatalf("the server container did not start: %s", containerLogs(t, b, created.ID))
		}
		time.Sleep(100 * time.Millisecond)
	}
	ci, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ci.HostConfig.PortBindings) != 0 || len(ci.NetworkSettings.Ports) != 0 {
		t.Fatalf("the server container publishes %v %v; the test needs one that publishes nothing", ci.HostConfig.PortBindings, ci.NetworkSettings.Ports)
	}
	return created.ID
}

func containerLogs(t *testing.T, b *docker.Backend, id string) string {
	t.Helper()
	logs, err := b.Logs(context.Background(), id, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// servedRequests counts the requests the server finished (its -log-requests lines).
func servedRequests(t *testing.T, b *docker.Backend, id string) int {
	t.Helper()
	return strings.Count(containerLogs(t, b, id), " completion_tokens=")
}

// runnersOf lists the runner containers of a server container, whatever their state.
func runnersOf(t *testing.T, b *docker.Backend, target string) []container.Summary {
	t.Helper()
	cs, err := b.Client().ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", runner.KindLabel+"=docker"), filters.Arg("label", runner.TargetLabel+"="+target))})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func runnerConfig(target, dir, extra string) string {
	return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint          = "http://127.0.0.1:30000"
  model             = "sim-qwen"
  workloads         = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos              = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search            = { min_concurrency = 1, max_concurrency = 6 }
  trial             = { warmup_requests = 1, measured_requests = 8, confirmation_trials = 2, cache_flush = "auto" }
  progress_file     = %[2]q
  progress_log      = "${%[2]q}.log"
  records_directory = %[3]q
  runner            = { docker = { container = %[1]q } }
%[4]s
}

output "maximum" { value = llmserve_capacity_benchmark.test.maximum_passing_concurrency["64 / 8"] }
output "first_failing" { value = llmserve_capacity_benchmark.test.first_failing_concurrency["64 / 8"] }
`, target, filepath.Join(dir, "p.jsonl"), filepath.Join(dir, "records"), extra)
}

// A server that publishes no port, measured by a runner in its network namespace: the same
// boundary the two-slot engine has from anywhere (2, first failing 3), the document saying
// where the load ran, the progress file and log mirrored, the records copied back, and no
// runner left after the apply or the destroy.
func TestAccCapacityBenchmark_dockerRunner(t *testing.T) {
	b := accEngine(t)
	t.Setenv(runner.BinaryEnv, testAccRunnerBinary(t, b))
	target := startQuietServer(t, b, accContainer+"-runner-quiet")
	dir := t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if left := runnersOf(t, b, target); len(left) > 0 {
				return fmt.Errorf("%d runner containers left after destroy", len(left))
			}
			return nil
		},
		Steps: []resource.TestStep{{
			Config: runnerConfig(target, dir, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("maximum_passing_concurrency").AtMapKey("64 / 8"), knownvalue.Int64Exact(2)),
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.test", tfjsonpath.New("first_failing_concurrency").AtMapKey("64 / 8"), knownvalue.Int64Exact(3)),
			},
			Check: func(s *terraform.State) error {
				rs := s.RootModule().Resources["llmserve_capacity_benchmark.test"].Primary.Attributes
				doc, err := results.Parse([]byte(rs["results_json"]))
				if err != nil {
					return err
				}
				if doc.Runner == nil || doc.Runner.Kind != "docker" || doc.Runner.Network != "container:"+target {
					return fmt.Errorf("results_json runner = %+v, want docker in container:%s", doc.Runner, target)
				}
				trials := doc.Workloads[0].Trials()
				journal, _ := os.ReadFile(filepath.Join(dir, "p.jsonl"))
				if n := strings.Count(string(journal), `"kind":"probe"`) + strings.Count(string(journal), `"kind":"confirmation"`); n < len(trials) || !strings.Contains(string(journal), "run_completed") {
					return fmt.Errorf("the local progress file holds %d trials (completed: %v); the document has %d", n, strings.Contains(string(journal), "run_completed"), len(trials))
				}
				log, _ := os.ReadFile(filepath.Join(dir, "p.jsonl.log"))
				if !strings.Contains(string(log), "runner: started runner") || !strings.Contains(string(log), "finished:") {
					return fmt.Errorf("the local progress log lacks the runner's lines:\n%s", log)
				}
				for _, tr := range trials {
					if _, err := os.Stat(filepath.Join(dir, "records", filepath.FromSlash(tr.Trial.RecordsFile))); err != nil {
						return fmt.Errorf("records of trial at concurrency %d not copied back: %w", tr.Concurrency, err)
					}
				}
				if left := runnersOf(t, b, target); len(left) > 0 {
					return fmt.Errorf("%d runner containers left after the result was collected", len(left))
				}
				return nil
			},
		}},
	})
}

// An apply interrupted (SIGINT to the CLI, as Ctrl-C) while the runner measures leaves the
// runner measuring; the next apply attaches to it, collects its result, or resumes from its
// journal when it was killed. The server's request count proves what was measured twice:
// nothing, except the trial a killed runner was in the middle of.
func TestAccCapacityBenchmark_dockerRunnerInterrupted(t *testing.T) {
	b := accEngine(t)
	bin := testAccRunnerBinary(t, b)
	c := newCLI(t)
	c.env = append(c.env, runner.BinaryEnv+"="+bin)
	write := func(dir, target, extra string) {
		cfg := "terraform {\n  required_providers {\n    llmserve = { source = \"llmserve/llmserve\" }\n  }\n}\n" + runnerConfig(target, dir, extra)
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The uninterrupted run, on a server of its own: its outputs and requests are the yardstick.
	fresh := startQuietServer(t, b, accContainer+"-runner-fresh")
	freshDir := t.TempDir()
	write(freshDir, fresh, "")
	if out, err := c.apply(t, freshDir, nil); err != nil {
		t.Fatalf("uninterrupted apply: %v\n%s", err, out)
	}
	want := c.outputs(t, freshDir)
	wantRequests := servedRequests(t, b, fresh)
	t.Logf("uninterrupted: maximum %s, first failing %s, %d requests served", want["maximum"], want["first_failing"], wantRequests)

	trialsIn := func(path string) int {
		raw, _ := os.ReadFile(path)
		return strings.Count(string(raw), `"kind":"probe"`) + strings.Count(string(raw), `"kind":"confirmation"`)
	}
	cases := []struct {
		name string
		// between runs between the interrupted apply and the next one.
		between func(t *testing.T, target string)
		// extraRequests bounds the requests served beyond the uninterrupted run's.
		extraRequests int
		extra         string // a changed configuration for the second apply
	}{
		{name: "attach to the running runner", between: func(t *testing.T, target string) {
			rs := runnersOf(t, b, target)
			if len(rs) != 1 || rs[0].State != "running" {
				t.Fatalf("after the interrupt: runners %+v, want one running", rs)
			}
		}},
		{name: "collect the finished runner", between: func(t *testing.T, target string) {
			if !waitFor(t, func() bool {
				rs := runnersOf(t, b, target)
				return len(rs) == 1 && rs[0].State == "exited"
			}) {
				t.Fatal("the detached runner did not finish")
			}
		}},
		{name: "resume from a killed runner", between: func(t *testing.T, target string) {
			rs := runnersOf(t, b, target)
			if len(rs) != 1 {
				t.Fatalf("after the interrupt: %d runners", len(rs))
			}
			if err := b.Client().ContainerKill(context.Background(), rs[0].ID, "KILL"); err != nil {
				t.Fatal(err)
			}
		}, extraRequests: 9}, // the trial it was killed in: one warmup and eight measured
		{name: "a changed configuration removes the runner", between: func(t *testing.T, target string) {}, extra: `  triggers = { revision = "2" }`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := startQuietServer(t, b, fmt.Sprintf("%s-runner-int-%d", accContainer, i))
			dir := t.TempDir()
			progress := filepath.Join(dir, "p.jsonl")
			write(dir, target, "")
			out, err := c.apply(t, dir, func(sigint func()) {
				go func() {
					if waitFor(t, func() bool { return trialsIn(progress) >= 2 }) {
						sigint()
					}
				}()
			})
			if err == nil || !strings.Contains(out, "keeps measuring") {
				t.Fatalf("interrupted apply: err %v, want the runner kept measuring:\n%s", err, out)
			}
			first := runnersOf(t, b, target)
			tc.between(t, target)
			if tc.extra != "" {
				write(dir, target, tc.extra)
			}
			out, err = c.apply(t, dir, nil)
			if err != nil {
				t.Fatalf("second apply: %v\n%s", err, out)
			}
			got := c.outputs(t, dir)
			if string(got["maximum"]) != string(want["maximum"]) || string(got["first_failing"]) != string(want["first_failing"]) {
				t.Errorf("after the interrupt: maximum %s, first failing %s; uninterrupted %s, %s", got["maximum"], got["first_failing"], want["maximum"], want["first_failing"])
			}
			served := servedRequests(t, b, target)
			t.Logf("%s: %d requests served (uninterrupted %d)", tc.name, served, wantRequests)
			if tc.extra == "" && (served < wantRequests || served > wantRequests+tc.extraRequests) {
				t.Errorf("%d requests served, want %d (+%d at most): a trial was lost or measured twice", served, wantRequests, tc.extraRequests)
			}
			if tc.extra != "" {
				for _, r := range first {
					if _, err := b.Client().ContainerInspect(context.Background(), r.ID); err == nil {
						t.Errorf("the runner %s of the old configuration is still there", r.ID[:12])
					}
				}
			}
			if left := runnersOf(t, b, target); len(left) > 0 {
				t.Errorf("%d runners left after the result was collected", len(left))
			}
		})
	}
}

// A runner image that cannot be built for the engine (here: a binary that is no Linux
// executable, as a provider running on macOS has) is refused at plan, naming the fix: for a
// benchmark's runner, and for the readiness relay of a server that publishes nothing.
func TestAccCapacityBenchmark_dockerRunnerRefusedAtPlan(t *testing.T) {
	b := accEngine(t)
	script := filepath.Join(t.TempDir(), "terraform-provider-llmserve")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(runner.BinaryEnv, script)
	target := startQuietServer(t, b, accContainer+"-runner-plan")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      runnerConfig(target, t.TempDir(), ""),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Runner image cannot be built.*not a Linux executable.*runner\.docker\.image`),
		}, {
			Config: fmt.Sprintf(`
resource "llmserve_inference_server" "quiet" {
  name    = "%s-relay-plan"
  image   = %q
  engine  = "sglang"
  model   = "sim/qwen-test"
  publish = false
}
`, accContainer, accImage),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Readiness relay cannot be built.*not a Linux executable.*` + runner.BinaryEnv + `.*publish = true`),
		}},
	})
	if left := runnersOf(t, b, target); len(left) > 0 {
		t.Errorf("%d runners after a refused plan", len(left))
	}
}

// An image that cannot run the runner fails the apply naming the runner container's start,
// and leaves no container behind.
func TestAccCapacityBenchmark_dockerRunnerImageCannotStart(t *testing.T) {
	b := accEngine(t)
	target := startQuietServer(t, b, accContainer+"-runner-badimage")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// The test engine's image has no runner in it (and no entrypoint to start it).
			Config:      strings.Replace(runnerConfig(target, t.TempDir(), ""), "container = ", "image = \""+accImage+"\", container = ", 1),
			ExpectError: regexp.MustCompile(`starting the runner container \(image ` + regexp.QuoteMeta(accImage) + `\)`),
			PreConfig: func() {
				if left := runnersOf(t, b, target); len(left) > 0 {
					t.Fatalf("%d runners before the apply", len(left))
				}
			},
		}},
	})
	if left := runnersOf(t, b, target); len(left) > 0 {
		t.Errorf("%d runner containers left after a failed start", len(left))
	}
}

// A runner does not carry trace files to the engine host: a replay with a runner is refused
// at plan, on the workload's trace.file.
func TestAccCapacityBenchmark_dockerRunnerRefusesTraces(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "test" {
  endpoint  = "http://127.0.0.1:30000"
  model     = "m"
  workloads = [{ label = "recorded", trace = { file = %q } }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 150 }]
  search    = { speedup = { min = 1, max = 4 } }
  runner    = { docker = { container = "qwen", image = "llmserve-runner:x" } }
}
`, writeReplayTrace(t, 20, 200)),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)workloads\[0\]\.trace\.file.*Trace replay with a runner`),
		}},
	})
}

// The real engine, deployed as users deploy it: llmserve_inference_server with publish = false
// (llama-server on the generated tiny model, listening on its container's loopback, no port
// published or exposed), made ready through the engine (relay containers in its network
// namespace) and measured by the runner: prompt fitting (its /tokenize), the slot erase of
// cache_flush "auto", the /metrics scrapes and the load all reach it only from inside. The
// same benchmark of an identical, published server run from here finds the same boundary;
// no runner or relay container is left after the apply or the destroy.
func TestAccCapacityBenchmark_dockerRunnerLlamaCpp(t *testing.T) {
	testAccPreCheck(t)
	model := testAccTinyModel(t)
	b, err := docker.NewConnection(docker.ConfigFromEnv(docker.Config{})).Backend()
	if err != nil {
		t.Fatal(err)
	}
	testAccRequireLlamaCppImage(t, b)
	t.Setenv(runner.BinaryEnv, testAccRunnerBinary(t, b))
	dir := t.TempDir()
	leftovers := func() error {
		cs, err := b.Client().ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", runner.KindLabel))})
		if err != nil {
			return err
		}
		if len(cs) > 0 {
			return fmt.Errorf("%d runner or relay containers left: %v", len(cs), cs[0].Labels)
		}
		return nil
	}
	server := func(name, extra string) string {
		return fmt.Sprintf(`
resource "llmserve_inference_server" %[1]q {
  name                 = "%[2]s-%[1]s"
  image                = %[3]q
  engine               = "llamacpp"
  model                = "/models/tiny-llama.gguf"
  model_host_path      = %[4]q
  served_model_name    = "tiny"
  max_running_requests = 2
  context_length       = 4096
  readiness_timeout    = "3m"
  extra_args           = ["--threads", "1"] # steadier than two threads spinning on a busy host
%[5]s
}
`, name, accContainer+"-runner", quickstartImage, model, extra)
	}
	bench := func(name, server, extra string) string {
		return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" %[1]q {
  endpoint      = llmserve_inference_server.%[2]s.endpoint
  model         = "tiny"
  api           = "chat"
  # Two slots: a third user waits for a whole request (1024 tokens decoded: about ten seconds
  # on this model with one thread), where two wait for a 32-token prefill (about half a
  # second on this busy host): the boundary is the slot count.
  workloads     = [{ label = "32 / 1024", input_tokens = 32, output_tokens = 1024 }]
  slos          = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 3000 }]
  search        = { min_concurrency = 2, max_concurrency = 3 }
  trial         = { warmup_requests = 1, measured_requests = 4, confirmation_trials = 1, cache_flush = "auto" }
  progress_file = "%[3]s/%[1]s.jsonl"
%[4]s
}

output "%[1]s_maximum" { value = llmserve_capacity_benchmark.%[1]s.maximum_passing_concurrency["32 / 1024"] }
output "%[1]s_first_failing" { value = llmserve_capacity_benchmark.%[1]s.first_failing_concurrency["32 / 1024"] }
`, name, server, dir, extra)
	}
	cfg := server("quiet", "  publish = false") + server("published", "") +
		bench("runner", "quiet", "  runner = { docker = { container = llmserve_inference_server.quiet.id } }") +
		// One after the other: the two measurements share this machine's cores.
		bench("local", "published", "  depends_on = [llmserve_capacity_benchmark.runner]")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, n := range []string{"quiet", "published"} {
				if _, err := b.Inspect(context.Background(), accContainer+"-runner-"+n); err == nil {
					return fmt.Errorf("the server %s is left after destroy", n)
				}
			}
			return leftovers()
		},
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("llmserve_inference_server.quiet", tfjsonpath.New("endpoint"), knownvalue.StringExact("http://127.0.0.1:8080")),
				statecheck.ExpectKnownValue("llmserve_inference_server.quiet", tfjsonpath.New("host_port"), knownvalue.Null()),
				statecheck.ExpectKnownValue("llmserve_inference_server.quiet", tfjsonpath.New("publish"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue("llmserve_inference_server.quiet", tfjsonpath.New("command"), knownvalue.ListPartial(map[int]knownvalue.Check{
					0: knownvalue.StringExact("llama-server")})),
			},
			Check: func(s *terraform.State) error {
				attrs := func(n string) map[string]string { return s.RootModule().Resources[n].Primary.Attributes }
				quiet := attrs("llmserve_inference_server.quiet")
				if cmd := strings.Join(commandOf(quiet), " "); !strings.Contains(cmd, "--host 127.0.0.1") {
					return fmt.Errorf("the unpublished server does not listen on its loopback: %s", cmd)
				}
				ci, err := b.Client().ContainerInspect(context.Background(), quiet["id"])
				if err != nil {
					return err
				}
				published := len(ci.HostConfig.PortBindings)
				for _, bindings := range ci.NetworkSettings.Ports {
					published += len(bindings)
				}
				if published != 0 {
					return fmt.Errorf("the unpublished server publishes %v %v", ci.HostConfig.PortBindings, ci.NetworkSettings.Ports)
				}
				boundary := map[string][2]string{}
				for _, n := range []string{"runner", "local"} {
					doc, err := results.Parse([]byte(attrs("llmserve_capacity_benchmark." + n)["results_json"]))
					if err != nil {
						return err
					}
					if (n == "runner") != (doc.Runner != nil) {
						return fmt.Errorf("%s: results_json runner = %+v", n, doc.Runner)
					}
					w := doc.Workloads[0]
					for _, tr := range w.AllTrials {
						if tr.Correctness.Errors != 0 {
							return fmt.Errorf("%s: trial at concurrency %d: %d failed requests", n, tr.Concurrency, tr.Correctness.Errors)
						}
						t.Logf("%s: %s at concurrency %d: %s, p95 TTFT %.1f ms", n, tr.Kind, tr.Concurrency, tr.Verdict, tr.TTFTMs.P95)
					}
					if w.FirstFailingConcurrency == nil || *w.FirstFailingConcurrency != 3 {
						return fmt.Errorf("%s: first failing concurrency %v, want 3 (the two slots queue the third user)", n, w.FirstFailingConcurrency)
					}
					boundary[n] = [2]string{fmt.Sprint(deref(w.MaximumPassingConcurrency)), fmt.Sprint(*w.FirstFailingConcurrency)}
					t.Logf("%s: maximum passing %s, first failing %s; cache policy %s", n, boundary[n][0], boundary[n][1], doc.AIPerf.CachePolicy)
				}
				if boundary["runner"] != boundary["local"] {
					return fmt.Errorf("boundary from the runner %v, from here %v", boundary["runner"], boundary["local"])
				}
				return leftovers()
			},
		}},
	})
}

// commandOf reads the command list of a resource's flat state attributes.
func commandOf(attrs map[string]string) []string {
	var out []string
	for i := 0; ; i++ {
		v, ok := attrs[fmt.Sprintf("command.%d", i)]
		if !ok {
			return out
		}
		out = append(out, v)
	}
}
