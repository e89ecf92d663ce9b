package provider

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
	"github.com/llmserve/terraform-provider-llmserve/internal/simengine"
)

// podDouble is an SGLang or vLLM pod's engine: the engine's protocol double, configured from
// the pod's launch command the way engineshim configures it in a container (metrics and
// cached-token reports only with the engine's flags for them, vLLM's development endpoints
// only with VLLM_SERVER_DEV_MODE=1), listening on the pod IP. It records, in order, the
// calls that matter for a trial's start: idle checks, flushes and generations.
type podDouble struct {
	pod    string
	engine *simengine.Server
	srv    *http.Server
	calls  simengine.CallLog
}

func (e *kubeEngines) runDouble(p corev1.Pod, argv []string, env map[string]string, port string) *podEngine {
	pe := &podEngine{instance: p.Labels[kubernetes.InstanceLabel], addr: net.JoinHostPort(p.Status.PodIP, port), exited: make(chan struct{})}
	opts, err := doubleOptions(argv, env)
	if err == nil {
		opts.Model = simengine.DefaultModel()
		opts.TimeScale = 0.05
		var eng *simengine.Server
		if eng, err = simengine.NewServer(opts); err == nil {
			var ln net.Listener
			if ln, err = net.Listen("tcp", pe.addr); err == nil {
				d := &podDouble{pod: p.Name, engine: eng}
				d.srv = &http.Server{Handler: d.calls.Wrap(eng), ReadHeaderTimeout: 10 * time.Second}
				go func() { _ = d.srv.Serve(ln) }()
				pe.double = d
				e.started.Add(1)
				return pe
			}
		}
	}
	e.t.Errorf("pod %s: cannot run its engine double: %v", p.Name, err)
	close(pe.exited)
	return pe
}

// doubleOptions maps an SGLang or vLLM launch (python3 -m <module> <flags>) onto the double.
func doubleOptions(argv []string, env map[string]string) (simengine.Options, error) {
	var o simengine.Options
	if len(argv) < 3 || argv[1] != "-m" {
		return o, fmt.Errorf("want python3 -m <module>, got %q", argv)
	}
	has := func(flag string) bool { return slices.Contains(argv, flag) }
	value := func(flags ...string) string {
		for i := 0; i+1 < len(argv); i++ {
			if slices.Contains(flags, argv[i]) {
				return argv[i+1]
			}
		}
		return ""
	}
	o.ModelName = value("--served-model-name")
	if o.ModelName == "" {
		o.ModelName = value("--model-path", "--model")
	}
	switch argv[2] {
	case "sglang.launch_server":
		o.Protocol = simengine.SGLang
		o.NoMetrics = !has("--enable-metrics")
		o.NoCacheReport = !has("--enable-cache-report")
	case "vllm.entrypoints.openai.api_server":
		o.Protocol = simengine.VLLM
		o.NoCacheReport = !has("--enable-prompt-tokens-details")
		o.DevMode = env["VLLM_SERVER_DEV_MODE"] == "1"
	default:
		return o, fmt.Errorf("unknown engine module %q", argv[2])
	}
	return o, nil
}

// flushes are the flushes the double answered, and whether each came right after an idle
// check on this pod.
func (d *podDouble) flushes() (n int, afterIdle []bool) {
	events := d.calls.Events()
	for i, ev := range events {
		if ev == "flush" {
			n++
			afterIdle = append(afterIdle, i > 0 && events[i-1] == "idle")
		}
	}
	return n, afterIdle
}

func (d *podDouble) close() { _ = d.srv.Close() }

// doubles are the pod doubles running now, by the base URL that reaches each on the pod
// network (what the deployment's replica_endpoints lists).
func (e *kubeEngines) doubles() map[string]*podDouble {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]*podDouble{}
	for _, pe := range e.engines {
		if pe.double != nil {
			out["http://"+pe.addr] = pe.double
		}
	}
	return out
}
