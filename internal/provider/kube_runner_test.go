package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/llmserve/terraform-provider-llmserve/internal/results"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

// kubeRunners plays the kubelet for the benchmark's runner Jobs on the kwok control plane:
// for every runner pod kwok gave an IP it runs the pod's own arguments (`runner serve ...`)
// with the REAL runner program (the provider binary, built as the release builds it),
// listening on the pod IP, with the pod's Secret volume written to a directory as a kubelet
// mounts it and an emptyDir of its own. A container with limits.cpu runs in a CPU cgroup of
// its own with that quota, as a kubelet puts it (podCPUCgroup), removed with the pod. A runner
// process that dies is restarted in place with the same directory and cgroup (restartPolicy
// OnFailure, as a kubelet does); a deleted pod's process is stopped (SIGTERM, then SIGKILL
// after 5 s).
type kubeRunners struct {
	t       *testing.T
	cs      k8s.Interface
	ns, bin string
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	procs   map[string]*runnerProc // by pod name
	started atomic.Int64
	// What anyone listing the namespace sees of the runners (their pods and Jobs as JSON, and
	// their logs: what kubectl logs shows), and what their Secrets held.
	seen    []string
	logs    []string
	secrets []string
	// limits are the CPU quotas the runners ran under, by pod ("quota period" in
	// microseconds, as the kernel holds them).
	limits map[string]string
}

type runnerProc struct {
	pod, addr string
	specDir   string
	workDir   string
	argv      []string
	env       []string // the container's environment, its field references resolved as a kubelet does
	secret    map[string][]byte
	cgroup    *podCPUCgroup // nil: the container has no CPU limit
	cmd       *exec.Cmd
	exited    chan struct{}
	stopped   atomic.Bool
}

// buildKubeRunnerBinary is the runner program the pods run: LLMSERVE_RUNNER_BINARY when it
// names a prebuilt one, else buildRunnerBinary's.
func buildKubeRunnerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(runner.BinaryEnv); p != "" {
		return p
	}
	return buildRunnerBinary(t)
}

func startKubeRunners(t *testing.T, cs k8s.Interface, ns string) *kubeRunners {
	t.Helper()
	r := &kubeRunners{t: t, cs: cs, ns: ns, bin: buildKubeRunnerBinary(t), done: make(chan struct{}), procs: map[string]*runnerProc{}, limits: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.loop(ctx)
	t.Cleanup(r.stop)
	return r
}

func (r *kubeRunners) loop(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		r.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *kubeRunners) sync(ctx context.Context) {
	pods, err := r.cs.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: runner.KindLabel + "=kubernetes"})
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	live := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		live[p.Name] = true
		if _, ok := r.procs[p.Name]; !ok {
			if rp := r.run(ctx, p); rp != nil {
				r.procs[p.Name] = rp
			}
		}
	}
	for name, rp := range r.procs {
		if !live[name] {
			if err := rp.stop(); err != nil {
				r.t.Error(err)
			}
			delete(r.procs, name)
		}
	}
}

// run mounts the pod's Secret and starts its runner; nil while the Secret is not there yet
// (a kubelet waits for it too).
func (r *kubeRunners) run(ctx context.Context, p corev1.Pod) *runnerProc {
	var secret string
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	sec, err := r.cs.CoreV1().Secrets(p.Namespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	base := r.t.TempDir()
	rp := &runnerProc{pod: p.Name, addr: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(runner.ServePort)),
		specDir: filepath.Join(base, "spec"), workDir: filepath.Join(base, "work")}
	for _, dir := range []string{rp.specDir, rp.workDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			r.t.Errorf("pod %s: %v", p.Name, err)
			return nil
		}
	}
	rp.secret = sec.Data
	for _, v := range sec.Data {
		r.secrets = append(r.secrets, string(v))
	}
	if raw, err := json.Marshal(p); err == nil {
		r.seen = append(r.seen, string(raw))
	}
	if j, err := r.cs.BatchV1().Jobs(p.Namespace).Get(ctx, p.Labels["batch.kubernetes.io/job-name"], metav1.GetOptions{}); err == nil {
		if raw, err := json.Marshal(j); err == nil {
			r.seen = append(r.seen, string(raw))
		}
	}
	r.logs = append(r.logs, filepath.Join(base, "runner.log"))
	// The pod's arguments, with the pod's paths mapped onto this machine's directories.
	c := p.Spec.Containers[0]
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			key, ok := strings.CutPrefix(f.FieldRef.FieldPath, "metadata.annotations['")
			if !ok {
				r.t.Errorf("pod %s: env %s from %s, which this kubelet does not resolve", p.Name, e.Name, f.FieldRef.FieldPath)
				return nil
			}
			v = p.Annotations[strings.TrimSuffix(key, "']")]
		}
		rp.env = append(rp.env, e.Name+"="+v)
	}
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		if i > 0 {
			switch c.Args[i-1] {
			case "--listen":
				a = rp.addr
			case "--dir":
				a = rp.workDir
			case "--spec":
				a = filepath.Join(rp.specDir, filepath.Base(a))
			}
		}
		rp.argv = append(rp.argv, a)
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		cg, err := newPodCPUCgroup(fmt.Sprintf("llmserve-kubelet-%d-%s", os.Getpid(), p.Name), lim.MilliValue())
		if err != nil {
			r.t.Errorf("pod %s has limits.cpu %s: %v", p.Name, lim.String(), err)
			return nil
		}
		rp.cgroup = cg
		r.limits[p.Name] = cg.limit()
	}
	rp.start(r)
	return rp
}

