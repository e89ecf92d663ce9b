package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// newSurface is one configuration of the provider's newest settings (the runner, publish,
// devices, Vulkan flags, progress files, conversations, think time against timeouts.create)
// that plan must judge: refuse (or warn) naming the attribute (path) and the fix (want). A
// new attribute joins the sweep by adding a row.
type newSurface struct {
	surface, name string
	typeName      string
	config        map[string]any
	path          string // the diagnostic's attribute, as Terraform writes it
	want          string // in its detail
	warning       bool   // a warning rather than an error
}

// with is base with the attributes of set added or replaced.
func with(base map[string]any, set map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range set {
		m[k] = v
	}
	return m
}

// newSurfaceBases are a valid configuration of each resource the rows change.
var (
	surfaceServer = map[string]any{"name": "x", "image": "img", "engine": "sglang", "model": "m"}
	surfaceVulkan = map[string]any{"name": "x", "image": "llmserve/llamacpp-vulkan:latest", "engine": "llamacpp", "model": "/models/m.gguf", "accelerator": "vulkan"}
	surfaceBench  = map[string]any{"endpoint": "http://127.0.0.1:9", "model": "m",
		"workloads": []any{map[string]any{"label": "a", "input_tokens": 8, "output_tokens": 8}},
		"slos":      []any{map[string]any{"percentile": 95.0, "threshold_ms": 100.0}}}
)

func dockerRunner(set map[string]any) map[string]any {
	return map[string]any{"docker": with(map[string]any{"container": "llmserve-qwen"}, set)}
}

func kubeRunner(set map[string]any) map[string]any {
	return map[string]any{"kubernetes": with(map[string]any{"namespace": "llm", "image": "ghcr.io/llmserve/llmserve-runner:1.0.0"}, set)}
}

// conversation is a workload of 4-turn conversations with the given think time.
func conversation(distribution, mean string) []any {
	return []any{map[string]any{"label": "chat", "input_tokens": 8, "output_tokens": 8, "conversation": map[string]any{
		"turns": 4, "think_time": map[string]any{"distribution": distribution, "mean": mean}}}}
}

