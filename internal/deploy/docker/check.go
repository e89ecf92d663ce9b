package docker

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/crypto/ssh"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/endpoint"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// Check reports what is wrong with the connection settings without contacting the engine,
// so a plan fails on a typo instead of an apply failing on the first engine call. Paths are
// the provider's attribute names. Secrets (key_pem, ssh_private_key) are never quoted.
func (c Config) Check() []problem.Problem {
	var out []problem.Problem
	add := func(field, format string, args ...any) {
		out = append(out, problem.At(attrpath.Root(field), format, args...))
	}
	scheme, err := checkHost(c.Host)
	if err != nil {
		add("docker_host", "%v", err)
	}
	tlsSet := c.CAPEM != "" || c.CertPEM != "" || c.KeyPEM != ""
	if err == nil && scheme != "tcp" {
		for _, f := range []struct {
			field string
			set   bool
		}{{"ca_pem", c.CAPEM != ""}, {"cert_pem", c.CertPEM != ""}, {"key_pem", c.KeyPEM != ""}, {"cert_path", c.CertPath != ""}} {
			if field := f.field; f.set {
				add(field, "TLS material only applies to a tcp:// engine; with docker_host %q it would be ignored. Remove it or point docker_host at tcp://host:2376", c.Host)
			}
		}
	}
	if err == nil && scheme != "ssh" {
		for _, f := range []struct {
			field string
			set   bool
		}{{"ssh_private_key", c.SSHPrivateKeyPEM != ""}, {"ssh_known_hosts_file", c.SSHKnownHostsFile != ""}, {"ssh_socket_path", c.SSHSocketPath != ""}} {
			if field := f.field; f.set {
				add(field, "only applies to an ssh:// engine; with docker_host %q it would be ignored. Remove it or point docker_host at ssh://user@host", c.Host)
			}
		}
	}
	if tlsSet {
		out = append(out, checkPEMs(c.CAPEM, c.CertPEM, c.KeyPEM)...)
	} else if c.CertPath != "" && scheme == "tcp" {
		if err := checkCertPath(c.CertPath); err != nil {
			add("cert_path", "%v", err)
		}
	}
	if scheme == "ssh" {
		if c.SSHPrivateKeyPEM == "" {
			add("ssh_private_key", "an ssh:// docker_host needs the private key (PEM or OpenSSH format) that the engine host accepts")
		} else if _, err := ssh.ParsePrivateKey([]byte(c.SSHPrivateKeyPEM)); err != nil {
			var missing *ssh.PassphraseMissingError
			if errors.As(err, &missing) {
				add("ssh_private_key", "the key is protected by a passphrase, which the provider cannot prompt for; give an unencrypted key (e.g. a dedicated deploy key)")
			} else {
				add("ssh_private_key", "is not a private key in PEM or OpenSSH format (%v)", err)
			}
		}
		if c.SSHSocketPath != "" && !strings.HasPrefix(c.SSHSocketPath, "/") {
			add("ssh_socket_path", "must be an absolute path on the ssh host, e.g. /var/run/docker.sock; got %q", c.SSHSocketPath)
		}
	}
	return out
}

