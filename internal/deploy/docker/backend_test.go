package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

const testImage = "llmserve-test-engine:backend"

var testBackend *Backend

// TestMain builds the test image once on the local engine and sweeps everything the tests
// labelled, whether they passed or not. Without a reachable engine the tests skip.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := NewConnection(ConfigFromEnv(Config{})).Backend()
	if err == nil {
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = b.cli.Ping(pctx)
		pcancel()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "no Docker Engine (%v): engine tests skip\n", err)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "llmserve-image")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := enginetest.BuildBinaries(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := enginetest.BuildImage(ctx, b.cli, dir, testImage); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testBackend = b
	code := m.Run()
	if err := enginetest.Sweep(context.Background(), b.cli, true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

func needEngine(tb testing.TB) *Backend {
	tb.Helper()
	if testBackend == nil {
		tb.Skip("no Docker Engine reachable")
	}
	return testBackend
}

func testContainer(tb testing.TB, name string, simArgs string) deploy.Container {
	tb.Helper()
	spec := engine.Spec{Engine: engine.SGLang, Model: "sim/model", TensorParallel: 1, Accelerator: engine.CPU, Port: 30000}
	c, err := deploy.NewContainer(spec, deploy.Placement{
		Name: name, Image: testImage, BindAddress: "127.0.0.1",
		Env:    map[string]string{"SIMENGINE_ARGS": simArgs},
		Labels: map[string]string{enginetest.TestLabel: "true", enginetest.RunLabel: enginetest.RunID},
	}, engine.Secrets{})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestLaunchReadyAndServes(t *testing.T) {
	b := needEngine(t)
	ctx := t.Context()
	c := testContainer(t, "llmserve-test-ready", "-startup-delay=300ms")
	st, info, err := deploy.Launch(ctx, b, c, deploy.Readiness{Engine: engine.SGLang, Model: "sim/model", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Remove(context.Background(), st.ID, time.Second); err != nil {
			t.Error(err)
		}
	}()
	if !st.Running || !strings.HasPrefix(st.Endpoint, "http://127.0.0.1:") || !strings.HasPrefix(st.ImageDigest, "sha256:") {
		t.Errorf("status = %+v", st)
	}
	if info.MaxContext == 0 {
		t.Errorf("server info not read back: %+v", info)
	}
	resp, err := http.Post(st.Endpoint+"/v1/completions", "application/json", strings.NewReader(`{"model":"sim/model","prompt":"hi","max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("completion: HTTP %d", resp.StatusCode)
	}
}

func TestLaunchExitAtStartFailsWithLogsAndLeavesNothing(t *testing.T) {
	b := needEngine(t)
	ctx := t.Context()
	c := testContainer(t, "llmserve-test-exit", "-startup-delay=10s -exit-after=200ms -exit-code=3")
	start := time.Now()
	_, _, err := deploy.Launch(ctx, b, c, deploy.Readiness{Engine: engine.SGLang, Model: "sim/model", Timeout: time.Minute})
	var ex *deploy.ExitedError
	if !errors.As(err, &ex) {
		t.Fatalf("want ExitedError, got %v", err)
	}
	if ex.ExitCode != 3 || !strings.Contains(ex.Logs, "simulated crash") {
		t.Errorf("exit code %d, logs %q", ex.ExitCode, ex.Logs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to notice the exit; it must fail at once", d)
	}
	if _, err := b.Inspect(ctx, "llmserve-test-exit"); !IsNotFound(err) {
		t.Errorf("failed launch left a container behind: %v", err)
	}
}

func TestRemoveIsIdempotent(t *testing.T) {
	b := needEngine(t)
	if err := b.Remove(t.Context(), "llmserve-test-never-existed", time.Second); err != nil {
		t.Errorf("removing a missing container: %v", err)
	}
}

// Removals racing each other (two destroys, a destroy and a sweep) all return only once the
// container is gone: the engine refuses the second with "removal already in progress", which
// must not read as done while the container still exists.
func TestConcurrentRemoveWaitsUntilGone(t *testing.T) {
	b := needEngine(t)
	ctx := t.Context()
	id, err := b.Create(ctx, testContainer(t, "llmserve-test-remove-race", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	const removers = 4
	errs := make(chan error, removers)
	for range removers {
		go func() {
			if err := b.Remove(ctx, id, 0); err != nil {
				errs <- err
				return
			}
			_, err := b.Inspect(ctx, id)
			if !errors.Is(err, deploy.ErrNotFound) {
				err = fmt.Errorf("Remove returned while the container still exists (inspect: %v)", err)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	for range removers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkLaunchOverhead measures the provider's share of time-to-ready. The engine's own
// start time runs from the container's start to its "ready" log line (both stamped by dockerd);
// poll-lag is from that line to WaitReady returning (the provider's polling overhead, goal
// <= 1 s); create-start is the Engine API's create and start calls, which dockerd spends.
//
//	go test ./internal/deploy/docker -run '^$' -bench LaunchOverhead -benchtime 5x
func BenchmarkLaunchOverhead(b *testing.B) {
	be := needEngine(b)
	ctx := b.Context()
	var lag, engineStart, createStart time.Duration
	for i := 0; i < b.N; i++ {
		c := testContainer(b, fmt.Sprintf("llmserve-bench-%d", i), "-startup-delay=500ms")
		t0 := time.Now()
		id, err := be.Create(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		if err := be.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		createStart += time.Since(t0)
		if _, err := deploy.WaitReady(ctx, be, id, deploy.Readiness{Engine: engine.SGLang, Model: "sim/model", Timeout: time.Minute}); err != nil {
			b.Fatal(err)
		}
		readyAt := time.Now()
		started, readyLine, err := engineStartTimes(ctx, be, id)
		if err != nil {
			b.Fatal(err)
		}
		engineStart += readyLine.Sub(started)
		lag += readyAt.Sub(readyLine)
		if err := be.Remove(ctx, id, 0); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(lag.Milliseconds())/n, "poll-lag-ms/op")
	b.ReportMetric(float64(engineStart.Milliseconds())/n, "engine-start-ms/op")
	b.ReportMetric(float64(createStart.Milliseconds())/n, "create-start-ms/op")
}

// engineStartTimes are the container's start and the engine's ready log line.
func engineStartTimes(ctx context.Context, b *Backend, id string) (time.Time, time.Time, error) {
	ci, err := b.cli.ContainerInspect(ctx, id)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	started, err := time.Parse(time.RFC3339Nano, ci.State.StartedAt)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	rc, err := b.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStderr: true, ShowStdout: true, Timestamps: true})
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 8 {
			line = line[8:] // multiplexing header
		}
		if ts, rest, ok := strings.Cut(line, " "); ok && strings.Contains(rest, "fired up and ready") {
			ready, err := time.Parse(time.RFC3339Nano, ts)
			return started, ready, err
		}
	}
	return time.Time{}, time.Time{}, fmt.Errorf("no ready line in the logs of %s", id)
}

// TestNoLeftovers runs last (file order) and checks the tests above cleaned up after
// themselves, independently of the sweeper in TestMain. It looks only at this process's
// containers (RunLabel): another run sharing the engine may have test containers alive.
func TestNoLeftovers(t *testing.T) {
	b := needEngine(t)
	cs, err := b.cli.ContainerList(t.Context(), container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", enginetest.TestLabel),
		filters.Arg("label", enginetest.RunLabel+"="+enginetest.RunID),
	)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		t.Errorf("leftover container %s %v", c.ID[:12], c.Names)
	}
}

// The device probe runs inside the real container through the Engine's exec API; the test
// image's shim answers each probe in its tool's real output shape.
func TestHardwareProbesTheContainer(t *testing.T) {
	b := needEngine(t)
	ctx := t.Context()
	c := testContainer(t, "llmserve-test-hardware", "")
	c.Env["SIMENGINE_DEVICES"] = "Intel(R) Arc(TM) Pro B70 Graphics:32656;Intel(R) Arc(TM) Pro B70 Graphics:32656"
	st, _, err := deploy.Launch(ctx, b, c, deploy.Readiness{Engine: engine.SGLang, Model: "sim/model", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Remove(context.Background(), st.ID, time.Second); err != nil {
			t.Error(err)
		}
	}()
	for _, tt := range []struct {
		spec engine.Spec
		want string
	}{
		{engine.Spec{Engine: engine.SGLang, Accelerator: engine.XPU}, "2 x Intel(R) Arc(TM) Pro B70 Graphics, 32656 MiB each"},
		{engine.Spec{Engine: engine.VLLM, Accelerator: engine.CUDA}, "2 x Intel(R) Arc(TM) Pro B70 Graphics, 32656 MiB each"},
		{engine.Spec{Engine: engine.LlamaCpp, Accelerator: engine.XPU}, "2 x Intel(R) Arc(TM) Pro B70 Graphics, 32656 MiB each"},
		{engine.Spec{Engine: engine.SGLang, Accelerator: engine.CPU}, "cpu"}, // nothing to probe
		// A probe that fails (no such program) falls back to the family.
		{engine.Spec{Engine: engine.LlamaCpp, Accelerator: engine.CUDA, Entrypoint: []string{"/no/such/llama-server"}}, "cuda"},
	} {
		if got := deploy.Hardware(ctx, b, st.ID, tt.spec); got != tt.want {
			t.Errorf("%s on %s: hardware = %q, want %q", tt.spec.Engine, tt.spec.Accelerator, got, tt.want)
		}
	}
	if _, err := b.Exec(ctx, st.ID, []string{"nvidia-smi-missing"}); err == nil {
		t.Error("exec of a missing program: want an error")
	}
}
