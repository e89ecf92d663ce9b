// Package docker runs inference-server containers on a Docker Engine: the local socket, a
// remote engine over tcp:// with verified TLS, or over ssh://. It implements deploy.Backend.
package docker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/llmserve/terraform-provider-llmserve/internal/localfile"
)

// DefaultHost is the local engine socket, used when neither configuration nor DOCKER_HOST
// names one.
const DefaultHost = "unix:///var/run/docker.sock"

// Config says how to reach a Docker Engine. TLS material comes as PEM text or as a directory
// holding ca.pem, cert.pem and key.pem (the DOCKER_CERT_PATH layout); PEM text wins.
type Config struct {
	Host string // unix://, tcp:// or ssh://user@host[:port]

	CAPEM, CertPEM, KeyPEM string
	CertPath               string
	// TLSVerify demands TLS for tcp:// even when no material is given (DOCKER_TLS_VERIFY).
	// TLS, once on, always verifies the engine's certificate.
	TLSVerify bool

	SSHPrivateKeyPEM  string
	SSHKnownHostsFile string // default ~/.ssh/known_hosts
	SSHSocketPath     string // the engine's socket on the ssh host; default /var/run/docker.sock

	// Unknown names settings whose values were not known yet when the provider was
	// configured; building a client then fails with that explanation.
	Unknown []string
}

// ConfigFromEnv fills unset fields from the conventional environment variables.
func ConfigFromEnv(c Config) Config {
	if c.Host == "" {
		c.Host = os.Getenv("DOCKER_HOST")
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.CertPath == "" {
		c.CertPath = os.Getenv("DOCKER_CERT_PATH")
	}
	if v := os.Getenv("DOCKER_TLS_VERIFY"); v != "" && v != "0" {
		c.TLSVerify = true
	}
	return c
}

// Connection bounds: the dial (the Docker client's own, 10 s, for tcp://; the ssh dialer's
// for ssh://), the TLS handshake and the ssh handshake each have a deadline, so an engine
// host that accepts connections and then says nothing fails within seconds instead of
// hanging; each call then has callTimeout.
var tlsHandshakeTimeout = 30 * time.Second

// NewClient builds an Engine API client. It does not contact the engine; the API version is
// negotiated on the first call.
func NewClient(c Config) (*client.Client, error) {
	if len(c.Unknown) > 0 {
		return nil, fmt.Errorf("the Docker connection settings %s are only known after apply; set them from variables or literals so the provider can reach the engine", strings.Join(c.Unknown, ", "))
	}
	if _, err := checkHost(c.Host); err != nil {
		return nil, fmt.Errorf("docker_host (or DOCKER_HOST) %w", err)
	}
	u, err := url.Parse(c.Host)
	if err != nil {
		return nil, fmt.Errorf("docker_host %q is not a URL; use unix:///path, tcp://host:port or ssh://user@host: %w", c.Host, err)
	}
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	switch u.Scheme {
	case "unix", "npipe":
		opts = append(opts, client.WithHost(c.Host))
	case "tcp", "https":
		tlsCfg, err := c.tlsConfig(u.Hostname())
		if err != nil {
			return nil, err
		}
		if tlsCfg != nil {
			opts = append(opts, client.WithHTTPClient(&http.Client{Transport: &http.Transport{
				TLSClientConfig: tlsCfg,
				// A host that accepts the connection and never completes the handshake
				// (a tarpit, a plain-HTTP port) must not hold plan and apply.
				TLSHandshakeTimeout: tlsHandshakeTimeout,
			}}))
		}
		opts = append(opts, client.WithHost("tcp://"+u.Host))
		if tlsCfg != nil {
			opts = append(opts, client.WithScheme("https"))
		}
	case "ssh":
		d, err := newSSHDialer(c, u)
		if err != nil {
			return nil, err
		}
		opts = append(opts,
			client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: d.dial}}),
			// The address is never dialled: every connection is forwarded to the remote
			// socket by the ssh dialer.
			client.WithHost("tcp://docker-over-ssh:2375"),
			client.WithDialContext(d.dial),
		)
	default:
		return nil, fmt.Errorf("docker_host %q: scheme %q is not supported; use unix://, tcp:// or ssh://", c.Host, u.Scheme)
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("configuring the Docker client for %s: %w", c.Host, err)
	}
	return cli, nil
}

// PEMFile is a TLS file of cert_path: a regular file of at most 1 MiB (a certificate chain is
// a few kilobytes).
var PEMFile = localfile.Kind{Noun: "PEM file", MaxBytes: 1 << 20}

// KnownHostsFile is ssh_known_hosts_file: a regular file of at most 64 MiB.
var KnownHostsFile = localfile.Kind{Noun: "ssh known_hosts file", MaxBytes: 64 << 20}

