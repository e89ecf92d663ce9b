package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/httpbody"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// Access is how this machine reaches a pod for the generation check and cache flushes.
type Access string

const (
	// APIProxy goes through the API server's pod proxy
	// (/api/v1/namespaces/NS/pods/POD:PORT/proxy/...): works wherever the API server is
	// reachable, with the provider's own credentials. The API server consumes the
	// Authorization header, so an engine API key cannot be sent this way.
	APIProxy Access = "api_proxy"
	// PodNetwork connects to the pod IP directly: for runners inside the cluster network.
	PodNetwork Access = "pod_network"
)

// Accesses lists the access modes, in documentation order.
var Accesses = []Access{APIProxy, PodNetwork}

// CheckAccess reports an access that cannot do what the deployment needs: the API server's
// pod proxy (the default) consumes the Authorization header, so the generation check could
// not present the engine's API key through it.
func CheckAccess(a Access, apiKey bool) []problem.Problem {
	if !apiKey || a == PodNetwork {
		return nil
	}
	return []problem.Problem{{Path: attrpath.Root("pod_access"), Detail: "api_key_wo needs pod_access = \"pod_network\": the API server's pod proxy consumes the Authorization header, " +
		"so the generation check cannot present the engine's API key through it. Set pod_access = \"pod_network\" and run Terraform where the pod IPs are reachable, " +
		"or drop api_key_wo and protect the Service with a NetworkPolicy"}}
}

// Replica is one ready pod and the base URL that reaches its engine from this machine.
type Replica struct {
	Pod    string
	Base   string
	Client *http.Client
}

// Replicas are the deployment's ready pods with how to reach each one.
func (c *Cluster) Replicas(ctx context.Context, d Deployment, port int, access Access) ([]Replica, error) {
	pods, err := c.readyPods(ctx, d)
	if err != nil {
		return nil, err
	}
	out := make([]Replica, 0, len(pods))
	for _, p := range pods {
		r := Replica{Pod: p.Name}
		if access == PodNetwork {
			r.Base = "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))
			r.Client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		} else {
			r.Base = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s:%d/proxy", strings.TrimRight(c.rest.Host, "/"), p.Namespace, p.Name, port)
			r.Client = c.http
		}
		out = append(out, r)
	}
	return out, nil
}

// ReplicaEndpoints are the base URLs of the deployment's ready pods on the pod network
// (http://POD_IP:PORT), in pod-name order: what a benchmark needs to wait for and flush
// every replica on its own, which a flush through the Service cannot (it reaches one).
func (c *Cluster) ReplicaEndpoints(ctx context.Context, d Deployment, port int) ([]string, error) {
	reps, err := c.Replicas(ctx, d, port, PodNetwork)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(reps))
	for i, r := range reps {
		out[i] = r.Base
	}
	return out, nil
}

// ProveGenerates waits until one real completion succeeds on every replica (r.Timeout and
// ctx bound it), and returns what the first replica reports about itself. A Service would
// spread the checks over replicas at random; going to each pod proves every one.
func (c *Cluster) ProveGenerates(ctx context.Context, d Deployment, port int, access Access, r deploy.Readiness) (engine.ServerInfo, int, error) {
	ctx, cancel, interval := r.Bound(ctx)
	defer cancel()
	var reps []Replica
	for {
		var err error
		reps, err = c.Replicas(ctx, d, port, access)
		if err == nil && len(reps) >= int(d.Replicas) {
			break
		}
		if ctx.Err() != nil {
			return engine.ServerInfo{}, 0, fmt.Errorf("waiting for %d ready pods of %s/%s: %w (have %d)", d.Replicas, d.Namespace, d.Name, ctx.Err(), len(reps))
		}
		time.Sleep(interval)
	}
	for _, rep := range reps {
		rr := r
		rr.HTTPClient = rep.Client
		var lastErr error
		for {
			if lastErr = deploy.Probe(ctx, rep.Base, rr); lastErr == nil {
				break
			}
			// A replica answering with broken text will not mend by waiting.
			if broken := (*deploy.DegenerateError)(nil); errors.As(lastErr, &broken) {
				return engine.ServerInfo{}, 0, fmt.Errorf("replica %s of %s/%s: %w", rep.Pod, d.Namespace, d.Name, lastErr)
			}
			// The API server proxies only to global unicast pod IPs; waiting cannot change that.
			if access == APIProxy && strings.Contains(lastErr.Error(), "address not allowed") {
				return engine.ServerInfo{}, 0, fmt.Errorf("the API server refuses to proxy to pod %s of %s/%s (its pod IP is loopback or link-local): %w; set pod_access = %q where this machine reaches the pod network",
					rep.Pod, d.Namespace, d.Name, lastErr, PodNetwork)
			}
			select {
			case <-ctx.Done():
				return engine.ServerInfo{}, 0, fmt.Errorf("replica %s of %s/%s does not generate: %w (last attempt through %s: %s)",
					rep.Pod, d.Namespace, d.Name, ctx.Err(), access, httpbody.NewRedactor(r.Redact...).String(lastErr.Error()))
			case <-time.After(interval):
			}
		}
	}
	rr := r
	rr.HTTPClient = reps[0].Client
	return deploy.ReadServerInfo(ctx, reps[0].Base, rr), len(reps), nil
}