// traceOf writes a Mooncake trace of n requests spread evenly over span seconds.
func traceOf(t *testing.T, n int, spanS int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 16, "output_length": 4}`+"\n", i*spanS*1000/(n-1))
	}
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func badNewSurfaces(t *testing.T) []newSurface {
	const srvT, benchT = "llmserve_inference_server", "llmserve_capacity_benchmark"
	dir := t.TempDir()
	journal := filepath.Join(dir, "run.jsonl")
	if err := os.WriteFile(journal, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "run.log")
	if err := os.Symlink(journal, linked); err != nil {
		t.Fatal(err)
	}
	long := traceOf(t, 24, 7200) // two hours as recorded
	return []newSurface{
		// runner.docker: the engine refused these only when the run began.
		{"runner", "docker container empty", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"container": ""})}),
			"runner.docker.container", "is empty; give the server container's id or name", false},
		{"runner", "docker container with a space", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"container": "my server"})}),
			"runner.docker.container", `"my server" is not a container id or name`, false},
		{"runner", "docker container with a tag", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"container": "qwen:latest"})}),
			"runner.docker.container", `"qwen:latest" is not a container id or name`, false},
		{"runner", "docker image empty", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"image": ""})}),
			"runner.docker.image", "must name the runner image (or remove image to build one on the engine)", false},
		{"runner", "docker image with a space", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"image": "llmserve runner"})}),
			"runner.docker.image", `"llmserve runner" contains spaces or control characters`, false},
		{"runner", "docker image malformed digest", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"image": "llmserve-runner@sha256:xyz"})}),
			"runner.docker.image", `"llmserve-runner@sha256:xyz" is not an image reference`, false},
		{"runner", "docker image upper case", benchT, with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"image": "LLMServe/Runner:1"})}),
			"runner.docker.image", `"LLMServe/Runner:1" is not an image reference`, false},
		// runner.kubernetes: the cluster refused these only when the Job was created.
		{"runner", "kubernetes namespace not a DNS label", benchT, with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"namespace": "LLM_Serving"})}),
			"runner.kubernetes.namespace", `"LLM_Serving" is not a namespace name`, false},
		{"runner", "kubernetes namespace with a dot", benchT, with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"namespace": "llm.serving"})}),
			"runner.kubernetes.namespace", `"llm.serving" is not a namespace name`, false},
		{"runner", "kubernetes namespace of 64 characters", benchT, with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"namespace": strings.Repeat("n", 64)})}),
			"runner.kubernetes.namespace", "must be no more than 63 characters", false},
		{"runner", "kubernetes image with a space", benchT, with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"image": "ghcr.io/llmserve/llmserve-runner 1.0.0"})}),
			"runner.kubernetes.image", "contains spaces or control characters", false},
		{"runner", "kubernetes image malformed digest", benchT, with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"image": "ghcr.io/llmserve/llmserve-runner@sha256:xyz"})}),
			"runner.kubernetes.image", "is not an image reference a kubelet pulls", false},
		{"runner", "kubernetes image an image id", benchT, with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"image": strings.Repeat("ab", 32)})}),
			"runner.kubernetes.image", "cannot specify 64-byte hexadecimal strings", false},

		// publish = false: bind_address was silently ignored (host_port is refused).
		{"publish", "bind_address every interface", srvT, with(surfaceServer, map[string]any{"publish": false, "bind_address": "0.0.0.0"}),
			"bind_address", `"0.0.0.0" would be ignored with publish = false: nothing is published`, false},
		{"publish", "bind_address a host address", srvT, with(surfaceServer, map[string]any{"publish": false, "bind_address": "192.168.1.10"}),
			"bind_address", "Remove bind_address, or set publish = true to serve on 192.168.1.10", false},

		// devices.
		{"devices", "listed twice", srvT, with(surfaceVulkan, map[string]any{"devices": []any{"/dev/dri", "/dev/dri"}}),
			"devices[1]", `"/dev/dri" is already listed as devices[0]; list each device once`, false},
		{"devices", "listed twice once with a trailing slash", srvT, with(surfaceVulkan, map[string]any{"devices": []any{"/dev/dri", "/dev/dri/"}}),
			"devices[1]", `"/dev/dri/" is not a clean path; write "/dev/dri"`, false},
		{"devices", "not clean", srvT, with(surfaceVulkan, map[string]any{"devices": []any{"/dev/dri/../dri/renderD128"}}),
			"devices[0]", `is not a clean path; write "/dev/dri/renderD128"`, false},
		{"devices", "Docker's host:container:rwm", srvT, with(surfaceVulkan, map[string]any{"devices": []any{"/dev/dri:/dev/dri:rwm"}}),
			"devices[0]", `"/dev/dri:/dev/dri:rwm" is Docker's host:container:permissions form, which devices does not take: give the host path alone ("/dev/dri")`, false},
		{"devices", "Docker's host:permissions", srvT, with(surfaceVulkan, map[string]any{"devices": []any{"/dev/dri/renderD128:rw"}}),
			"devices[0]", `give the host path alone ("/dev/dri/renderD128")`, false},
		{"devices", "null element", srvT, with(surfaceVulkan, map[string]any{"devices": []any{nil}}),
			"devices[0]", "devices[0] is null: every element of this list must be a string", false},
		{"devices", "null element of gpu_ids", srvT, with(surfaceVulkan, map[string]any{"gpu_ids": []any{"0", nil}}),
			"gpu_ids[1]", "gpu_ids[1] is null", false},
		{"devices", "null element of extra_args", srvT, with(surfaceVulkan, map[string]any{"extra_args": []any{nil}}),
			"extra_args[0]", "extra_args[0] is null", false},
		{"devices", "null value of environment", srvT, with(surfaceVulkan, map[string]any{"environment": map[string]any{"GGML_VK_VISIBLE_DEVICES": nil}}),
			`environment["GGML_VK_VISIBLE_DEVICES"]`, `is null: every element of this map must be a string`, false},

		// Vulkan: the short forms of the flags the provider sets, refused as the long ones are.
		{"vulkan flags", "-sm row", srvT, with(surfaceVulkan, map[string]any{"extra_args": []any{"-sm", "row"}}),
			"extra_args[0]", "remove -sm from extra_args", false},
		{"vulkan flags", "-ngl without its value", srvT, with(surfaceVulkan, map[string]any{"extra_args": []any{"--verbose", "-ngl"}}),
			"extra_args[1]", "-ngl is set by the provider on a Vulkan launch", false},
		{"vulkan flags", "-dev without its value", srvT, with(surfaceVulkan, map[string]any{"extra_args": []any{"-dev"}}),
			"extra_args[0]", "-dev is set by the provider on a Vulkan launch", false},

		// progress_file and progress_log: one file held the journal and the human lines.
		{"progress files", "the same path", benchT, with(surfaceBench, map[string]any{"progress_file": journal, "progress_log": journal}),
			"progress_log", "names the same file as progress_file", false},
		{"progress files", "the same path uncleaned", benchT, with(surfaceBench, map[string]any{"progress_file": journal, "progress_log": dir + "/./" + "run.jsonl"}),
			"progress_log", `give progress_log a file of its own, e.g. "` + filepath.Join(dir, "run.log") + `"`, false},
		{"progress files", "a link to the journal", benchT, with(surfaceBench, map[string]any{"progress_file": journal, "progress_log": linked}),
			"progress_log", "names the same file as progress_file", false},

		// Conversations: refused only at apply before.
		{"conversation", "llama.cpp flush", benchT, with(surfaceBench, map[string]any{"workloads": conversation("exponential", "2s"), "trial": map[string]any{"cache_flush": "llamacpp"}}),
			"trial.cache_flush", `a conversation needs that cache: its later turns send their history back for it to serve. Set trial.cache_flush = "none"`, false},

		// Think time, warm-up and trial shape against timeouts.create.
		{"time", "constant think time of 1000h", benchT, with(surfaceBench, map[string]any{"workloads": conversation("constant", "1000h")}),
			"workloads[0].conversation.think_time.mean",
			"waits at least think_time.mean 1000h0m0s × (warmup_conversations 1 × turns 4 + ⌈trial.measured_requests 64 / 64 users⌉ − 1) = 4000h0m0s on its own pauses, however fast the server answers, which is longer than timeouts.create (24h0m0s), and a trial cut short keeps nothing", false},
		{"time", "constant think time past a short timeouts.create", benchT, with(surfaceBench, map[string]any{"workloads": conversation("constant", "10m"),
			"search": map[string]any{"max_concurrency": 16}, "timeouts": map[string]any{"create": "1h"}}),
			"workloads[0].conversation.think_time.mean", "(warmup_conversations 1 × turns 4 + ⌈trial.measured_requests 64 / 16 users⌉ − 1) = 1h10m0s", false},
		{"time", "random think time of 1000h", benchT, with(surfaceBench, map[string]any{"workloads": conversation("exponential", "1000h")}),
			"workloads[0].conversation.think_time.mean", "waits on average at least think_time.mean 1000h0m0s", true},
		{"time", "constant think time of 1000h on a runner", benchT, with(surfaceBench, map[string]any{"workloads": conversation("constant", "1000h"), "runner": dockerRunner(nil)}),
			"workloads[0].conversation.think_time.mean", "the runner measures on past it, and each later apply attaches to it until it finishes", true},
		{"time", "constant arrivals too slow for timeouts.create", benchT, with(surfaceBench, map[string]any{
			"search": map[string]any{"rate": map[string]any{"min": 0.005, "max": 0.01}}, "arrival": map[string]any{"pattern": "constant"}, "timeouts": map[string]any{"create": "1h"}}),
			"search.rate.max", "(8 warmups + 64 measured requests − 1) / search.rate.max 0.01 requests/s = 1h58m20s", false},
		{"time", "a replay too long for timeouts.create", benchT, with(surfaceBench, map[string]any{
			"workloads": []any{map[string]any{"label": "recorded", "trace": map[string]any{"file": long}}},
			"search":    map[string]any{"speedup": map[string]any{"min": 0.5, "max": 1}}, "timeouts": map[string]any{"create": "1h"}}),
			"search.speedup.max", "the trace's span 2h0m0s / search.speedup.max 1 = 2h0m0s", false},
		{"time", "the fewest trials together past timeouts.create", benchT, with(surfaceBench, map[string]any{"workloads": conversation("constant", "5m"), "timeouts": map[string]any{"create": "50m"}}),
			"timeouts.create", `timeouts.create (50m0s) is shorter than the pauses of the fewest trials the search can ask for, however fast the server answers: 3 × 20m0s ("chat") = 1h0m0s over 3 trials; set progress_file`, true},
	}
}

