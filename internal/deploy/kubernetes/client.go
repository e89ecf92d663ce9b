// Package kubernetes runs an inference engine as a Kubernetes Deployment and Service:
// the objects (applied server-side under one field manager), the rollout wait that reports
// the failing pod's events and log lines, and the per-replica proof that every pod
// generates. It knows nothing of Terraform; engine facts come from internal/deploy.
package kubernetes

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	urlredact "github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
)

// Config is how to reach the API server, in the conventions of the Kubernetes provider:
// either a kubeconfig (ConfigPath, else KUBECONFIG, else ~/.kube/config, with ConfigContext)
// or Host with a Token or client certificate and the cluster's CA.
type Config struct {
	ConfigPath    string
	ConfigContext string

	Host                 string
	Token                string
	ClientCertificate    string // PEM
	ClientKey            string // PEM
	ClusterCACertificate string // PEM
	Insecure             bool

	// Unknown names settings whose values were not known when the provider was configured;
	// using the cluster then fails with that explanation.
	Unknown []string
}

// RESTConfig builds the client configuration. It reads files but contacts nothing.
func (c Config) RESTConfig() (*rest.Config, error) {
	if len(c.Unknown) > 0 {
		return nil, fmt.Errorf("the provider's kubernetes settings %s were not known when the provider was configured; "+
			"give them values known at plan time (or apply their sources first with -target)", strings.Join(c.Unknown, ", "))
	}
	if c.Host != "" {
		if err := checkHost(c.Host); err != nil {
			return nil, err
		}
		cfg := &rest.Config{
			Host:        c.Host,
			BearerToken: c.Token,
			TLSClientConfig: rest.TLSClientConfig{
				CertData: []byte(c.ClientCertificate), KeyData: []byte(c.ClientKey),
				CAData: []byte(c.ClusterCACertificate), Insecure: c.Insecure,
			},
		}
		if (c.ClientCertificate == "") != (c.ClientKey == "") {
			return nil, errors.New("kubernetes: client_certificate and client_key go together; set both or neither")
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // KUBECONFIG, then ~/.kube/config
	if c.ConfigPath != "" {
		p, err := expandHome(c.ConfigPath)
		if err != nil {
			return nil, err
		}
		// client-go opens the file itself; looked at first so a FIFO or a device there is
		// refused rather than read.
		if err := localfile.Check(p, KubeconfigFile); err != nil {
			return nil, fmt.Errorf("kubernetes: config_path: %w", err)
		}
		rules.ExplicitPath = p
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.ConfigContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("kubernetes: no cluster configured; set kubernetes.config_path (or KUBECONFIG), or kubernetes.host with a token or client certificate")
		}
		return nil, fmt.Errorf("kubernetes: loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// checkHost refuses a host that client-go would quote whole in its own errors, or that
// would carry a secret: control characters, user info, a query or a fragment. Messages quote
// the host redacted (urlredact.Redact), never as written.
func checkHost(h string) error {
	shown := urlredact.Redact(h)
	const fix = `give the API server's URL, e.g. "https://203.0.113.10:6443"`
	if strings.TrimSpace(h) != h || strings.ContainsFunc(h, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("kubernetes: host %q contains spaces or control characters; %s", shown, fix)
	}
	u, err := url.Parse(h)
	switch {
	case err != nil:
		return fmt.Errorf("kubernetes: host %q is not a URL; %s", shown, fix)
	case u.User != nil || strings.Contains(h, "@"):
		return fmt.Errorf("kubernetes: host %q carries credentials, which would be shown in plan output; authenticate with token or client_certificate and client_key", shown)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(h, "#"):
		return fmt.Errorf("kubernetes: host %q has a query or fragment, which an API server address does not carry; %s", shown, fix)
	}
	return nil
}

// KubeconfigFile is config_path: a regular file of at most 16 MiB.
var KubeconfigFile = localfile.Kind{Noun: "kubeconfig", MaxBytes: 16 << 20}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kubernetes: expanding %s: %w", p, err)
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}

// Cluster is a connection to one API server.
type Cluster struct {
	cs   k8s.Interface
	rest *rest.Config
	http *http.Client // authenticated to the API server, for the pod proxy
	// callTimeout bounds one request that should be answered at once; 0 is APICallTimeout,
	// or what deploy.CallTimeoutEnv says (requestTimeout).
	callTimeout time.Duration
}

// NewCluster connects (lazily: client-go dials on the first request).
func NewCluster(cfg *rest.Config) (*Cluster, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: building HTTP client for %s: %w", urlredact.Redact(cfg.Host), err)
	}
	cs, err := k8s.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: building client for %s: %w", urlredact.Redact(cfg.Host), err)
	}
	return &Cluster{cs: cs, rest: cfg, http: hc}, nil // callTimeout 0: APICallTimeout, or deploy.CallTimeoutEnv
}

// Connection is the provider's configured Kubernetes cluster, connected on first use:
// configuring the provider never reads a kubeconfig or contacts an API server, and a provider
// block that only uses Docker works without any Kubernetes settings.
type Connection struct {
	cfg Config

	mu sync.Mutex
	c  *Cluster
}

// NewConnection returns the connection to the cluster cfg names, not yet opened.
func NewConnection(cfg Config) *Connection { return &Connection{cfg: cfg} }

// Cluster returns the shared cluster client, building it on first call.
func (conn *Connection) Cluster() (*Cluster, error) {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.c != nil {
		return conn.c, nil
	}
	rc, err := conn.cfg.RESTConfig()
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "terraform-provider-llmserve"
	c, err := NewCluster(rc)
	if err != nil {
		return nil, err
	}
	conn.c = c
	return c, nil
}
