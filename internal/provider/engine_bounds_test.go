package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/docker"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

// silentEngine is a Docker Engine host that accepts connections and never says a word (a hung
// daemon, a tarpit), as a docker_host.
func silentEngine(t *testing.T) string { return "tcp://" + enginetest.Tarpit(t) }

// silentAPIServer is a Kubernetes API server that completes TLS and never answers a request.
func silentAPIServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Every resource's wait on a Docker Engine or a Kubernetes API server has a bound of its own
// and says, when it passes, which engine did not answer and what was being done, through the
// real CLI. The bound is shortened to 2 s by deploy.CallTimeoutEnv so that each row takes
// seconds; the default (docker.DefaultCallTimeout, kubernetes.APICallTimeout) is what the
// elapsed time is held under, however slow the machine. Before issue 39 the benchmark's Docker
// runner waited on a silent engine until timeouts.create (24 h). A resource joins by a row.
func TestAccEngineWaitsBounded(t *testing.T) {
	testAccPreCheck(t)
	t.Setenv(deploy.CallTimeoutEnv, "2s")
	dockerProvider := func(host string) string { return fmt.Sprintf("provider \"llmserve\" {\n  docker_host = %q\n}\n", host) }
	kubeProvider := func(host string) string {
		return fmt.Sprintf("provider \"llmserve\" {\n  kubernetes {\n    host     = %q\n    token    = \"not-a-real-token\"\n    insecure = true\n  }\n}\n", host)
	}
	bench := func(endpoint, runner string) string {
		return fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "b" {
  endpoint  = %q
  model     = "m"
  workloads = [{ label = "a", input_tokens = 32, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 1000 }]
  search    = { concurrency_levels = [1] }
  runner    = %s
}
`, endpoint, runner)
	}
	dockerSays := func(doing string) string {
		return words(doing) + `.*` + words("no answer from the Docker Engine within 2s at tcp://127.0.0.1:") + `\d+`
	}
	kubeSays := func(doing string) string {
		return words(doing) + `.*` + words("did not answer within 2s")
	}
	for _, tc := range []struct {
		name    string
		config  func(t *testing.T) string
		want    string
		slowest time.Duration // the default bound the wait would otherwise have
	}{
		{"llmserve_inference_server", func(t *testing.T) string {
			return dockerProvider(silentEngine(t)) + `
resource "llmserve_inference_server" "s" {
  name   = "llmserve-silent-engine"
  image  = "llmserve/llamacpp:latest"
  engine = "llamacpp"
  model  = "/models/tiny-llama.gguf"
}
`
		}, dockerSays("inspecting image"), docker.DefaultCallTimeout},
		{"llmserve_capacity_benchmark Docker runner", func(t *testing.T) string {
			return dockerProvider(silentEngine(t)) + bench("http://127.0.0.1:30000", `{ docker = { container = "llmserve-server", image = "llmserve-runner:test" } }`)
		}, dockerSays(`inspecting the server container "llmserve-server"`), docker.DefaultCallTimeout},
		{"llmserve_capacity_benchmark Kubernetes runner", func(t *testing.T) string {
			return kubeProvider(silentAPIServer(t)) + bench(inClusterEndpoint, `{ kubernetes = { namespace = "default", image = "ghcr.io/llmserve/llmserve-runner:test" } }`)
		}, kubeSays("runner: list jobs.batch in namespace default: the Kubernetes API server at https://127.0.0.1:"), kubernetes.APICallTimeout},
		{"llmserve_inference_deployment", func(t *testing.T) string {
			return kubeProvider(silentAPIServer(t)) + `
resource "llmserve_inference_deployment" "d" {
  name   = "silent"
  image  = "llmserve/llamacpp:kwok"
  engine = "llamacpp"
  model  = "/models/tiny-llama.gguf"
}
`
		}, kubeSays("Kubernetes API server did not answer"), kubernetes.APICallTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: tc.config(t), ExpectError: regexp.MustCompile(`(?s)` + tc.want)}},
			})
			if took := time.Since(start); took >= tc.slowest {
				t.Errorf("took %s: the shortened bound did not apply (the default is %s)", took.Round(time.Second), tc.slowest)
			} else {
				t.Logf("failed after %s", took.Round(100*time.Millisecond))
			}
		})
	}
}

// The provider's page states the bounds the code has.
func TestIndexStatesEngineBounds(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "templates", "index.md.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"a Docker Engine call " + shortDuration(docker.DefaultCallTimeout), shortDuration(docker.DefaultCallTimeout) + " without a\nbyte",
		"a plan's question " + shortDuration(planEngineWait), "a Kubernetes API request " + shortDuration(kubernetes.APICallTimeout), deploy.CallTimeoutEnv,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("templates/index.md.tmpl does not say %q", want)
		}
	}
}