func (rp *runnerProc) start(r *kubeRunners) {
	// The Secret's files as a kubelet mounts them, read-only: the runner cannot remove its
	// spec there (root here can), so they are written again for every start.
	for k, v := range rp.secret {
		_ = os.Remove(filepath.Join(rp.specDir, k))
		if err := os.WriteFile(filepath.Join(rp.specDir, k), v, 0o400); err != nil {
			r.t.Errorf("pod %s: %v", rp.pod, err)
		}
	}
	cmd := exec.Command(r.bin, rp.argv...)
	if rp.cgroup != nil {
		// Into the cgroup before the runner starts: the shell moves itself there and
		// becomes the runner.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `echo $$ >"$0" && exec "$@"`, rp.cgroup.procs(), r.bin}, rp.argv...)...)
	}
	cmd.Env = append(os.Environ(), rp.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(rp.workDir), "runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	rp.cmd = cmd
	rp.exited = make(chan struct{})
	if err := cmd.Start(); err != nil {
		r.t.Errorf("starting the runner of pod %s: %v", rp.pod, err)
		close(rp.exited)
		return
	}
	r.started.Add(1)
	exited := rp.exited
	go func() {
		err := cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		close(exited)
		// restartPolicy OnFailure: a runner that died starts again in the same pod, with
		// its emptyDir (and a fresh copy of the Secret's files, which the kubelet keeps).
		if err != nil && !rp.stopped.Load() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if rp.stopped.Load() {
				return
			}
			r.t.Logf("runner of pod %s died (%v): restarting it in place", rp.pod, err)
			rp.start(r)
		}
	}()
}

// kill kills the runner process (SIGKILL), as the OOM killer or a crash would.
func (rp *runnerProc) kill() {
	if rp.cmd != nil && rp.cmd.Process != nil {
		_ = syscall.Kill(-rp.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (rp *runnerProc) stop() error {
	rp.stopped.Store(true)
	if rp.cmd != nil && rp.cmd.Process != nil {
		_ = syscall.Kill(-rp.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-rp.exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-rp.cmd.Process.Pid, syscall.SIGKILL)
			<-rp.exited
		}
	}
	if rp.cgroup != nil {
		return rp.cgroup.remove()
	}
	return nil
}

func (r *kubeRunners) stop() {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, rp := range r.procs {
		if err := rp.stop(); err != nil {
			r.t.Error(err)
		}
		delete(r.procs, name)
	}
}

// runnerJobsGone checks that no runner Job, Secret or pod is left in ns.
func runnerJobsGone(cs k8s.Interface, ns string) error {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: runner.KindLabel + "=kubernetes"}
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	secs, err := cs.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	if len(jobs.Items) > 0 || len(secs.Items) > 0 {
		return fmt.Errorf("%d runner Jobs and %d runner Secrets left in %s", len(jobs.Items), len(secs.Items), ns)
	}
	return nil
}

// kubeRunnerConfig is a two-replica deployment and a benchmark measuring it from a runner
// Job; access is both resources' pod_access, "" for the default (the API server's pod proxy).
func kubeRunnerConfig(kubeconfig, name, access, extra string) string {
	line := ""
	if access != "" {
		line = fmt.Sprintf("pod_access = %q", access)
	}
	return fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    config_path = %[1]q
  }
}

