package docker

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

// TestNewClientTLSMisconfiguration covers the TLS settings that must fail before any
// connection is made, each with a message that says what to fix.
func TestNewClientTLSMisconfiguration(t *testing.T) {
	m, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	other, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	host := "tcp://127.0.0.1:2376"
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"client pair without CA", Config{Host: host, CertPEM: string(m.ClientCertPEM), KeyPEM: string(m.ClientKeyPEM)}, "needs the CA that signed its certificate"},
		{"CA not PEM", Config{Host: host, CAPEM: "not a certificate"}, "ca_pem holds no PEM certificate"},
		{"key of another certificate", Config{Host: host, CAPEM: string(m.CAPEM), CertPEM: string(m.ClientCertPEM), KeyPEM: string(other.ClientKeyPEM)}, "do not form a pair"},
		{"cert_path without files", Config{Host: host, CertPath: t.TempDir()}, "reading TLS material from cert_path"},
		{"DOCKER_TLS_VERIFY without material", Config{Host: host, TLSVerify: true}, "DOCKER_TLS_VERIFY is set but no TLS material"},
		{"settings unknown at configure", Config{Host: host, Unknown: []string{"ca_pem"}}, "ca_pem are only known after apply"},
		{"unsupported scheme", Config{Host: "http://127.0.0.1:2375"}, `scheme "http" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewClient error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestNewClientTLSVerifies talks to a TLS server that demands a client certificate, the way
// dockerd --tlsverify does, and checks that the engine's certificate is always verified.
func TestNewClientTLSVerifies(t *testing.T) {
	m, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	other, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	// The engine's certificate names 127.0.0.1 and localhost; a second listener on
	// 127.0.0.2 serves the same certificate under a name it does not hold.
	srv := startTLSEngine(t, m, "127.0.0.1:0")
	misnamed := startTLSEngine(t, m, "127.0.0.2:0")
	host := "tcp://" + srv.Listener.Addr().String()
	certDir := filepath.Join(t.TempDir(), "certs")
	if err := m.WriteClientDir(certDir); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		cfg  Config
		want string // "" for success
	}{
		{"PEM", Config{Host: host, CAPEM: string(m.CAPEM), CertPEM: string(m.ClientCertPEM), KeyPEM: string(m.ClientKeyPEM)}, ""},
		{"cert_path", Config{Host: host, CertPath: certDir, TLSVerify: true}, ""},
		{"https scheme", Config{Host: "https://" + srv.Listener.Addr().String(), CertPath: certDir}, ""},
		{"engine certificate from another CA", Config{Host: host, CAPEM: string(other.CAPEM), CertPEM: string(m.ClientCertPEM), KeyPEM: string(m.ClientKeyPEM)}, "certificate signed by unknown authority"},
		{"no client certificate", Config{Host: host, CAPEM: string(m.CAPEM)}, "remote error: tls:"},
		{"name not in the engine certificate", Config{Host: "tcp://" + misnamed.Listener.Addr().String(), CAPEM: string(m.CAPEM), CertPEM: string(m.ClientCertPEM), KeyPEM: string(m.ClientKeyPEM)}, "certificate is valid for 127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, err := NewClient(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			_, err = cli.Ping(t.Context())
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Ping: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Ping error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// startTLSEngine answers the Engine API's ping over TLS on addr and, like dockerd
// --tlsverify, demands a client certificate signed by m's CA.
func startTLSEngine(t *testing.T, m *enginetest.TLSMaterial, addr string) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		_, _ = w.Write([]byte("OK"))
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	pair, err := tls.X509KeyPair(m.ServerCertPEM, m.ServerKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AppendCertsFromPEM(m.CAPEM)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
