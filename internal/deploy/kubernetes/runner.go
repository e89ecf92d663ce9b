package kubernetes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// What a benchmark's runner Job (internal/runner) needs of the cluster connection: the
// clientset, the way to a pod's port (the same two accesses as the replicas'), and the
// cluster faults explained as the deployment's are.

// Clientset is the connection's typed client.
func (c *Cluster) Clientset() k8s.Interface { return c.cs }

// Host is the API server's address, for messages.
func (c *Cluster) Host() string { return c.rest.Host }

// PodBase is the base URL that reaches port of pod p from this machine, and the client to use.
func (c *Cluster) PodBase(p corev1.Pod, port int, access Access) (string, *http.Client) {
	if access == PodNetwork {
		return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	return fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s:%d/proxy", strings.TrimRight(c.rest.Host, "/"), p.Namespace, p.Name, port), c.http
}

// Explain turns a client error about reaching the cluster into a *ClusterError (refused,
// unauthorized, forbidden, untrusted, no answer) and returns any other error as it is.
func (c *Cluster) Explain(ctx context.Context, err error) error { return c.explain(ctx, err) }