// checkHost parses a docker_host and returns its scheme.
func checkHost(h string) (string, error) {
	shown := endpoint.Redact(h) // every message quotes this, never h
	const forms = "use unix:///var/run/docker.sock, tcp://host:2376 or ssh://user@host[:port]"
	if strings.ContainsFunc(h, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return "", fmt.Errorf("%q contains spaces or control characters; %s", shown, forms)
	}
	u, err := url.Parse(h)
	if err != nil || u.Scheme == "" || !strings.Contains(h, "://") {
		return "", fmt.Errorf("%q is not a URL; %s", shown, forms)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q has a query or fragment, which the engine address cannot carry; %s", shown, forms)
	}
	port := func() error {
		p := u.Port()
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q must be between 1 and 65535", shown, p)
		}
		return nil
	}
	switch u.Scheme {
	case "unix", "npipe":
		if u.Scheme == "unix" && (u.Host != "" || !strings.HasPrefix(u.Path, "/")) {
			return "", fmt.Errorf("%q: a unix socket needs an absolute path after unix://, e.g. unix:///var/run/docker.sock (three slashes)", shown)
		}
	case "tcp", "https":
		// https:// is the same engine address with TLS; Docker's own client accepts it.
		if u.Hostname() == "" || u.Port() == "" {
			return "", fmt.Errorf("%q needs a host and a port, e.g. tcp://gpu-host.example.com:2376", shown)
		}
		if err := port(); err != nil {
			return "", err
		}
		if u.User != nil {
			return "", fmt.Errorf("%q carries credentials, which a Docker Engine over TCP never uses; authenticate with ca_pem, cert_pem and key_pem", shown)
		}
		if strings.Trim(u.Path, "/") != "" {
			return "", fmt.Errorf("%q has a path; a tcp:// engine address is only host and port, e.g. tcp://gpu-host.example.com:2376", shown)
		}
		return "tcp", nil
	case "ssh":
		if u.Hostname() == "" {
			return "", fmt.Errorf("%q needs a host, e.g. ssh://deploy@gpu-host.example.com", shown)
		}
		if u.Port() != "" {
			if err := port(); err != nil {
				return "", err
			}
		}
		if _, hasPassword := u.User.Password(); hasPassword {
			return "", fmt.Errorf("%q carries a password, which would be shown in plan output and is never used; remove it and authenticate with ssh_private_key", shown)
		}
		if strings.Trim(u.Path, "/") != "" {
			return "", fmt.Errorf("%q has a path; set the engine's socket on the ssh host with ssh_socket_path", shown)
		}
	default:
		return "", fmt.Errorf("%q: scheme %q is not supported; %s", shown, u.Scheme, forms)
	}
	return u.Scheme, nil
}

// checkPEMs parses the TLS material as the client will, so a pasted key in the certificate
// field or a truncated PEM fails the plan. The key is never quoted.
func checkPEMs(ca, cert, key string) []problem.Problem {
	var out []problem.Problem
	add := func(field, format string, args ...any) {
		out = append(out, problem.At(attrpath.Root(field), format, args...))
	}
	if ca == "" {
		add("ca_pem", "TLS to the Docker Engine needs the CA certificate that signed the engine's certificate (PEM); the system roots are never trusted for it")
	} else if err := parseCerts(ca); err != nil {
		add("ca_pem", "%v; give the engine CA's certificate in PEM form (-----BEGIN CERTIFICATE-----)", err)
	}
	switch {
	case cert == "" && key != "":
		add("cert_pem", "key_pem is set without its certificate; set cert_pem too, or remove key_pem")
	case cert != "" && key == "":
		add("key_pem", "cert_pem is set without its private key; set key_pem too, or remove cert_pem")
	case cert != "":
		if err := parseCerts(cert); err != nil {
			add("cert_pem", "%v; give the client certificate in PEM form (-----BEGIN CERTIFICATE-----)", err)
		} else if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); err != nil {
			add("key_pem", "is not the private key of cert_pem, or not a PEM private key (%v)", err)
		}
	}
	return out
}

func parseCerts(s string) error {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM %q block where a certificate belongs", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("holds a certificate that does not parse (%v)", err)
		}
		n++
	}
	if n == 0 {
		return errors.New("holds no PEM certificate")
	}
	return nil
}

// checkCertPath reports a cert_path directory that lacks the files TLS needs.
func checkCertPath(dir string) error {
	for _, name := range []string{"ca.pem", "cert.pem", "key.pem"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("%s: %w; the directory must hold ca.pem, cert.pem and key.pem", dir, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file; the directory must hold ca.pem, cert.pem and key.pem", filepath.Join(dir, name))
		}
	}
	return nil
}