func (c Config) tlsConfig(serverName string) (*tls.Config, error) {
	ca, cert, key := []byte(c.CAPEM), []byte(c.CertPEM), []byte(c.KeyPEM)
	if c.CAPEM == "" && c.CertPEM == "" && c.KeyPEM == "" && c.CertPath != "" {
		var err error
		read := func(name string) []byte {
			if err != nil {
				return nil
			}
			var b []byte
			b, err = localfile.ReadFile(filepath.Join(c.CertPath, name), PEMFile)
			if err != nil {
				err = fmt.Errorf("reading TLS material from cert_path (DOCKER_CERT_PATH) %s: %w", c.CertPath, err)
			}
			return b
		}
		ca, cert, key = read("ca.pem"), read("cert.pem"), read("key.pem")
		if err != nil {
			return nil, err
		}
	}
	if len(ca) == 0 && len(cert) == 0 && len(key) == 0 {
		if c.TLSVerify {
			return nil, errors.New("DOCKER_TLS_VERIFY is set but no TLS material is configured; set ca_pem, cert_pem and key_pem, or cert_path (DOCKER_CERT_PATH)")
		}
		return nil, nil
	}
	if len(ca) == 0 {
		// Trusting the system roots for a private engine CA would silently accept any
		// publicly valid certificate for that name; demand the CA instead.
		return nil, errors.New("TLS to the Docker Engine needs the CA that signed its certificate; set ca_pem or put ca.pem in cert_path")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("ca_pem holds no PEM certificate; give the engine CA's certificate in PEM form")
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate and key do not form a pair; check cert_pem and key_pem: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// sshDialer forwards connections to the engine's unix socket over one ssh connection
// (OpenSSH's direct-streamlocal channel), so the remote host needs sshd and the engine but no
// docker CLI. The connection is made on first use and remade after it fails.
type sshDialer struct {
	addr, socket string
	cfg          *ssh.ClientConfig

	mu  sync.Mutex
	cli *ssh.Client
}

func newSSHDialer(c Config, u *url.URL) (*sshDialer, error) {
	if c.SSHPrivateKeyPEM == "" {
		return nil, errors.New("ssh:// docker_host needs ssh_private_key (PEM)")
	}
	signer, err := ssh.ParsePrivateKey([]byte(c.SSHPrivateKeyPEM))
	if err != nil {
		return nil, fmt.Errorf("ssh_private_key is not a usable private key (an unencrypted PEM or OpenSSH key is needed): %w", err)
	}
	khFile := c.SSHKnownHostsFile
	if khFile == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("finding ~/.ssh/known_hosts: %w; set ssh_known_hosts_file", err)
		}
		khFile = filepath.Join(home, ".ssh", "known_hosts")
	}
	// Host keys are always checked: a Docker socket is root on the host, so a
	// man-in-the-middle must not be accepted silently.
	// knownhosts opens the file itself; looked at first so a FIFO or a device there is
	// refused rather than read.
	err = localfile.Check(khFile, KnownHostsFile)
	var hostKeys ssh.HostKeyCallback
	if err == nil {
		hostKeys, err = knownhosts.New(khFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ssh known hosts %s: %w; add the engine host's key (ssh-keyscan) or set ssh_known_hosts_file", khFile, err)
	}
	user := u.User.Username()
	if user == "" {
		user = "root"
	}
	port := u.Port()
	if port == "" {
		port = "22"
	}
	socket := c.SSHSocketPath
	if socket == "" {
		socket = "/var/run/docker.sock"
	}
	return &sshDialer{
		addr:   net.JoinHostPort(u.Hostname(), port),
		socket: socket,
		cfg: &ssh.ClientConfig{
			User:            user,
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
			HostKeyCallback: hostKeys,
			Timeout:         30 * time.Second,
		},
	}, nil
}

func (d *sshDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	cli, err := d.client(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := cli.DialContext(ctx, "unix", d.socket)
	if err == nil {
		return conn, nil
	}
	// A dead ssh connection fails every channel; drop it so the next call reconnects.
	d.mu.Lock()
	if d.cli == cli {
		d.cli = nil
		_ = cli.Close()
	}
	d.mu.Unlock()
	return nil, fmt.Errorf("opening the engine socket %s over ssh to %s: %w", d.socket, d.addr, err)
}

func (d *sshDialer) client(ctx context.Context) (*ssh.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cli != nil {
		return d.cli, nil
	}
	nd := net.Dialer{Timeout: 30 * time.Second} // a host that drops SYNs fails here, not at the call bound
	conn, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to ssh %s: %w", d.addr, err)
	}
	// The handshake has no context of its own; a deadline keeps a stalled sshd from hanging
	// every engine call (this runs under d.mu).
	deadline := time.Now().Add(30 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	c, chans, reqs, err := ssh.NewClientConn(conn, d.addr, d.cfg)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("ssh handshake with %s as %s: %w; check the key and known_hosts", d.addr, d.cfg.User, err)
	}
	_ = conn.SetDeadline(time.Time{})
	d.cli = ssh.NewClient(c, chans, reqs)
	return d.cli, nil
}

// endpointHost is the host name under which published ports of this engine are reached from
// where the provider runs; "" for a local engine.
func endpointHost(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Scheme == "unix" || u.Scheme == "npipe" {
		return ""
	}
	return u.Hostname()
}

// Connection is the provider's configured Docker Engine, connected on first use: configuring
// the provider never contacts (or fails on) an engine that no resource in the plan needs. A
// failed connection is tried again on the next use.
type Connection struct {
	cfg Config

	mu sync.Mutex
	b  *Backend
}

// NewConnection returns the connection to the engine cfg names, not yet opened.
func NewConnection(cfg Config) *Connection { return &Connection{cfg: cfg} }

// Backend returns the shared backend, building it on first call.
func (c *Connection) Backend() (*Backend, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.b != nil {
		return c.b, nil
	}
	cli, err := NewClient(c.cfg)
	if err != nil {
		return nil, err
	}
	c.b = &Backend{cli: cli, hostURL: c.cfg.Host}
	return c.b, nil
}

// Host is the engine address this connection reaches.
func (c *Connection) Host() string { return c.cfg.Host }

// Endpoint is the URL a container published on bindIP:port will answer at, computed without
// contacting the engine; false while the connection settings are only known after apply.
func (c *Connection) Endpoint(bindIP string, port int) (string, bool) {
	if len(c.cfg.Unknown) > 0 {
		return "", false
	}
	return EndpointURL(c.cfg.Host, bindIP, port), true
}

func hostHint(h string) string {
	if strings.HasPrefix(h, "unix://") {
		return "is dockerd running and is the socket readable?"
	}
	return "is the engine reachable and does it accept these credentials?"
}