// TestPlanRefusesBadNewSurfaces sends every bad setting of the newest surfaces through the
// provider's validation, as Terraform's validate step does: each is refused (or warned)
// naming its attribute and the fix. On 0b899e0 every row planned without it (or reached the
// framework's "Value Conversion Error", or the engine's own message only at apply).
func TestPlanRefusesBadNewSurfaces(t *testing.T) {
	t.Parallel()
	rows := badNewSurfaces(t)
	seen := map[string]bool{}
	for _, r := range rows {
		name := r.surface + "/" + r.name
		if seen[name] {
			t.Fatalf("duplicate row %q", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ds := validateResourceConfig(t, r.typeName, r.config)
			want := tfprotov6.DiagnosticSeverityError
			if r.warning {
				want = tfprotov6.DiagnosticSeverityWarning
			}
			for _, d := range ds {
				if d.Severity == want && attributePathString(d.Attribute) == r.path && strings.Contains(d.Detail, r.want) {
					if d.Severity == tfprotov6.DiagnosticSeverityWarning && hasError(ds) {
						t.Errorf("a warning row also has errors: %q", diagSummaries(ds))
					}
					return
				}
			}
			t.Errorf("want a %s at %s saying %q; got %q", map[bool]string{true: "warning", false: "error"}[r.warning], r.path, r.want, diagnosticsWithPaths(ds))
		})
	}
}

