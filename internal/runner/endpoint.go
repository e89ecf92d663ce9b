package runner

// A runner dials the addresses it is given from where it runs, not from where Terraform runs:
// the Docker runner from inside the server container's network namespace, the Kubernetes
// runner from a Job's pod. An address that reads right from the Terraform host can name
// nothing, or something else, there. These checks read only the addresses as written (no
// name is resolved, nothing is dialled), so they hold at plan.

import (
	"fmt"
	"net/netip"
	"net/url"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// Dialled is one URL the runner will dial (the benchmark's endpoint, a replica endpoint, a
// telemetry endpoint) and the setting that gives it.
type Dialled struct {
	Path attrpath.Path
	URL  string
}

// CheckKubernetesEndpoints warns about every address the Kubernetes runner would dial on the
// loopback (127.0.0.0/8, ::1, localhost): the Job's pod holds the runner alone, so nothing
// serves there, and the run would fail at its first request after the Job was scheduled.
func CheckKubernetesEndpoints(runner attrpath.Path, urls []Dialled) []problem.Problem {
	var out []problem.Problem
	for _, d := range urls {
		if u, ok := parse(d.URL); ok && endpoint.IsLoopback(u.Hostname()) {
			out = append(out, problem.Problem{Path: d.Path, Warning: true, Reads: []attrpath.Path{runner},
				Summary: "The Kubernetes runner cannot reach a loopback address",
				Detail: fmt.Sprintf("%s %s names the loopback, but with runner.kubernetes the benchmark runs in a Job's pod, where nothing but the runner listens on the loopback: "+
					"give the server's address as the pod sees it, its Service (llmserve_inference_deployment.<name>.endpoint, http://<service>.<namespace>.svc:<port>) or a pod IP "+
					"(llmserve_inference_deployment.<name>.replica_endpoints).", d.Path, endpoint.Redact(d.URL))})
		}
	}
	return out
}

// CheckDockerEndpoints warns about every address the Docker runner would dial at a private or
// link-local IP (10/8, 172.16/12, 192.168/16, 169.254/16, fc00::/7, fe80::/10): the runner
// shares the server container's network namespace and reaches the server on that namespace's
// loopback (http://127.0.0.1:<port inside the container>). A private address is the server's
// own container address or its host's, where the engine listens only when it publishes the
// port (publish = false binds 127.0.0.1 inside the container, so nothing answers there), and
// where it does, the requests leave the namespace and come back through the engine's port
// forwarding, which is then part of every figure. It is a warning, not an error: such an
// address can be meant (a gateway or load balancer in front of the server on a private
// network, a server on the host network reached by the host's address), and plan cannot see
// whether the server container publishes its port. A host name or public address is taken as
// meant and not warned about.
func CheckDockerEndpoints(runner attrpath.Path, urls []Dialled) []problem.Problem {
	var out []problem.Problem
	for _, d := range urls {
		u, ok := parse(d.URL)
		if !ok {
			continue
		}
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil || !(a.Unmap().IsPrivate() || a.Unmap().IsLinkLocalUnicast()) {
			continue
		}
		port := u.Port()
		if port == "" {
			port = "<port inside the container>"
		}
		out = append(out, problem.Problem{Path: d.Path, Warning: true, Reads: []attrpath.Path{runner},
			Summary: "The Docker runner reaches the server on its loopback",
			Detail: fmt.Sprintf("%s %s is a private address, but with runner.docker the benchmark runs inside the server container's network namespace and reaches the server on its loopback: "+
				"http://127.0.0.1:%s (the port the engine listens on inside its container; llmserve_inference_server.<name>.endpoint with publish = false is that address). "+
				"Through %s the runner reaches the server only where the engine publishes that port, and then through the engine's port forwarding, which becomes part of every figure; "+
				"with publish = false nothing answers there. If the address is meant (a gateway in front of the server), ignore this warning.",
				d.Path, endpoint.Redact(d.URL), port, a)})
	}
	return out
}

// parse reads a URL as the benchmark does; one it refuses is Config.Validate's to report.
func parse(raw string) (*url.URL, bool) {
	if raw == "" {
		return nil, false
	}
	u, err := endpoint.Parse(raw)
	return u, err == nil
}
