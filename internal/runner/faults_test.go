package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// fakeEngine answers the Docker Engine API calls a runner's start makes, with the target
// container running and runner.docker.image present; fail, when set, answers a path.
type fakeEngine struct {
	mu       sync.Mutex
	calls    []string
	fail     func(w http.ResponseWriter, r *http.Request) bool
	hang     chan struct{} // closed to end the hanging wait, logs and pings
	hangPing bool
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	if f.fail != nil && f.fail(w, r) {
		return
	}
	p := r.URL.Path
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case strings.HasSuffix(p, "/_ping"):
		if f.hangPing {
			<-f.hang
		}
		w.Header().Set("Api-Version", "1.47")
		_, _ = w.Write([]byte("OK"))
	case strings.HasSuffix(p, "/containers/server/json"):
		reply(map[string]any{"Id": "server0000000000", "State": map[string]any{"Running": true, "Status": "running"}})
	case strings.HasSuffix(p, "/containers/json"):
		reply([]any{})
	case strings.Contains(p, "/images/") && strings.HasSuffix(p, "/json"):
		reply(map[string]any{"Id": "sha256:runner"})
	case strings.HasSuffix(p, "/containers/create"):
		reply(map[string]any{"Id": "runner0000000000"})
	case strings.HasSuffix(p, "/archive") && r.Method == http.MethodPut:
	case strings.HasSuffix(p, "/start"), strings.HasSuffix(p, "/stop"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(p, "/wait"), strings.HasSuffix(p, "/logs"):
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-f.hang:
		case <-r.Context().Done():
		}
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, `{"message":"unexpected `+p+`"}`, http.StatusNotImplemented)
	}
}

func (f *fakeEngine) called(suffix string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if strings.HasSuffix(c, suffix) {
			return true
		}
	}
	return false
}

func fakeDocker(t *testing.T, f *fakeEngine) (*Docker, *httptest.Server) {
	t.Helper()
	if f.hang == nil {
		f.hang = make(chan struct{})
	}
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		select {
		case <-f.hang:
		default:
			close(f.hang)
		}
		srv.Close()
	})
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithVersion("1.47"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return &Docker{Cli: cli, Host: "tcp://gpu-host:2376", Image: "llmserve-runner:test"}, srv
}

// An engine host out of disk when the runner is created: a diagnostic naming the host's disk,
// that nothing was started and what is kept, and the fix; no runner is started.
func TestDockerRunOutOfDisk(t *testing.T) {
	for _, at := range []string{"/containers/create", "/archive"} {
		t.Run(at, func(t *testing.T) {
			f := &fakeEngine{fail: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasSuffix(r.URL.Path, at) {
					return false
				}
				http.Error(w, `{"message":"write /var/lib/docker/overlay2/x/diff/llmserve/spec.json: no space left on device"}`, http.StatusInternalServerError)
				return true
			}}
			d, _ := fakeDocker(t, f)
			_, err := d.Run(context.Background(), Job{Target: "server", Spec: Spec{Config: testConfig("http://127.0.0.1:30000")}})
			var disk *DiskFullError
			if !errors.As(err, &disk) {
				t.Fatalf("err = %v, want a DiskFullError", err)
			}
			for _, want := range []string{"tcp://gpu-host:2376 is out of disk", "no space left on device", "No runner was started", "progress_file", "are kept", "docker system prune"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the diagnostic lacks %q:\n%s", want, err)
				}
			}
			if f.called("/start") {
				t.Error("a runner was started")
			}
		})
	}
}

// An engine that stops answering while a runner is followed (an ssh link that hangs rather
// than fails) is reported lost within engineLostAfter + engineCheckEvery, saying the runner
// may still be measuring there and how to get back to it.
func TestDockerRunEngineLost(t *testing.T) {
	every, after := engineCheckEvery, engineLostAfter
	engineCheckEvery, engineLostAfter = 50*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { engineCheckEvery, engineLostAfter = every, after })

	t.Run("hangs", func(t *testing.T) {
		f := &fakeEngine{hangPing: true}
		d, _ := fakeDocker(t, f)
		start := time.Now()
		_, err := d.Run(context.Background(), Job{Target: "server", Spec: Spec{Config: testConfig("http://127.0.0.1:30000")}})
		took := time.Since(start)
		var lost *EngineLostError
		if !errors.As(err, &lost) {
			t.Fatalf("err = %v, want an EngineLostError", err)
		}
		if took > 5*time.Second {
			t.Errorf("reported after %s, want within about %s", took, engineLostAfter+engineCheckEvery)
		}
		for _, want := range []string{"lost the Docker Engine at tcp://gpu-host:2376", "runner0000", "has not answered", "keeps measuring there", "apply again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the diagnostic lacks %q:\n%s", want, err)
			}
		}
	})
	t.Run("closes", func(t *testing.T) {
		f := &fakeEngine{}
		d, srv := fakeDocker(t, f)
		go func() {
			for !f.called("/wait") {
				time.Sleep(10 * time.Millisecond)
			}
			srv.CloseClientConnections()
			srv.Listener.Close()
		}()
		_, err := d.Run(context.Background(), Job{Target: "server", Spec: Spec{Config: testConfig("http://127.0.0.1:30000")}})
		var lost *EngineLostError
		if !errors.As(err, &lost) {
			t.Fatalf("err = %v, want an EngineLostError", err)
		}
	})
}