// TestPlanAcceptsGoodNewSurfaces: the values beside each refusal that are right plan without
// a word, so the rules refuse what they name and nothing more.
func TestPlanAcceptsGoodNewSurfaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, r := range []struct {
		name     string
		typeName string
		config   map[string]any
	}{
		{"docker runner by name", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"runner": dockerRunner(nil)})},
		{"docker runner by id", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"container": strings.Repeat("0f", 32)})})},
		{"docker runner by inspect name", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{"container": "/llmserve-qwen"})})},
		{"docker runner image pinned by digest", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"runner": dockerRunner(map[string]any{
			"image": "ghcr.io/llmserve/llmserve-runner:1.0.0@sha256:" + strings.Repeat("ab", 32)})})},
		{"kubernetes runner", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"runner": kubeRunner(nil), "endpoint": inClusterEndpoint})},
		{"kubernetes runner on docker hub", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"runner": kubeRunner(map[string]any{"namespace": "llm-serving-2", "image": "llmserve/runner"}), "endpoint": inClusterEndpoint})},
		{"unpublished server", "llmserve_inference_server", with(surfaceServer, map[string]any{"publish": false})},
		{"unpublished server on loopback", "llmserve_inference_server", with(surfaceServer, map[string]any{"publish": false, "bind_address": "127.0.0.1"})},
		{"published server on every interface", "llmserve_inference_server", with(surfaceServer, map[string]any{"bind_address": "0.0.0.0"})},
		{"vulkan devices", "llmserve_inference_server", with(surfaceVulkan, map[string]any{"devices": []any{"/dev/dri/renderD128", "/dev/dri/card1"}})},
		{"vulkan no devices (lavapipe)", "llmserve_inference_server", with(surfaceVulkan, map[string]any{"devices": []any{}, "gpu_ids": []any{"0"}})},
		{"vulkan extra_args of its own", "llmserve_inference_server", with(surfaceVulkan, map[string]any{"extra_args": []any{"--verbose", "-fa", "on"}})},
		{"progress files apart", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"progress_file": filepath.Join(dir, "run.jsonl"), "progress_log": filepath.Join(dir, "run.log")})},
		{"conversation without a flush", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"workloads": conversation("exponential", "2s"), "trial": map[string]any{"cache_flush": "none"}})},
		{"conversation with think time", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"workloads": conversation("constant", "30s")})},
		{"rate search", "llmserve_capacity_benchmark", with(surfaceBench, map[string]any{"search": map[string]any{"rate": map[string]any{"min": 0.5, "max": 8}}, "arrival": map[string]any{"pattern": "constant"}})},
	} {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			if ds := validateResourceConfig(t, r.typeName, r.config); len(ds) > 0 {
				t.Errorf("diagnostics %q, want none", diagnosticsWithPaths(ds))
			}
		})
	}
}

func diagnosticsWithPaths(ds []*tfprotov6.Diagnostic) []string {
	out := diagSummaries(ds)
	for i, d := range ds {
		out[i] = attributePathString(d.Attribute) + ": " + out[i]
	}
	return out
}
