package docker

import (
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

func TestConfigCheck(t *testing.T) {
	m, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	ca, cert, key := string(m.CAPEM), string(m.ClientCertPEM), string(m.ClientKeyPEM)
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for none
		want  string
	}{
		{"local socket", Config{Host: "unix:///var/run/docker.sock"}, "", ""},
		{"tcp with TLS", Config{Host: "tcp://gpu-host.example.com:2376", CAPEM: ca, CertPEM: cert, KeyPEM: key}, "", ""},
		{"https", Config{Host: "https://gpu-host.example.com:2376", CAPEM: ca}, "", ""},
		{"ssh without user", Config{Host: "ssh://gpu-host.example.com:2222", SSHPrivateKeyPEM: key}, "", ""},
		{"npipe", Config{Host: "npipe:////./pipe/docker_engine"}, "", ""},
		{"no scheme", Config{Host: "gpu-host.example.com:2376"}, "docker_host", "is not a URL"},
		{"tcp no port", Config{Host: "tcp://gpu-host.example.com"}, "docker_host", "needs a host and a port"},
		{"tcp credentials", Config{Host: "tcp://u:p@gpu-host.example.com:2376"}, "docker_host", "carries credentials"},
		{"ssh password hidden", Config{Host: "ssh://u:hunter2@gpu-host.example.com", SSHPrivateKeyPEM: key}, "docker_host", "carries a password"},
		{"TLS on unix", Config{Host: "unix:///run/docker.sock", CAPEM: ca}, "ca_pem", "only applies to a tcp:// engine"},
		{"ssh key on tcp", Config{Host: "tcp://h:2376", SSHPrivateKeyPEM: key}, "ssh_private_key", "only applies to an ssh:// engine"},
		{"key without cert", Config{Host: "tcp://h:2376", CAPEM: ca, KeyPEM: key}, "cert_pem", "key_pem is set without its certificate"},
		{"cert in key field", Config{Host: "tcp://h:2376", CAPEM: ca, CertPEM: cert, KeyPEM: cert}, "key_pem", "is not the private key of cert_pem"},
		{"ssh key garbage", Config{Host: "ssh://h", SSHPrivateKeyPEM: "x"}, "ssh_private_key", "is not a private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.Check()
			if tt.field == "" {
				if len(got) != 0 {
					t.Fatalf("Check = %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Path.String() != tt.field || !strings.Contains(got[0].Detail, tt.want) {
				t.Fatalf("Check = %v, want one problem on %s containing %q", got, tt.field, tt.want)
			}
			if strings.Contains(got[0].Detail, "hunter2") || strings.Contains(got[0].Detail, "PRIVATE KEY") {
				t.Fatalf("Check quotes a secret: %s", got[0].Detail)
			}
		})
	}
}
