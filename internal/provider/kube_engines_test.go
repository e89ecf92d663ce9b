package provider

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/runner"
)

// The Kubernetes acceptance tests run against the real control plane scripts/kube-controlplane.sh
// starts (make test-kubernetes): etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok. kwok has no kubelet: it marks pods Running and Ready and gives
// them IPs from a pod CIDR routed locally to lo. kubeEngines plays the two parts of a node kwok leaves
// out, so the tests reach real engines:
//
//   - the container runtime: for every pod the provider created that kwok gave an IP, it
//     runs the pod's own command (llama.cpp's llama-server from the Debian rootfs of
//     scripts/build-llamacpp-image.sh, under chroot) listening on that pod IP; an SGLang or
//     vLLM pod (python3 -m ...) gets that engine's protocol double (internal/simengine) in
//     the test process instead, configured from the pod's launch command as engineshim
//     configures it in Docker, and counting the idle checks and flushes it answers;
//   - kube-proxy: the API server refuses loopback addresses in EndpointSlices, so a Service
//     has no endpoints here and nothing routes its cluster IP. kubeEngines listens on each
//     Service's cluster IP and port and spreads connections round-robin over the engines of
//     the pods the Service selects.
//
// Everything listens on the loopback device only: 127.0.0.0/8, and the pod CIDR the control
// plane script routes to lo as local (10.244.0.0/24).

// kubeTestEnv is the cluster of the current test run, or a skip with the reason.
func kubeTestEnv(t *testing.T) (kubeconfig string, cs k8s.Interface) {
	t.Helper()
	testAccPreCheck(t)
	kubeconfig = os.Getenv("LLMSERVE_TEST_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("Kubernetes acceptance test: run `make test-kubernetes`, which starts a control plane and sets LLMSERVE_TEST_KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err = k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, cs
}

// kubeVarRE is a $(VAR) reference in a container's command or arguments.
var kubeVarRE = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

type kubeEngines struct {
	t       *testing.T
	cs      k8s.Interface
	ns      string
	rootfs  string
	models  string
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	engines map[string]*podEngine      // by pod name
	proxies map[string]*serviceForward // by Service name
	started atomic.Int64
}

type podEngine struct {
	instance string
	addr     string // podIP:port
	cmd      *exec.Cmd
	exited   chan struct{}
	// An SGLang or vLLM pod's protocol double, served in this process: cmd is nil.
	double *podDouble
}

type serviceForward struct {
	instance string
	ln       net.Listener
	next     atomic.Uint64
}

// startKubeEngines runs engines for the provider's pods in ns until the test ends.
func startKubeEngines(t *testing.T, cs k8s.Interface, ns string) *kubeEngines {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rootfs, models := filepath.Join(root, ".cache/llamacpp-rootfs"), filepath.Join(root, ".cache/models")
	if _, err := os.Stat(filepath.Join(rootfs, "usr/bin/llama-server")); err != nil {
		t.Fatalf("llama.cpp rootfs missing (%v): run scripts/build-llamacpp-image.sh --rootfs-only", err)
	}
	if _, err := os.Stat(filepath.Join(models, "tiny-llama.gguf")); err != nil {
		t.Fatalf("tiny model missing (%v): run scripts/build-model.sh", err)
	}
	return runKubeEngines(t, cs, ns, rootfs, models)
}

// startKubeDoubles runs engine doubles for the provider's SGLang and vLLM pods in ns until
// the test ends; it needs no llama.cpp rootfs.
func startKubeDoubles(t *testing.T, cs k8s.Interface, ns string) *kubeEngines {
	t.Helper()
	return runKubeEngines(t, cs, ns, "", "")
}

func runKubeEngines(t *testing.T, cs k8s.Interface, ns, rootfs, models string) *kubeEngines {
	e := &kubeEngines{t: t, cs: cs, ns: ns, rootfs: rootfs, models: models, done: make(chan struct{}),
		engines: map[string]*podEngine{}, proxies: map[string]*serviceForward{}}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go e.loop(ctx)
	t.Cleanup(e.stop)
	return e
}

func (e *kubeEngines) loop(ctx context.Context) {
	defer close(e.done)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		e.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (e *kubeEngines) sync(ctx context.Context) {
	sel := metav1.ListOptions{LabelSelector: kubernetes.ManagedByLabel + "=llmserve"}
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, sel)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	live := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning || p.Labels[runner.KindLabel] != "" {
			continue
		}
		live[p.Name] = true
		if _, ok := e.engines[p.Name]; !ok {
			e.engines[p.Name] = e.run(p)
		}
	}
	for name, pe := range e.engines {
		if !live[name] {
			pe.kill()
			delete(e.engines, name)
		}
	}
	svcs, err := e.cs.CoreV1().Services(e.ns).List(ctx, sel)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, s := range svcs.Items {
		key := s.Name + "/" + s.Spec.ClusterIP
		seen[key] = true
		if _, ok := e.proxies[key]; ok || s.Spec.ClusterIP == "" || len(s.Spec.Ports) == 0 {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(s.Spec.Ports[0].Port))))
		if err != nil {
			e.t.Logf("kube-proxy stand-in: %v", err)
			continue
		}
		f := &serviceForward{instance: s.Spec.Selector[kubernetes.InstanceLabel], ln: ln}
		e.proxies[key] = f
		go e.forward(f)
	}
	for key, f := range e.proxies {
		if !seen[key] {
			f.ln.Close()
			delete(e.proxies, key)
		}
	}
}

