package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// limitedNamespace creates namespace ns, removed with the test, and waits for its default
// ServiceAccount, without which no pod can be created there.
func limitedNamespace(t *testing.T, cs k8s.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if !waitFor(t, func() bool {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}) {
		t.Fatalf("namespace %s got no default ServiceAccount", ns)
	}
}

// limitCPU gives the containers of ns a default CPU limit of milli millicores: a LimitRange
// (replaced where it is there already), which the API server's LimitRanger admission applies
// to every container that sets no limit of its own.
func limitCPU(t *testing.T, cs k8s.Interface, ns string, milli int64) {
	t.Helper()
	ctx := context.Background()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "runner-cpu"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: *apiresource.NewMilliQuantity(milli, apiresource.DecimalSI)},
	}}}}
	_ = cs.CoreV1().LimitRanges(ns).Delete(ctx, lr.Name, metav1.DeleteOptions{})
	if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serveSim serves a simulated engine named "sim" on addr (an address of the pod CIDR, routed
// to lo by the control plane: the runners reach it as they would a server's pod), until the
// test ends.
func serveSim(t *testing.T, addr string, m simengine.Model) {
	t.Helper()
	eng, err := simengine.NewServer(simengine.Options{Model: m, ModelName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the simulated engine cannot listen on %s (the control plane routes the pod CIDR to lo): %v", addr, err)
	}
	srv := &http.Server{Handler: eng, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
}

// podResources are the resources of the runner containers of the pods the stand-in kubelet
// ran, as the API server admitted them.
func (r *kubeRunners) podResources() []corev1.ResourceRequirements {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []corev1.ResourceRequirements
	for _, raw := range r.seen {
		var p corev1.Pod
		if json.Unmarshal([]byte(raw), &p) == nil && len(p.Spec.Containers) > 0 {
			out = append(out, p.Spec.Containers[0].Resources)
		}
	}
	return out
}

// runnerConfigIn is a benchmark of the simulated engine at addr from a runner Job in ns.
func runnerConfigIn(kubeconfig, ns, addr string, pods int, body string) string {
	return fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    config_path = %[1]q
  }
}

resource "llmserve_capacity_benchmark" "limited" {
  endpoint  = "http://%[3]s"
  model     = "sim"
  api       = "chat"
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
%[5]s
  runner = {
    kubernetes = {
      namespace     = %[2]q
      image         = "ghcr.io/llmserve/llmserve-runner:test"
      node_selector = { type = "kwok" }
      tolerations   = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
      pods          = %[4]d
    }
  }
}
`, kubeconfig, ns, addr, pods, body)
}

// A namespace whose LimitRange gives containers a default CPU limit below the runner's
// request of 1 CPU: the runner's pod requests that limit instead (the LimitRanger would refuse
// it otherwise) and says so; the API server admits it with limits.cpu; the stand-in kubelet
// runs the runner in a cgroup with that quota, as a kubelet does; and the runner's own CPU
// figures read it there (every trial's client.cpu from the cgroup, its available CPUs the
// limit).
func TestAccInferenceDeployment_runnerLimitRange(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	if why := cgroupsWritable(); why != "" {
		t.Skip(why)
	}
	const ns, addr = "runner-limited", "10.244.0.251:30000"
	limitedNamespace(t, cs, ns)
	limitCPU(t, cs, ns, 50)
	serveSim(t, addr, simengine.TwoSlotModel())
	runners := startKubeRunners(t, cs, ns)
	progress := filepath.Join(t.TempDir(), "progress.log")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             func(*terraform.State) error { return runnerJobsGone(cs, ns) },
		Steps: []resource.TestStep{{
			Config: runnerConfigIn(kubeconfig, ns, addr, 1, fmt.Sprintf(`  slos         = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search       = { concurrency_levels = [1, 2] }
  trial        = { warmup_requests = 1, measured_requests = 4, confirmation_trials = 1 }
  progress_log = %q`, progress)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("llmserve_capacity_benchmark.limited", tfjsonpath.New("results_json"), underCPULimit{cpus: 0.05}),
			},
			Check: func(*terraform.State) error {
				res := runners.podResources()
				if len(res) == 0 {
					return fmt.Errorf("no runner pod was run")
				}
				for _, r := range res {
					if r.Requests.Cpu().MilliValue() != 50 || r.Limits.Cpu().MilliValue() != 50 {
						return fmt.Errorf("runner pod resources %+v, want requests and limits.cpu 50m", r)
					}
				}
				runners.mu.Lock()
				limits := fmt.Sprint(runners.limits)
				runners.mu.Unlock()
				if !strings.Contains(limits, ":5000 100000") {
					return fmt.Errorf("the runners' cgroups held %s, want a quota of 5000 per 100000 µs", limits)
				}
				log, _ := os.ReadFile(progress)
				if !strings.Contains(string(log), "namespace runner-limited limits every container to cpu 50m (LimitRange runner-cpu)") {
					return fmt.Errorf("the progress log does not say what limits the runner:\n%s", log)
				}
				return nil
			},
		}},
	})
}

// underCPULimit checks that every trial's client CPU was read from a cgroup whose quota is
// cpus.
type underCPULimit struct{ cpus float64 }

func (u underCPULimit) String() string {
	return fmt.Sprintf("results_json whose trials ran under a %g CPU quota", u.cpus)
}

func (u underCPULimit) CheckValue(v any) error {
	raw, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %T", v)
	}
	doc, err := results.Parse([]byte(raw))
	if err != nil {
		return err
	}
	n := 0
	for _, w := range doc.Workloads {
		for _, tr := range w.AllTrials {
			c := tr.Client
			if c == nil || c.CPU == nil || !strings.HasPrefix(c.CPU.Source, "cgroup_") || math.Abs(c.CPU.AvailableCPUs-u.cpus) > 1e-9 || c.CPU.Throttling == nil {
				return fmt.Errorf("trial at %d: client %+v, want its CPU read from a cgroup with a quota of %g CPUs", tr.Concurrency, c, u.cpus)
			}
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("no trial")
	}
	return nil
}

// The boundary restored on the test cluster (issue 37's last measurement; a measurement, not
// a check run by test-kubernetes.sh: scripts/restored-boundary.sh runs it alone on the
// machine and prints what it wrote to LLMSERVE_RESTORED_BOUNDARY_OUT). A simulated server whose
// p95 time to first token holds up to exactly 11 concurrent requests is searched from one
// runner pod without a limit (the reference: it must find 11), then from runner pods under a
// namespace's default CPU limit too small for one pod to carry that load: with
// runner.kubernetes.pods = 1 the result must say client-bound and give no capacity; with
// pods = N the same limit holds each pod's share and the search finds 11 again. Trials have
// no warmup requests unless LLMSERVE_RESTORED_BOUNDARY_WARMUP says so: each pod of a fleet
// runs its own warmup phase, so a pod given none measures while others still warm up.
//
// The limit is calibrated to the machine. A closed loop against this server moves in
// lockstep: every request of a trial gets its tokens at the same decode step and ends at the
// same step, and the next ones are sent at once, so a runner's CPU comes in bursts of one
// request's worth per request in flight, and a CPU quota (so much per 100 ms period) holds a
// burst of so many requests before the rest waits for the next period. One runner pod without
// a limit (the reference) measures the CPU time a request costs it (its CPU over a trial's
// load over the requests it completed per second, the median over its trials at 8 in flight
// or more), and the limit is LLMSERVE_RESTORED_BOUNDARY_BURST (default 4) requests' worth
// per period: one pod holds
// about 4 requests in flight, far below the server's 11, and N pods
// (LLMSERVE_RESTORED_BOUNDARY_PODS, default 6) hold 4 N, beyond the search's top. A machine
// twice as slow costs twice the CPU per request, gets a limit twice as large and the same
// conclusion. LLMSERVE_RESTORED_BOUNDARY_LIMIT (millicores) sets the limit instead.
func TestAccKubeRestoredBoundary(t *testing.T) {
	out := os.Getenv("LLMSERVE_RESTORED_BOUNDARY_OUT")
	if out == "" {
		t.Skip("a measurement, run alone by scripts/restored-boundary.sh (which sets LLMSERVE_RESTORED_BOUNDARY_OUT)")
	}
	kubeconfig, cs := kubeTestEnv(t)
	if why := cgroupsWritable(); why != "" {
		t.Skip(why)
	}
	envFloat := func(name string, def float64) float64 {
		if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
			return v
		}
		return def
	}
	burst := envFloat("LLMSERVE_RESTORED_BOUNDARY_BURST", 4)
	pods := int(envFloat("LLMSERVE_RESTORED_BOUNDARY_PODS", 6))
	warmup := 0
	if v, err := strconv.Atoi(os.Getenv("LLMSERVE_RESTORED_BOUNDARY_WARMUP")); err == nil && v >= 0 {
		warmup = v
	}
	const ns, addr = "restored-boundary", "10.244.0.250:30000"
	limitedNamespace(t, cs, ns)
	// 11 slots decode together; a 12th request waits for a slot to free, a whole generation
	// of 8 tokens at 200 ms a step (1.6 s), against a 500 ms p95 TTFT objective
	// (scripts/starved-client.sh's server).
	m := simengine.DefaultModel()
	m.Slots, m.DecodeStep, m.DecodePerSeq = 11, 200*time.Millisecond, 0
	m.PrefillPerToken, m.PrefillOverhead, m.RequestNoise = 20*time.Microsecond, 2*time.Millisecond, 0
	serveSim(t, addr, m)
	runners := startKubeRunners(t, cs, ns)
	c := newCLI(t)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	loadavg := func() string {
		raw, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(raw))[:3], " ")
	}
	type runInfo struct {
		Name          string  `json:"name"`
		Pods          int     `json:"pods"`
		LimitMilliCPU int64   `json:"limit_millicpu"` // 0: none
		LoadBefore    string  `json:"load_before"`
		LoadAfter     string  `json:"load_after"`
		Seconds       float64 `json:"seconds"`
		Cgroups       string  `json:"cgroups"` // the quotas the stand-in kubelet set, by pod
	}
	var runs []runInfo
	apply := func(name string, pods int, limit int64, body string) *results.Document {
		t.Helper()
		dir := t.TempDir()
		cfg := "terraform {\n  required_providers {\n    llmserve = { source = \"llmserve/llmserve\" }\n  }\n}\n" +
			runnerConfigIn(kubeconfig, ns, addr, pods, body+fmt.Sprintf("\n  progress_log = %q", filepath.Join(out, name+".progress.log"))) +
			"output \"results\" { value = llmserve_capacity_benchmark.limited.results_json }\n"
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		runners.mu.Lock()
		clear(runners.limits)
		runners.mu.Unlock()
		info := runInfo{Name: name, Pods: pods, LimitMilliCPU: limit, LoadBefore: loadavg()}
		start := time.Now()
		// A starved run is slow: the CLI's own bound here, not cli.apply's 5 minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.bin, "apply", "-auto-approve", "-no-color", "-input=false")
		cmd.Dir, cmd.Env = dir, c.env
		combined, err := cmd.CombinedOutput()
		log := string(combined)
		info.Seconds, info.LoadAfter = time.Since(start).Seconds(), loadavg()
		runners.mu.Lock()
		cg, _ := json.Marshal(runners.limits)
		runners.mu.Unlock()
		info.Cgroups = string(cg)
		runs = append(runs, info)
		_ = os.WriteFile(filepath.Join(out, name+".apply.log"), []byte(log), 0o644)
		if err != nil {
			t.Fatalf("%s: apply: %v\n%s", name, err, log)
		}
		var raw string
		if err := json.Unmarshal(c.outputs(t, dir)["results"], &raw); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name+".json"), []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		doc, err := results.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := json.MarshalIndent(runs, "", "  ")
		_ = os.WriteFile(filepath.Join(out, "runs.json"), meta, 0o644)
		return doc
	}

	// The same search three times: one pod without a limit (the reference, and the
	// calibration), then one pod and N pods under the limit. 48 measured requests a trial:
	// at 12 in flight one request in 12 waits a whole generation, and a trial must hold
	// several generations for that to show at the p95 (with 16, a single request waits, and
	// the p95 interpolated below it passes).
	search := fmt.Sprintf(`  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 500 }]
  search    = { min_concurrency = 4, max_concurrency = 16 }
  trial     = { warmup_requests = %d, measured_requests = 48, confirmation_trials = 2 }`, warmup)
	ref := apply("reference", 1, 0, search)
	// The CPU seconds a request costs the runner: the median over the trials measured to
	// their end at 8 in flight or more (below, the runner's own fixed work weighs on few
	// requests); one trial's figure moves by a third from run to run on a shared machine.
	var costs []float64
	for _, tr := range ref.Workloads[0].AllTrials {
		if tr.Client != nil && tr.Client.CPU != nil && tr.RequestThroughputRPS > 0 && !tr.StoppedEarly && tr.Concurrency >= 8 {
			costs = append(costs, tr.Client.CPU.UsedCPUs/tr.RequestThroughputRPS)
		}
	}
	if len(costs) == 0 {
		t.Fatal("the reference run has no trial at 8 in flight or more with client CPU and request throughput figures")
	}
	slices.Sort(costs)
	perRequest := costs[len(costs)/2]
	// The quota per 100 ms period holds burst requests' worth; the kubelet's smallest quota
	// is 1 ms per period (10m).
	limit := max(10, int64(math.Round(burst*perRequest/0.1*1000)))
	if v := int64(envFloat("LLMSERVE_RESTORED_BOUNDARY_LIMIT", 0)); v > 0 {
		limit = v
	}
	t.Logf("calibration: one runner pod without a limit spent %.3f ms of CPU a request (the median of %d trials at 8 in flight or more); limit %dm (%g requests' worth per 100 ms period), pods %d",
		perRequest*1000, len(costs), limit, burst, pods)
	limitCPU(t, cs, ns, limit)

	one := apply("pods-1", 1, limit, search)
	many := apply(fmt.Sprintf("pods-%d", pods), pods, limit, search)

	level := func(p *int) string {
		if p == nil {
			return "null"
		}
		return strconv.Itoa(*p)
	}
	wr, w1, wn := ref.Workloads[0], one.Workloads[0], many.Workloads[0]
	if wr.ClientBound || level(wr.MaximumPassingConcurrency) != "11" {
		t.Errorf("one pod without a limit: client_bound %v, maximum passing %s; want the server's 11", wr.ClientBound, level(wr.MaximumPassingConcurrency))
	}
	if !w1.ClientBound || w1.MaximumPassingConcurrency != nil {
		t.Errorf("pods = 1 under %dm: client_bound %v, maximum passing %s; want client-bound and no capacity", limit, w1.ClientBound, level(w1.MaximumPassingConcurrency))
	}
	if wn.ClientBound || level(wn.MaximumPassingConcurrency) != "11" {
		t.Errorf("pods = %d under %dm: client_bound %v, maximum passing %s; want the server's 11", pods, limit, wn.ClientBound, level(wn.MaximumPassingConcurrency))
	}
}
