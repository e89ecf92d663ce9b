package provider

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// An API server that cannot be used is reported as what failed, through the real CLI: a
// closed port, a listener that never speaks TLS, a TLS server that never answers and one that
// answers 401 each get their own error within the documented bound, none "Name taken in the
// cluster" on name (which all four were).
func TestAccInferenceDeployment_clusterFailures(t *testing.T) {
	testAccPreCheck(t)
	closed := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return "https://" + addr
	}
	silent := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			_ = ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				_ = c.Close()
			}
		})
		return "https://" + ln.Addr().String()
	}
	tlsServer := func(h http.HandlerFunc) func(t *testing.T) string {
		return func(t *testing.T) string {
			srv := httptest.NewTLSServer(h)
			t.Cleanup(srv.Close)
			return srv.URL
		}
	}
	unauthorized := tlsServer(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`))
	})
	hanging := tlsServer(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

	for _, tc := range []struct {
		name    string
		host    func(t *testing.T) string
		summary string
		detail  string
	}{
		{"refused", closed, "Kubernetes API server refused the connection", "refused the connection: nothing listens at that address and port"},
		{"no TLS", silent, "TLS handshake with the Kubernetes API server did not finish", "did not finish within 10s: something accepts connections there but does not answer as a TLS server"},
		{"no answer", hanging, "Kubernetes API server did not answer", "did not answer within 30s (no reply at that address"},
		{"401", unauthorized, "Kubernetes API server refused the credentials", "refused the credentials (401 Unauthorized)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host(t)
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "llmserve" {
  kubernetes {
    host     = %q
    token    = "not-a-real-token"
    insecure = true
  }
}

resource "llmserve_inference_deployment" "faulty" {
  name   = "faulty"
  image  = "llmserve/llamacpp:kwok"
  engine = "llamacpp"
  model  = "/models/tiny-llama.gguf"
}
`, host),
					ExpectError: regexp.MustCompile(`(?s)Error: ` + words(tc.summary) + `.*` + words("reading Deployment default/faulty:") + `.*` + regexp.QuoteMeta(host) + `.*` + words(tc.detail)),
				}},
			})
		})
	}
}