// run starts the pod's engine command under chroot in the llama.cpp rootfs, bound to the
// pod IP, with the model directory at /models (the test configurations' model_cache).
func (e *kubeEngines) run(p corev1.Pod) *podEngine {
	c := p.Spec.Containers[0]
	argv := append(slices.Clone(c.Command), c.Args...)
	port := "8080"
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "--host":
			argv[i+1] = p.Status.PodIP
		case "--port":
			port = argv[i+1]
		}
	}
	if argv[0] == "llama-server" {
		argv[0] = "/usr/bin/llama-server"
	}
	script := `set -e; mount --bind "$1" "$2/models"; mount -t proc proc "$2/proc"; r=$2; shift 2; exec chroot "$r" "$@"`
	// The container's environment as a kubelet builds it: literal values and Secret keys;
	// then $(VAR) references in the arguments expand from it.
	env := map[string]string{}
	for _, ev := range c.Env {
		switch {
		case ev.ValueFrom != nil && ev.ValueFrom.SecretKeyRef != nil:
			ref := ev.ValueFrom.SecretKeyRef
			sec, err := e.cs.CoreV1().Secrets(p.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
			if err != nil {
				e.t.Logf("pod %s: secret %s: %v", p.Name, ref.Name, err)
				continue
			}
			env[ev.Name] = string(sec.Data[ref.Key])
		default:
			env[ev.Name] = ev.Value
		}
	}
	for i, a := range argv {
		argv[i] = kubeVarRE.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref // Kubernetes leaves unknown references as written
		})
	}
	if argv[0] == "python3" {
		return e.runDouble(p, argv, env, port)
	}
	if e.rootfs == "" {
		e.t.Errorf("pod %s runs %q: only SGLang and vLLM doubles run here (startKubeDoubles)", p.Name, argv[0])
		pe := &podEngine{instance: p.Labels[kubernetes.InstanceLabel], exited: make(chan struct{})}
		close(pe.exited)
		return pe
	}
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", e.models, e.rootfs}, argv...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(e.t.TempDir(), p.Name+".log"))
	if err == nil {
		cmd.Stdout, cmd.Stderr = logf, logf
	} else {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	}
	pe := &podEngine{instance: p.Labels[kubernetes.InstanceLabel], addr: net.JoinHostPort(p.Status.PodIP, port), cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		e.t.Logf("starting the engine of pod %s: %v", p.Name, err)
		close(pe.exited)
		return pe
	}
	e.started.Add(1)
	go func() {
		_ = cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		close(pe.exited)
	}()
	return pe
}

func (pe *podEngine) kill() {
	if pe.double != nil {
		pe.double.close()
		return
	}
	if pe.cmd != nil && pe.cmd.Process != nil {
		_ = syscall.Kill(-pe.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-pe.exited:
	case <-time.After(10 * time.Second):
	}
}

func (e *kubeEngines) forward(f *serviceForward) {
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			e.mu.Lock()
			var addrs []string
			for _, pe := range e.engines {
				if pe.instance == f.instance {
					addrs = append(addrs, pe.addr)
				}
			}
			e.mu.Unlock()
			if len(addrs) == 0 {
				return
			}
			slices.Sort(addrs)
			up, err := net.DialTimeout("tcp", addrs[f.next.Add(1)%uint64(len(addrs))], 5*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, conn); _ = up.(*net.TCPConn).CloseWrite() }()
			_, _ = io.Copy(conn, up)
		}()
	}
}

// running is the number of engines up now.
func (e *kubeEngines) running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.engines)
}

func (e *kubeEngines) stop() {
	e.cancel()
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, pe := range e.engines {
		pe.kill()
		delete(e.engines, name)
	}
	for key, f := range e.proxies {
		f.ln.Close()
		delete(e.proxies, key)
	}
}

func (e *kubeEngines) String() string {
	return fmt.Sprintf("%d engines running, %d started", e.running(), e.started.Load())
}
