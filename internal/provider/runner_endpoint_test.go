package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// inClusterEndpoint is a server's address as a pod in its cluster sees it: its Service.
const inClusterEndpoint = "http://qwen.llm.svc:30000"

// A runner dials its addresses from where it runs: the plan warns, at the address, where the
// Kubernetes runner's pod would dial its own loopback (nothing but the runner listens there)
// and where the Docker runner, which shares the server container's network namespace, would
// leave it for a private address (reached only through the engine's port publishing, if at
// all). Each warn row planned without a word before issue 39; each quiet row is an address
// that is right where the runner runs. A new dialled address joins by adding a row.
func TestPlanWarnsRunnerEndpoints(t *testing.T) {
	t.Parallel()
	const bench = "llmserve_capacity_benchmark"
	const k8s, dock = "the Kubernetes runner cannot reach a loopback address", "the Docker runner reaches the server on its loopback"
	for _, r := range []struct {
		name   string
		config map[string]any
		path   string // "" for a row that must plan without a word
		want   string
	}{
		{"kubernetes: endpoint on 127.0.0.1", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": "http://127.0.0.1:30000"}),
			"endpoint", "endpoint http://127.0.0.1:30000 names the loopback, but with runner.kubernetes the benchmark runs in a Job's pod"},
		{"kubernetes: endpoint on localhost", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": "http://localhost:30000"}),
			"endpoint", "names the loopback"},
		{"kubernetes: endpoint on ::1", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": "http://[::1]:30000"}),
			"endpoint", "names the loopback"},
		{"kubernetes: endpoint on 127.0.0.2", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": "http://127.0.0.2:30000"}),
			"endpoint", "names the loopback"},
		{"kubernetes: a replica on the loopback", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": inClusterEndpoint,
			"replica_endpoints": []any{"http://10.244.0.7:30000", "http://127.0.0.1:30001"}}),
			"replica_endpoints[1]", "replica_endpoints[1] http://127.0.0.1:30001 names the loopback"},
		{"kubernetes: telemetry on the loopback", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": inClusterEndpoint,
			"telemetry_endpoints": []any{"http://localhost:9400/metrics"}}),
			"telemetry_endpoints[0]", "names the loopback"},
		{"docker: endpoint on the server container's bridge address", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://172.17.0.2:30000"}),
			"endpoint", "endpoint http://172.17.0.2:30000 is a private address, but with runner.docker the benchmark runs inside the server container's network namespace and reaches the server on its loopback: http://127.0.0.1:30000"},
		{"docker: endpoint on the host's LAN address", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://192.168.1.20:8000"}),
			"endpoint", "is a private address"},
		{"docker: endpoint on 10/8", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://10.0.3.4:8000"}),
			"endpoint", "is a private address"},
		{"docker: endpoint link-local", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://[fe80::1]:8000"}),
			"endpoint", "is a private address"},
		{"docker: a replica on a private address", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "replica_endpoints": []any{"http://172.18.0.3:8000"}}),
			"replica_endpoints[0]", "is a private address"},
		// Right where the runner runs, or meant: no word.
		{"kubernetes: the Service", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": inClusterEndpoint}), "", ""},
		{"kubernetes: a pod IP", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": "http://10.244.0.7:30000"}), "", ""},
		{"docker: the namespace's loopback", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://127.0.0.1:30000"}), "", ""},
		{"docker: a host name", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://gateway.example.com:8000"}), "", ""},
		{"docker: a public address", with(surfaceBench, map[string]any{"runner": dockerRunner(nil), "endpoint": "http://203.0.113.10:8000"}), "", ""},
		{"no runner: a private address", with(surfaceBench, map[string]any{"endpoint": "http://172.17.0.2:30000"}), "", ""},
	} {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			ds := validateResourceConfig(t, bench, r.config)
			if r.path == "" {
				if len(ds) > 0 {
					t.Errorf("diagnostics %q, want none", diagnosticsWithPaths(ds))
				}
				return
			}
			for _, d := range ds {
				if d.Severity == tfprotov6.DiagnosticSeverityWarning && attributePathString(d.Attribute) == r.path && strings.Contains(d.Detail, r.want) &&
					(strings.EqualFold(d.Summary, k8s) || strings.EqualFold(d.Summary, dock)) {
					if hasError(ds) {
						t.Errorf("a warning row also has errors: %q", diagnosticsWithPaths(ds))
					}
					return
				}
			}
			t.Errorf("want a warning at %s saying %q; got %q", r.path, r.want, diagnosticsWithPaths(ds))
		})
	}
}