resource "llmserve_inference_deployment" "doubles" {
  name                 = %[2]q
  image                = "llmserve/sglang-double:kwok"
  engine               = "sglang"
  model                = "sim/qwen-test"
  replicas             = 2
  accelerator_resource = "nvidia.com/gpu"
  accelerator_count    = 1
  node_selector        = { type = "kwok" }
  tolerations          = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
  %[4]s
  readiness_timeout    = "2m"
}

resource "llmserve_capacity_benchmark" "inside" {
  endpoint          = llmserve_inference_deployment.doubles.endpoint
  replica_endpoints = llmserve_inference_deployment.doubles.replica_endpoints
  model             = llmserve_inference_deployment.doubles.served_model_name
  workloads         = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos              = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search            = { concurrency_levels = [1, 2] }
  trial             = { warmup_requests = 2, measured_requests = 6, confirmation_trials = 1, cache_flush = "auto" }
  experiment        = llmserve_inference_deployment.doubles.experiment
  runner = {
    kubernetes = {
      namespace     = llmserve_inference_deployment.doubles.namespace
      image         = "ghcr.io/llmserve/llmserve-runner:test"
      node_selector = { type = "kwok" }
      tolerations   = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
      %[4]s
    }
  }
%[3]s
}
`, kubeconfig, name, extra, line)
}

// A deployment of two replicas behind a ClusterIP Service, measured from a runner Job in its
// namespace: the runner reaches the Service's cluster IP and waits for idle and flushes every
// replica's pod IP before every trial, from inside the cluster network; the provider follows
// it through the API server and removes its Job and Secret once it has the result. Both
// resources use the default pod_access, the API server's pod proxy: the deployment's readiness
// completions and the provider's reads of the runner go through it (the pod IPs are outside
// 127/8, which the API server refuses to proxy to: scripts/kube-controlplane.sh).
func TestAccInferenceDeployment_runner(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	engines := startKubeDoubles(t, cs, "default")
	runners := startKubeRunners(t, cs, "default")
	const name = "runner-inside"
	dep, bench := "llmserve_inference_deployment.doubles", "llmserve_capacity_benchmark.inside"
	var endpoints []string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			if err := kubeCheckGone(cs, "default", name)(s); err != nil {
				return err
			}
			return runnerJobsGone(cs, "default")
		},
		Steps: []resource.TestStep{{
			Config: kubeRunnerConfig(kubeconfig, name, "", `  api_key       = "`+runnerAPIKey+`"
  admin_api_key = "`+runnerAdminKey+`"`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(bench, tfjsonpath.New("api_key"), knownvalue.Null()),
				statecheck.ExpectKnownValue(bench, tfjsonpath.New("admin_api_key"), knownvalue.Null()),
				statecheck.ExpectKnownValue(dep, tfjsonpath.New("pod_access"), knownvalue.StringExact("api_proxy")),
				// Unset: the runner is read through the API server's pod proxy (its default).
				statecheck.ExpectKnownValue(bench, tfjsonpath.New("runner").AtMapKey("kubernetes").AtMapKey("pod_access"), knownvalue.Null()),
				statecheck.ExpectKnownValue(dep, tfjsonpath.New("endpoint"), knownvalue.StringRegexp(regexp.MustCompile(`^http://127\.0\.96\.\d+:30000$`))),
				statecheck.ExpectKnownValue(dep, tfjsonpath.New("replica_endpoints"), listInto{&endpoints}),
				statecheck.ExpectKnownValue(bench, tfjsonpath.New("results_json"), perPodProof{engines: engines, endpoints: &endpoints, trials: 2}),
				statecheck.ExpectKnownValue(bench, tfjsonpath.New("results_json"), ranIn{kind: "kubernetes"}),
			},
			Check: func(*terraform.State) error {
				if runners.started.Load() == 0 {
					return fmt.Errorf("no runner process was started: the load did not run in the runner's pod")
				}
				if err := runners.keptSecret(runnerAPIKey, runnerAdminKey); err != nil {
					return err
				}
				// Collected: the Job and its Secret are gone with the apply that read the result.
				return runnerJobsGone(cs, "default")
			},
		}},
	})
}

const runnerAPIKey, runnerAdminKey = "sk-kube-runner-4711", "sk-kube-admin-0815"

