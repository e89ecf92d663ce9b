package kubernetes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// faultCluster is a Cluster whose API server is host, trusted without verification (the
// fault servers use throwaway certificates).
func faultCluster(t *testing.T, host string) *Cluster {
	t.Helper()
	c, err := NewCluster(&rest.Config{Host: host, BearerToken: "token", TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// silentListener accepts connections and never writes a byte: no TLS, no HTTP.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// closedPort is an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// statusServer answers every request with code and a Kubernetes Status body, over TLS.
func statusServer(t *testing.T, code int, reason string) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"` + strings.ToLower(reason) + `","reason":"` + reason + `","code":` + strconv.Itoa(code) + `}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// hangingServer completes the TLS handshake and never answers a request.
func hangingServer(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL
}

// Each way the API server can fail is reported as what it is, within its stated bound,
// instead of as a name taken in the cluster; the message names the address.
func TestClusterFailuresSayWhatFailed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		host        func(t *testing.T) string
		callTimeout time.Duration // the request bound, shortened where the test waits it out
		summary     string
		detail      string
		within      time.Duration
	}{
		{"refused connection", func(t *testing.T) string { return "https://" + closedPort(t) }, 0,
			"Kubernetes API server refused the connection", "refused the connection: nothing listens at that address and port", 5 * time.Second},
		{"TLS handshake never finishes", func(t *testing.T) string { return "https://" + silentListener(t) }, 0,
			"TLS handshake with the Kubernetes API server did not finish", "did not finish within 10s: something accepts connections there but does not answer as a TLS server", TLSHandshakeTimeout + 5*time.Second},
		{"never answers", hangingServer, 2 * time.Second,
			"Kubernetes API server did not answer", "did not answer within 2s (no reply at that address: a server that accepts connections and never replies", 2*time.Second + 5*time.Second},
		{"plain HTTP listener that never answers", func(t *testing.T) string { return "http://" + silentListener(t) }, 2 * time.Second,
			"Kubernetes API server did not answer", "did not answer within 2s", 2*time.Second + 5*time.Second},
		{"401", func(t *testing.T) string { return statusServer(t, http.StatusUnauthorized, "Unauthorized") }, 0,
			"Kubernetes API server refused the credentials", "refused the credentials (401 Unauthorized): the token or client certificate is wrong, expired or for another cluster", 5 * time.Second},
		{"403", func(t *testing.T) string { return statusServer(t, http.StatusForbidden, "Forbidden") }, 0,
			"Kubernetes credentials lack a permission", "forbids this request (403 Forbidden)", 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := tc.host(t)
			c := faultCluster(t, host)
			if tc.callTimeout > 0 {
				c.callTimeout = tc.callTimeout
			}
			d := Deployment{Namespace: "default", Name: "qwen"}
			for _, op := range []struct {
				name string
				call func(context.Context) error
			}{
				{"CheckOwnership", func(ctx context.Context) error { return c.CheckOwnership(ctx, d) }},
				{"Read", func(ctx context.Context) error { _, err := c.Read(ctx, d.Namespace, d.Name); return err }},
				{"Delete", func(ctx context.Context) error { return c.Delete(ctx, d) }},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				start := time.Now()
				err := op.call(ctx)
				took := time.Since(start)
				cancel()
				var ce *ClusterError
				var taken *NameTakenError
				switch {
				case !errors.As(err, &ce):
					t.Fatalf("%s: error %v (%T), want a ClusterError", op.name, err, err)
				case errors.As(err, &taken):
					t.Errorf("%s: a name taken: %v", op.name, err)
				case ce.Summary != tc.summary:
					t.Errorf("%s: summary %q, want %q", op.name, ce.Summary, tc.summary)
				case !strings.Contains(err.Error(), tc.detail) || !strings.Contains(err.Error(), host):
					t.Errorf("%s: error\n%v\nwant it to name %s and say %q", op.name, err, host, tc.detail)
				case took > tc.within:
					t.Errorf("%s: took %s, want within %s", op.name, took, tc.within)
				}
			}
		})
	}
}

// An API server that answers is not a cluster failure: absent objects are absent (create may
// go ahead, read finds nothing, delete is done), and an object of the name that llmserve did
// not create is a name taken, not a connection problem.
func TestClusterAnswersAreNotFailures(t *testing.T) {
	t.Parallel()
	var foreign atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/pods"):
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
		case foreign.Load() && strings.HasSuffix(r.URL.Path, "/deployments/qwen"):
			_, _ = w.Write([]byte(`{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"qwen","namespace":"default","labels":{"app.kubernetes.io/managed-by":"helm"}}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"not found","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	c := faultCluster(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := Deployment{Namespace: "default", Name: "qwen"}
	if err := c.CheckOwnership(ctx, d); err != nil {
		t.Errorf("CheckOwnership with nothing there: %v", err)
	}
	if _, err := c.Read(ctx, "default", "qwen"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read with nothing there: %v, want ErrNotFound", err)
	}
	if err := c.Delete(ctx, d); err != nil {
		t.Errorf("Delete with nothing there: %v", err)
	}
	foreign.Store(true)
	var taken *NameTakenError
	var ce *ClusterError
	if err := c.CheckOwnership(ctx, d); !errors.As(err, &taken) || errors.As(err, &ce) ||
		err.Error() != "Deployment default/qwen already exists and was not created by llmserve for this deployment; choose another name or namespace, or remove it" {
		t.Errorf("CheckOwnership with a foreign Deployment: %v (%T)", err, err)
	}
}
