package kubernetes

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
)

// Bounds on reaching the API server, stated in the resource's documentation. A refused
// connection fails at once.
const (
	// APICallTimeout bounds one request the API server answers at once (a read, an apply, a
	// delete): an API server that accepts the connection and never answers fails the
	// operation after it, rather than holding it until timeouts.create.
	APICallTimeout = 30 * time.Second
	// TLSHandshakeTimeout is client-go's bound on the TLS handshake (transport defaults in
	// k8s.io/client-go/transport): something listening that never speaks TLS fails after it.
	TLSHandshakeTimeout = 10 * time.Second
	// DialTimeout is client-go's bound on opening the TCP connection (an address that drops
	// packets).
	DialTimeout = 30 * time.Second
)

// ClusterError is a request the API server did not serve for a reason that is about the
// cluster connection, not the deployment: a refused connection, a TLS handshake that never
// finished, no answer, refused or insufficient credentials, an untrusted certificate.
// Summary names it for a diagnostic's title; Error says what failed, at which address, what
// to check, and the client's own error.
type ClusterError struct {
	Summary string
	Detail  string
	Err     error
}

func (e *ClusterError) Error() string { return e.Detail + " (" + e.Err.Error() + ")" }
func (e *ClusterError) Unwrap() error { return e.Err }

// NameTakenError is an object of the deployment's names that llmserve did not create for it.
type NameTakenError struct{ Kind, Namespace, Name string }

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("%s %s/%s already exists and was not created by llmserve for this deployment; choose another name or namespace, or remove it", e.Kind, e.Namespace, e.Name)
}

// bound is the context of one request the API server should answer at once.
func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.requestTimeout())
}

func (c *Cluster) requestTimeout() time.Duration {
	if c.callTimeout > 0 {
		return c.callTimeout
	}
	return deploy.CallTimeout(APICallTimeout)
}

// CallTimeout is the bound of one request the API server should answer at once:
// APICallTimeout, or what deploy.CallTimeoutEnv says.
func (c *Cluster) CallTimeout() time.Duration { return c.requestTimeout() }

// explain turns a client error that is about reaching the cluster into a ClusterError, and
// returns any other error as it is. ctx is the operation's context (not the request's bound):
// when it is done, the operation ran out of time and the error says so itself.
func (c *Cluster) explain(ctx context.Context, err error) error {
	var done *ClusterError
	if err == nil || errors.As(err, &done) {
		return err
	}
	host := c.rest.Host
	cluster := func(summary, format string, args ...any) error {
		return &ClusterError{Summary: summary, Detail: fmt.Sprintf(format, args...), Err: err}
	}
	var netErr net.Error
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return cluster("Kubernetes API server refused the connection",
			"the Kubernetes API server at %s refused the connection: nothing listens at that address and port. Check kubernetes.host (or the kubeconfig's server) and that the cluster is running", host)
	case strings.Contains(err.Error(), "TLS handshake timeout"):
		return cluster("TLS handshake with the Kubernetes API server did not finish",
			"the TLS handshake with the Kubernetes API server at %s did not finish within %s: something accepts connections there but does not answer as a TLS server. Check that kubernetes.host is the API server's https:// address and port", host, TLSHandshakeTimeout)
	case apierrors.IsUnauthorized(err):
		return cluster("Kubernetes API server refused the credentials",
			"the Kubernetes API server at %s refused the credentials (401 Unauthorized): the token or client certificate is wrong, expired or for another cluster. Renew kubernetes.token (or client_certificate and client_key, or the kubeconfig's user)", host)
	case apierrors.IsForbidden(err):
		return cluster("Kubernetes credentials lack a permission",
			"the credentials are valid but the Kubernetes API server at %s forbids this request (403 Forbidden); grant the user a role that may get, list, create, update and delete Deployments, Services, Secrets and pods (and read pods' logs and events) in the namespace", host)
	case errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &invalid):
		return cluster("Kubernetes API server's certificate is not trusted",
			"the Kubernetes API server at %s presented a certificate this machine does not trust for that address; give its CA in kubernetes.cluster_ca_certificate (or the kubeconfig's certificate-authority-data)", host)
	case errors.As(err, &dns):
		return cluster("Kubernetes API server's name does not resolve",
			"the host name of the Kubernetes API server %s does not resolve; check kubernetes.host (or the kubeconfig's server)", host)
	case ctx.Err() != nil:
		return err // the operation's own timeout or cancellation
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return cluster("Kubernetes API server did not answer",
			"the Kubernetes API server at %s did not answer within %s (no reply at that address: a server that accepts connections and never replies, or a firewall dropping packets); check that the address is the API server and that it is healthy (kubectl get --raw /readyz)", host, c.requestTimeout())
	}
	return err
}
