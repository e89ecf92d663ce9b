package runner

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
)

// Every call the Docker runner makes on its engine has a bound of its own: an engine that
// accepts the call and never answers fails the run within it (here shortened through
// deploy.CallTimeoutEnv), naming the engine and what the runner was doing, instead of
// holding the apply until timeouts.create (24 h by default). One row per call of a runner's
// start; before issue 39 each hung. A new call joins by adding a row.
func TestDockerRunnerCallsBounded(t *testing.T) {
	t.Setenv(deploy.CallTimeoutEnv, "300ms")
	const engine = "no answer from the Docker Engine within 300ms at tcp://gpu-host:2376; the engine accepts connections but does not respond"
	for _, tc := range []struct {
		name  string
		hangs func(r *http.Request) bool
		doing string
	}{
		{"inspecting the server container", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/containers/server/json") },
			`inspecting the server container "server"`},
		{"listing the server's runners", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/containers/json") },
			"listing the runners of the server container server000000"},
		{"inspecting the runner image", func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/images/") },
			`inspecting runner.docker.image "llmserve-runner:test"`},
		{"creating the runner", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/containers/create") },
			"creating the runner container from image llmserve-runner:test"},
		{"copying the spec in", func(r *http.Request) bool {
			return strings.HasSuffix(r.URL.Path, "/archive") && r.Method == http.MethodPut
		},
			"writing the spec into runner runner000000"},
		{"starting the runner", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/start") },
			"starting the runner container (image llmserve-runner:test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{}
			f.fail = func(w http.ResponseWriter, r *http.Request) bool {
				if !tc.hangs(r) {
					return false
				}
				select { // accepted, never answered
				case <-f.hang:
				case <-r.Context().Done():
				}
				return true
			}
			d, _ := fakeDocker(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang fails the row, not the suite
			defer cancel()
			_, err := d.Run(ctx, Job{Target: "server", Spec: Spec{Config: testConfig("http://127.0.0.1:30000")}})
			if ctx.Err() != nil {
				t.Fatalf("the run waited past its bound: %v", err)
			}
			if err == nil || !strings.Contains(err.Error(), tc.doing) || !strings.Contains(err.Error(), engine) {
				t.Fatalf("err = %v\nwant it to say %q and %q", err, tc.doing, engine)
			}
		})
	}
}

// The resource's page states how soon a lost engine is reported (EngineLostWithin): the
// watch's own figures add up to it.
func TestEngineLostWithinStated(t *testing.T) {
	if got := engineLostAfter + engineCheckEvery; got != EngineLostWithin {
		t.Fatalf("a lost engine is reported within %s, the documentation says %s", got, EngineLostWithin)
	}
}
