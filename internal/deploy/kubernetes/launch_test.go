package kubernetes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// applyCluster runs on the field-managed fake, which server-side apply needs. Nothing rolls
// out there: no controller updates a Deployment's status.
func applyCluster() (*Cluster, *fake.Clientset) {
	cs := fake.NewClientset()
	return &Cluster{cs: cs, rest: &rest.Config{Host: "https://api.example:6443"}, callTimeout: 5 * time.Second}, cs
}

// A create whose rollout does not complete removes what it applied, and says which step
// failed; an update that fails the same way leaves the objects (they were there before).
func TestLaunchRolloutFails(t *testing.T) {
	t.Parallel()
	d := small()
	r := readinessForTest()
	r.Timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		create bool
	}{{"create", true}, {"update", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, cs := applyCluster()
			launch := c.Launch
			if tc.create {
				launch = c.LaunchNew
			}
			_, err := launch(context.Background(), d, testSpec(), engine.Secrets{APIKey: "sk-secret"}, PodNetwork, r)
			var le *LaunchError
			if !errors.As(err, &le) || le.Step != StepRollout {
				t.Fatalf("err = %T %v, want a *LaunchError at the rollout", err, err)
			}
			var left *LeftError
			if errors.As(err, &left) {
				t.Fatalf("err = %v: the removal failed", err)
			}
			dep, svc, sec := exists(t, cs, d)
			if tc.create && (dep || svc || sec) {
				t.Errorf("after a failed create: Deployment %v, Service %v, Secret %v; want all removed", dep, svc, sec)
			}
			if !tc.create && !(dep && svc && sec) {
				t.Errorf("after a failed update: Deployment %v, Service %v, Secret %v; want all kept", dep, svc, sec)
			}
		})
	}
}

// A create that fails and cannot remove everything it touched says both, and leaves
// another's object alone.
func TestLaunchNewNamesWhatItCouldNotRemove(t *testing.T) {
	t.Parallel()
	d := small()
	c, cs := applyCluster()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName(d.Name), Namespace: d.Namespace}}
	if _, err := cs.CoreV1().Secrets(d.Namespace).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.LaunchNew(context.Background(), d, testSpec(), engine.Secrets{}, PodNetwork, readinessForTest())
	var le *LaunchError
	if !errors.As(err, &le) || le.Step != StepApply || !strings.Contains(le.Error(), "was not created by llmserve") {
		t.Fatalf("err = %v, want the apply refused by the foreign Secret", err)
	}
	var left *LeftError
	if !errors.As(err, &left) || !strings.Contains(left.Err.Error(), "Secret "+d.Namespace+"/") {
		t.Fatalf("err = %v, want the removal's failure naming the Secret", err)
	}
	if dep, svc, sec := exists(t, cs, d); dep || svc || !sec {
		t.Errorf("Deployment %v, Service %v, Secret %v; want only the foreign Secret left", dep, svc, sec)
	}
}

// ServerInfo asks a ready replica; with none ready it gives up at its timeout, empty.
func TestServerInfo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/props" {
			_, _ = w.Write([]byte(`{"build_info":"b6500-abc1234","default_generation_settings":{"n_ctx":4096},"total_slots":2}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	host, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	d := small()
	spec := testSpec()
	spec.Port = port
	ready := pod(d, "qwen-a", true)
	ready.Status.PodIP = host
	c, _ := fakeCluster(ready)
	if info := c.ServerInfo(context.Background(), d, spec, PodNetwork, 5*time.Second); info.Version != "b6500-abc1234" {
		t.Errorf("server info %+v, want the replica's build", info)
	}
	c, _ = fakeCluster(pod(d, "qwen-b", false))
	start := time.Now()
	if info := c.ServerInfo(context.Background(), d, spec, PodNetwork, 200*time.Millisecond); info != (engine.ServerInfo{}) {
		t.Errorf("server info %+v without a ready replica, want none", info)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s, want the timeout", time.Since(start))
	}
}