// keptSecret checks that the keys reached the runners only through their Secrets: never in a
// pod's or Job's object (environment, arguments, labels, annotations) or a runner's log.
func (r *kubeRunners) keptSecret(keys ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return fmt.Errorf("no runner pod seen")
	}
	for _, key := range keys {
		if !strings.Contains(strings.Join(r.secrets, "\n"), key) {
			return fmt.Errorf("the key %s did not reach the runner through its Secret", key[:6])
		}
		for _, obj := range r.seen {
			if strings.Contains(obj, key) {
				return fmt.Errorf("a runner's pod or Job holds the key %s...: %.300s", key[:6], obj)
			}
		}
		for _, path := range r.logs {
			raw, _ := os.ReadFile(path)
			if strings.Contains(string(raw), key) {
				return fmt.Errorf("the runner's log %s holds the key %s...", path, key[:6])
			}
		}
	}
	return nil
}

// ranIn checks where results_json says the load ran.
type ranIn struct{ kind string }

func (r ranIn) String() string { return "results_json with runner.kind " + r.kind }

func (r ranIn) CheckValue(v any) error {
	raw, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %T", v)
	}
	doc, err := results.Parse([]byte(raw))
	if err != nil {
		return err
	}
	if doc.Runner == nil || doc.Runner.Kind != r.kind || !strings.Contains(doc.Runner.Network, "namespace") {
		return fmt.Errorf("runner %+v, want kind %s on the pod network", doc.Runner, r.kind)
	}
	return nil
}

// An identity that may read but not create in the namespace (the built-in view role) gets a
// diagnostic naming the permission and the Role the runner needs, and leaves nothing behind.
func TestAccInferenceDeployment_runnerForbidden(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	ctx := context.Background()
	const ns, sa = "default", "llmserve-runner-viewer"
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().RoleBindings(ns).Delete(context.Background(), sa, metav1.DeleteOptions{})
		_ = cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), sa, metav1.DeleteOptions{})
	})
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(filepath.Dir(kubeconfig), "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	host := kubeHost(t, kubeconfig)
	cfg := fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    host                   = %q
    token                  = %q
    cluster_ca_certificate = %q
  }
}

resource "llmserve_capacity_benchmark" "denied" {
  endpoint  = "http://127.0.96.250:30000"
  model     = "sim"
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 1000 }]
  search    = { concurrency_levels = [1] }
  runner = {
    kubernetes = { namespace = %q, image = "ghcr.io/llmserve/llmserve-runner:test" }
  }
}
`, host, tok.Status.Token, string(ca), ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      cfg,
			ExpectError: regexp.MustCompile(`(?s)Kubernetes credentials lack a permission the runner needs.*forbids the provider's identity to create\s+secrets\s+in\s+namespace\s+default.*jobs\.batch:\s+get,\s+list,\s+create,\s+delete`),
			Check:       func(*terraform.State) error { return runnerJobsGone(cs, ns) },
		}},
	})
	if err := runnerJobsGone(cs, ns); err != nil {
		t.Error(err)
	}
}

