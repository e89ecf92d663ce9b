package docker

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

// An engine host that accepts connections and never answers fails each call within its
// bound, with a message that says so, for every kind of docker_host.
func TestTarpitEngineFailsWithinBounds(t *testing.T) {
	defer func(c, h time.Duration) { callTimeout, tlsHandshakeTimeout = c, h }(callTimeout, tlsHandshakeTimeout)
	tlsHandshakeTimeout = 200 * time.Millisecond

	m, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := enginetest.Tarpit(t)
	host, port, _ := net.SplitHostPort(addr)
	signer, _ := ssh.NewSignerFromKey(priv)
	knownHosts := filepath.Join(t.TempDir(), "known_hosts")
	// Any key will do: the tarpit never gets as far as showing one.
	line := "[" + host + "]:" + port + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	if err := os.WriteFile(knownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		cfg  Config
		call time.Duration
		want string
	}{
		{"plain tcp", Config{Host: "tcp://" + addr}, 400 * time.Millisecond, "no answer from the Docker Engine within 400ms"},
		// The version ping and the call each meet the handshake bound, well before the
		// call's own; the Docker client reports that as a connection failure.
		{"tcp with TLS", Config{Host: "tcp://" + addr, CAPEM: string(m.CAPEM), CertPEM: string(m.ClientCertPEM), KeyPEM: string(m.ClientKeyPEM)}, 5 * time.Second, "cannot reach the Docker Engine at tcp://"},
		{"ssh", Config{Host: "ssh://root@" + addr, SSHPrivateKeyPEM: string(pem.EncodeToMemory(block)), SSHKnownHostsFile: knownHosts}, 400 * time.Millisecond, "no answer from the Docker Engine within 400ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			callTimeout = tc.call
			cli, err := NewClient(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			b := NewBackend(cli, tc.cfg.Host)
			start := time.Now()
			_, err = b.Inspect(context.Background(), "llmserve-anything")
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "inspecting container") {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if took > 2*time.Second {
				t.Fatalf("took %v", took)
			}
			t.Logf("%s: failed after %v: %v", tc.name, took.Round(time.Millisecond), err)
		})
	}
}