// kubeHost is the API server address of the test kubeconfig.
func kubeHost(t *testing.T, kubeconfig string) string {
	t.Helper()
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`server: (\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("no server in the test kubeconfig")
	}
	return string(m[1])
}

// kill kills the runner process of the pod of job, as the OOM killer would; the harness
// restarts it in the pod, as a kubelet does under restartPolicy OnFailure.
func (r *kubeRunners) kill(t *testing.T, job string) {
	t.Helper()
	r.killPod(t, job, 0)
}

// killPod kills the runner process of job's pod of completion index (0 for a Job of one pod).
func (r *kubeRunners) killPod(t *testing.T, job string, index int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.proc(job, index)
	if rp == nil {
		t.Fatalf("no runner process for pod %d of runner Job %s", index, job)
	}
	if _, err := os.Stat(filepath.Join(r.proc(job, 0).workDir, "result.json")); err == nil {
		t.Fatalf("the runner of Job %s finished before it could be killed mid-run: make the run longer", job)
	}
	rp.kill()
}

// proc is the runner process of job's pod of completion index; r.mu is held.
func (r *kubeRunners) proc(job string, index int) *runnerProc {
	pods, err := r.cs.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil {
		return nil
	}
	for _, p := range pods.Items {
		idx, ok := p.Annotations["batch.kubernetes.io/job-completion-index"]
		if p.DeletionTimestamp == nil && (idx == strconv.Itoa(index) || !ok && index == 0) {
			return r.procs[p.Name]
		}
	}
	return nil
}

// finished says whether the runner of job has written its result.
func (r *kubeRunners) finished(job string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rp := r.proc(job, 0)
	if rp == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(rp.workDir, "result.json"))
	return err == nil
}

func runnerJobs(t *testing.T, cs k8s.Interface, ns string) []string {
	t.Helper()
	jobs, err := cs.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{LabelSelector: runner.KindLabel + "=kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Name)
	}
	return names
}

// served is the generation requests the deployment's doubles have completed.
func (e *kubeEngines) served() int64 {
	var n int64
	for _, d := range e.doubles() {
		n += d.engine.Stats().RequestsServed
	}
	return n
}

// An apply interrupted (SIGINT to the CLI) while the runner Job measures leaves it measuring;
// the next apply with the same configuration attaches to it (or, when its process was killed
// meanwhile and restarted in its pod, to the runner that resumed from its journal there); a
// changed configuration stops and removes it. The doubles' request counts prove that nothing
// was measured twice, except the trial a killed runner was in.
func TestAccInferenceDeployment_runnerInterrupted(t *testing.T) {
	kubeconfig, cs := kubeTestEnv(t)
	engines := startKubeDoubles(t, cs, "default")
	runners := startKubeRunners(t, cs, "default")
	c := newCLI(t)
	const name = "runner-detached"
	tfFile := func(dir, body string) {
		cfg := "terraform {\n  required_providers {\n    llmserve = { source = \"llmserve/llmserve\" }\n  }\n}\n" + body
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The deployment, applied once; each case measures it from a directory of its own.
	depDir := t.TempDir()
	tfFile(depDir, strings.SplitN(kubeRunnerConfig(kubeconfig, name, "pod_network", ""), `resource "llmserve_capacity_benchmark"`, 2)[0]+`
output "endpoint" { value = llmserve_inference_deployment.doubles.endpoint }
output "replicas" { value = llmserve_inference_deployment.doubles.replica_endpoints }
output "model" { value = llmserve_inference_deployment.doubles.served_model_name }
`)
	if out, err := c.apply(t, depDir, nil); err != nil {
		t.Fatalf("deployment: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		cmd := exec.Command(c.bin, "destroy", "-auto-approve", "-no-color")
		cmd.Dir, cmd.Env = depDir, c.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("destroy: %v\n%s", err, out)
		}
	})
	outs := c.outputs(t, depDir)
	bench := func(dir, extra string) {
		tfFile(dir, fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    config_path = %[1]q
  }
}

resource "llmserve_capacity_benchmark" "inside" {
  endpoint          = %[2]s
  replica_endpoints = %[3]s
  model             = %[6]s
  workloads         = [{ label = "64 / 8", input_tokens = 64, output_tokens = 128 }]
  slos              = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 60000 }]
  search            = { concurrency_levels = [1, 2, 3, 4, 5, 6] }
  trial             = { warmup_requests = 1, measured_requests = 16, confirmation_trials = 1, cache_flush = "auto" }
  progress_file     = %[4]q
  progress_log      = "${%[4]q}.log"
  runner = {
    kubernetes = {
      namespace     = "default"
      image         = "ghcr.io/llmserve/llmserve-runner:test"
      node_selector = { type = "kwok" }
      tolerations   = [{ key = "kwok.x-k8s.io/node", operator = "Exists", effect = "NoSchedule" }]
      pod_access    = "pod_network"
    }
  }
%[5]s
}

output "trials" { value = llmserve_capacity_benchmark.inside.maximum_passing_concurrency["64 / 8"] }
`, kubeconfig, outs["endpoint"], outs["replicas"], filepath.Join(dir, "p.jsonl"), extra, outs["model"]))
	}
	trialsIn := func(path string) int {
		raw, _ := os.ReadFile(path)
		return strings.Count(string(raw), `"kind":"probe"`) + strings.Count(string(raw), `"kind":"confirmation"`)
	}

	freshDir := t.TempDir()
	bench(freshDir, "")
	before, t0 := engines.served(), time.Now()
	lags := watchLag(filepath.Join(freshDir, "p.jsonl"))
	if out, err := c.apply(t, freshDir, nil); err != nil {
		t.Fatalf("uninterrupted apply: %v\n%s", err, out)
	}
	if l, first := lags(); len(l) > 0 {
		slices.Sort(l)
		t.Logf("progress lag (a trial's end in the runner to its line in the local progress_file, polled every 20 ms): median %s, max %s over %d trials; apply start to the first trial's line %s",
			l[len(l)/2].Round(time.Millisecond), l[len(l)-1].Round(time.Millisecond), len(l), first.Sub(t0).Round(time.Millisecond))
	}
	wantRequests := engines.served() - before
	want := c.outputs(t, freshDir)
	t.Logf("uninterrupted: %s levels, %d trials, %d requests served, %.1f s", want["trials"], trialsIn(filepath.Join(freshDir, "p.jsonl")), wantRequests, time.Since(t0).Seconds())

	cases := []struct {
		name          string
		between       func(t *testing.T, job string)
		extraRequests int64
		extra         string
		said          string // what the second apply says (its diagnostics or the progress log)
	}{
		{name: "attach to the running runner", between: func(t *testing.T, job string) {}, said: "attached to runner Job"},
		{name: "collect the finished runner", between: func(t *testing.T, job string) {
			if !waitFor(t, func() bool { return runners.finished(job) }) {
				t.Fatal("the detached runner did not finish")
			}
		}, said: "collected the result of runner Job"},
		// The restarted runner reuses its journal's trials: the apply reports them.
		{name: "resume after the runner was killed", between: func(t *testing.T, job string) { runners.kill(t, job) }, extraRequests: 6 + 16, said: "what the run reused"},
		{name: "a changed configuration removes the runner", between: func(t *testing.T, job string) {}, extra: `  triggers = { revision = "2" }`, said: "of another configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			progress := filepath.Join(dir, "p.jsonl")
			bench(dir, "")
			before := engines.served()
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
			first := runnerJobs(t, cs, "default")
			if len(first) != 1 {
				t.Fatalf("after the interrupt: runner Jobs %q, want one", first)
			}
			tc.between(t, first[0])
			if tc.extra != "" {
				bench(dir, tc.extra)
			}
			out, err = c.apply(t, dir, nil)
			if err != nil {
				t.Fatalf("second apply: %v\n%s", err, out)
			}
			log, _ := os.ReadFile(progress + ".log")
			if !strings.Contains(out+string(log), tc.said) {
				t.Errorf("the second apply does not say %q:\n%s\nprogress log:\n%s", tc.said, out, log)
			}
			got := c.outputs(t, dir)
			if string(got["trials"]) != string(want["trials"]) {
				t.Errorf("levels after the interrupt %s, uninterrupted %s", got["trials"], want["trials"])
			}
			served := engines.served() - before
			t.Logf("%s: %d requests served (uninterrupted %d)", tc.name, served, wantRequests)
			if tc.extra == "" && (served < wantRequests || served > wantRequests+tc.extraRequests) {
				t.Errorf("%d requests served, want %d (+%d at most): a trial was lost or measured twice", served, wantRequests, tc.extraRequests)
			}
			if left := runnerJobs(t, cs, "default"); len(left) > 0 {
				t.Errorf("runner Jobs left after the result was collected: %q", left)
			}
			if err := runnerJobsGone(cs, "default"); err != nil {
				t.Error(err)
			}
		})
	}
}

// watchLag polls the local progress file every 20 ms and returns, when called, how long after
// each trial finished in the runner (the journal line's own time) its line arrived here, and
// when the first arrived.
func watchLag(path string) func() ([]time.Duration, time.Time) {
	var mu sync.Mutex
	var lags []time.Duration
	var firstLine time.Time
	seen := map[string]bool{}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			raw, _ := os.ReadFile(path)
			now := time.Now()
			for _, line := range strings.Split(string(raw), "\n") {
				var e struct {
					Time time.Time `json:"time"`
					Kind string    `json:"kind"`
				}
				if seen[line] || json.Unmarshal([]byte(line), &e) != nil || (e.Kind != "probe" && e.Kind != "confirmation") {
					continue
				}
				seen[line] = true
				mu.Lock()
				lags = append(lags, now.Sub(e.Time))
				if firstLine.IsZero() {
					firstLine = now
				}
				mu.Unlock()
			}
		}
	}()
	return func() ([]time.Duration, time.Time) {
		close(stop)
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lags), firstLine
	}
}
