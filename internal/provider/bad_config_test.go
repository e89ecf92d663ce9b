package provider

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"golang.org/x/crypto/ssh"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/enginetest"
)

// badConfig is one configuration a user could write that must fail at plan with a message
// naming the attribute (path) and saying what is wrong (want). Both are matched as words, so
// Terraform's line wrapping does not matter.
type badConfig struct {
	name   string
	config string
	path   string
	want   string
}

// hcl builds one resource block: defaults overridden by set (raw HCL values; "" removes).
func hcl(kind, name string, defaults [][2]string, set map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resource %q %q {\n", kind, name)
	used := map[string]bool{}
	for _, kv := range defaults {
		v, ok := set[kv[0]]
		used[kv[0]] = true
		if !ok {
			v = kv[1]
		}
		if v != "" {
			fmt.Fprintf(&b, "  %s = %s\n", kv[0], v)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		if !used[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %s\n", k, set[k])
	}
	b.WriteString("}\n")
	return b.String()
}

func srv(set map[string]string) string {
	return hcl("llmserve_inference_server", "bad", [][2]string{
		{"name", `"llmserve-bad"`}, {"image", `"llmserve-test-engine:acc"`}, {"engine", `"sglang"`}, {"model", `"org/model"`},
	}, set)
}

func deployment(set map[string]string) string {
	return hcl("llmserve_inference_deployment", "bad", [][2]string{
		{"name", `"llmserve-bad"`}, {"image", `"llmserve-test-engine:acc"`}, {"engine", `"llamacpp"`}, {"model", `"/models/m.gguf"`},
	}, set)
}

func bench(set map[string]string) string {
	return hcl("llmserve_capacity_benchmark", "bad", [][2]string{
		{"endpoint", `"http://127.0.0.1:9"`}, {"model", `"m"`},
		{"workloads", `[{ label = "a", input_tokens = 8, output_tokens = 8 }]`},
		{"slos", `[{ percentile = 95, threshold_ms = 100 }]`},
	}, set)
}

// prov is a provider block in front of a valid benchmark, so the provider is configured.
func prov(body string) string {
	return "provider \"llmserve\" {\n" + body + "\n}\n" + bench(nil)
}

// words matches s with any run of white space (Terraform wraps long messages) between words.
func words(s string) string {
	f := strings.Fields(s)
	for i := range f {
		f[i] = regexp.QuoteMeta(f[i])
	}
	return strings.Join(f, `\s+`)
}

func badConfigs(t *testing.T) []badConfig {
	tlsm, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	other, err := enginetest.NewTLSMaterial()
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(edKey, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	encryptedKey := string(pem.EncodeToMemory(block))
	der, _ := x509.MarshalPKCS8PrivateKey(edKey)
	plainKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	dir := t.TempDir()
	file := filepath.Join(dir, "results.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	heredoc := func(s string) string { return "<<EOT\n" + s + "EOT" }

	return []badConfig{
		// llmserve_inference_server: network and placement.
		{"bind_address host name", srv(map[string]string{"bind_address": `"localhost"`}), "bind_address", `must be an IP address literal, got "localhost"`},
		{"bind_address garbage", srv(map[string]string{"bind_address": `"0.0.0.0:80"`}), "bind_address", `must be an IP address literal`},
		{"bind_address empty", srv(map[string]string{"bind_address": `""`}), "bind_address", `must be an IP address literal`},
		{"port zero", srv(map[string]string{"port": `0`}), "port", `must be between 1 and 65535`},
		{"port too large", srv(map[string]string{"port": `70000`}), "port", `must be between 1 and 65535`},
		{"port negative", srv(map[string]string{"port": `-1`}), "port", `must be between 1 and 65535`},
		{"host_port zero", srv(map[string]string{"host_port": `0`}), "host_port", `must be between 1 and 65535`},
		{"host_port too large", srv(map[string]string{"host_port": `65536`}), "host_port", `must be between 1 and 65535`},
		{"host_port with host networking", srv(map[string]string{"network_mode": `"host"`, "host_port": `8080`}), "host_port", `does not apply with host networking`},
		{"network_mode unknown", srv(map[string]string{"network_mode": `"overlay"`}), "network_mode", `value must be one of`},
		{"name with space", srv(map[string]string{"name": `"my server"`}), "name", `must be a valid container name`},
		{"name empty", srv(map[string]string{"name": `""`}), "name", `must be a valid container name`},
		{"image empty", srv(map[string]string{"image": `""`}), "image", `must name the engine image`},
		{"image with space", srv(map[string]string{"image": `"lmsysorg/sglang latest"`}), "image", `contains spaces or control characters`},
		{"image upper case", srv(map[string]string{"image": `"LMSysOrg/SGLang:latest"`}), "image", `is not an image reference`},
		{"image bad digest", srv(map[string]string{"image": `"repo@sha256:xyz"`}), "image", `is not an image reference`},
		{"image control character", srv(map[string]string{"image": `"repo\u001b[2J"`}), "image", `contains the control character U+001B`},
		{"engine unknown", srv(map[string]string{"engine": `"tgi"`}), "engine", `value must be one of`},
		{"accelerator unknown", srv(map[string]string{"accelerator": `"tpu"`}), "accelerator", `value must be one of`},
		{"llamacpp on xpu more devices than gpu_ids", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "accelerator": `"xpu"`, "tensor_parallel_size": `2`, "gpu_ids": `["0"]`}), "gpu_ids", `list 2 devices or lower tensor_parallel_size`},
		{"sglang on vulkan", srv(map[string]string{"accelerator": `"vulkan"`}), "accelerator", `does not run on "vulkan"`},
		{"model empty", srv(map[string]string{"model": `""`}), "model", `must name the model`},
		{"model control character", srv(map[string]string{"model": `"org/model\n--evil"`}), "model", `contains control characters`},
		{"model_host_path with relative model", srv(map[string]string{"model_host_path": `"/srv/m.gguf"`, "model": `"m.gguf"`}), "model", `must be an absolute path inside the container`},
		{"model_host_path relative", srv(map[string]string{"model_host_path": `"models/m.gguf"`, "model": `"/models/m.gguf"`}), "model_host_path", `must be an absolute path on the engine host`},
		{"llamacpp model not gguf", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/models/m.bin"`}), "model", `absolute path of a .gguf file`},
		{"llamacpp revision", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "revision": `"main"`}), "revision", `has no revision`},
		{"llamacpp mem_fraction", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "mem_fraction": `0.5`}), "mem_fraction", `not a memory fraction`},
		{"llamacpp tensor parallel", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "tensor_parallel_size": `2`}), "tensor_parallel_size", `on "cpu" set 1`},
		{"revision control character", srv(map[string]string{"revision": `"main\r"`}), "revision", `contains control characters`},
		{"served_model_name control character", srv(map[string]string{"served_model_name": `"qwen\u0007"`}), "served_model_name", `contains control characters`},

		// Engine settings that would be ignored or make no sense.
		{"context_length zero", srv(map[string]string{"context_length": `0`}), "context_length", `must be at least 1, got 0. 0 would be ignored`},
		{"context_length negative", srv(map[string]string{"context_length": `-4096`}), "context_length", `must be at least 1`},
		{"context_length huge", srv(map[string]string{"context_length": `100000000000`}), "context_length", `must be at most 16777216`},
		{"context_length fractional", srv(map[string]string{"context_length": `4096.5`}), "context_length", `must be a whole number, got 4096.5`},
		{"max_running_requests zero", srv(map[string]string{"max_running_requests": `0`}), "max_running_requests", `must be at least 1, got 0. 0 would be ignored`},
		{"max_running_requests huge", srv(map[string]string{"max_running_requests": `1000001`}), "max_running_requests", `must be at most 100000`},
		{"mem_fraction zero", srv(map[string]string{"mem_fraction": `0`}), "mem_fraction", `must be greater than 0 and at most 1, got 0`},
		{"mem_fraction above one", srv(map[string]string{"mem_fraction": `1.5`}), "mem_fraction", `must be greater than 0 and at most 1, got 1.5`},
		{"mem_fraction percent", srv(map[string]string{"mem_fraction": `85`}), "mem_fraction", `must be greater than 0 and at most 1, got 85`},
		{"tensor_parallel_size zero", srv(map[string]string{"tensor_parallel_size": `0`}), "tensor_parallel_size", `must be at least 1`},
		{"tensor_parallel_size fractional", srv(map[string]string{"tensor_parallel_size": `1.5`}), "tensor_parallel_size", `must be a whole number, got 1.5`},
		{"tensor_parallel_size beyond int64", srv(map[string]string{"tensor_parallel_size": `1e30`}), "tensor_parallel_size", `far outside what it accepts`},
		{"gpu_ids on cpu", srv(map[string]string{"gpu_ids": `["0"]`}), "gpu_ids", `only accelerator = "cuda" (NVIDIA), "xpu" (Intel) and "vulkan" use`},
		{"gpu_ids on xpu not a Level Zero index", srv(map[string]string{"accelerator": `"xpu"`, "gpu_ids": `["GPU-1a2b"]`}), "gpu_ids[0]", `must be a Level Zero device index`},
		{"gpu_ids duplicated", srv(map[string]string{"accelerator": `"cuda"`, "gpu_ids": `["0", "1", "0"]`}), "gpu_ids[2]", `is already listed as gpu_ids[0]`},
		{"gpu_ids empty id", srv(map[string]string{"accelerator": `"cuda"`, "gpu_ids": `[""]`}), "gpu_ids[0]", `must be a GPU index ("0") or a GPU or MIG UUID`},
		{"gpu_ids on cuda naming the cpu", srv(map[string]string{"accelerator": `"cuda"`, "gpu_ids": `["cpu"]`}), "gpu_ids[0]", `must be a GPU index ("0") or a GPU or MIG UUID ("GPU-…", "MIG-…"), as nvidia-smi -L shows them, got "cpu"`},
		{"shm_size_mb with cuda", srv(map[string]string{"accelerator": `"cuda"`, "shm_size_mb": `1024`}), "shm_size_mb", `has no effect with accelerator = "cuda"`},
		{"shm_size_mb zero", srv(map[string]string{"shm_size_mb": `0`}), "shm_size_mb", `must be at least 1`},
		{"group_add empty", srv(map[string]string{"group_add": `[""]`}), "group_add[0]", `must be a group name or numeric id`},
		{"speculative steps zero", srv(map[string]string{"speculative": `{ algorithm = "EAGLE", steps = 0, topk = 1, draft_tokens = 1 }`}), "speculative.steps", `must be at least 1`},
		{"speculative sglang draft tokens", srv(map[string]string{"speculative": `{ algorithm = "EAGLE", steps = 7, topk = 1, draft_tokens = 7 }`}), "speculative.draft_tokens", `needs draft_tokens = steps + 1 = 8`},
		{"speculative sglang algorithm", srv(map[string]string{"speculative": `{ algorithm = "MEDUSA", steps = 3, topk = 1, draft_tokens = 4 }`}), "speculative.algorithm", `SGLang does not know "MEDUSA"`},
		{"speculative vllm topk", srv(map[string]string{"engine": `"vllm"`, "speculative": `{ algorithm = "eagle", steps = 3, topk = 4 }`}), "speculative.topk", `vLLM drafts a single chain`},
		{"speculative llamacpp draft model", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "speculative": `{ algorithm = "draft", steps = 4 }`}), "speculative.draft_model", `llama.cpp needs a draft model`},

		// Mounts.
		{"mount empty source", srv(map[string]string{"mounts": `[{ source = "", target = "/data" }]`}), "mounts[0].source", `must not be empty`},
		{"mount relative target", srv(map[string]string{"mounts": `[{ source = "/srv/hf", target = "data" }]`}), "mounts[0].target", `must be an absolute path inside the container, got "data"`},
		{"mount relative bind source", srv(map[string]string{"mounts": `[{ source = "hf-cache", target = "/data" }]`}), "mounts[0].source", `a bind mount needs an absolute host path`},
		{"mount bad volume name", srv(map[string]string{"mounts": `[{ type = "volume", source = "/srv/hf", target = "/data" }]`}), "mounts[0].source", `is not a volume name`},
		{"mount root target", srv(map[string]string{"mounts": `[{ source = "/srv/hf", target = "/" }]`}), "mounts[0].target", `cannot be the container's root`},
		{"mount duplicate target", srv(map[string]string{"mounts": `[{ source = "/a", target = "/data" }, { source = "/b", target = "/data/" }]`}), "mounts[1].target", `is already the target of mounts[0]`},
		{"mount over model", srv(map[string]string{"model_host_path": `"/srv/m"`, "model": `"/models/m"`, "mounts": `[{ source = "/a", target = "/models/m" }]`}), "mounts[0].target", `is already the target of model`},
		{"mount type unknown", srv(map[string]string{"mounts": `[{ type = "tmpfs", source = "x", target = "/data" }]`}), "mounts[0].type", `value must be one of`},

		// Environment, labels, arguments.
		{"env key with =", srv(map[string]string{"environment": `{ "A=B" = "1" }`}), `environment["A=B"]`, `is not a valid variable name`},
		{"env key empty", srv(map[string]string{"environment": `{ "" = "1" }`}), "environment", `has an empty variable name`},
		{"env key with space", srv(map[string]string{"environment": `{ "MY VAR" = "1" }`}), `environment["MY VAR"]`, `is not a valid variable name`},
		{"env value escape", srv(map[string]string{"environment": `{ A = "x\u001b]0;pwned\u0007" }`}), `environment["A"]`, `the value contains control characters`},
		{"env HF_TOKEN", srv(map[string]string{"environment": `{ HF_TOKEN = "hf_abc" }`}), `environment["HF_TOKEN"]`, `remove it and set hub_token_wo`},
		{"env VLLM_API_KEY", srv(map[string]string{"engine": `"vllm"`, "environment": `{ VLLM_API_KEY = "k" }`}), `environment["VLLM_API_KEY"]`, `remove it and set api_key_wo`},
		{"env LLAMA_API_KEY", srv(map[string]string{"environment": `{ LLAMA_API_KEY = "k" }`}), `environment["LLAMA_API_KEY"]`, `remove it and set api_key_wo`},
		{"label reserved spec", srv(map[string]string{"labels": `{ "dev.llmserve.spec" = "{}" }`}), `labels["dev.llmserve.spec"]`, `is written by the provider`},
		{"label reserved managed", srv(map[string]string{"labels": `{ "dev.llmserve.managed" = "false" }`}), `labels["dev.llmserve.managed"]`, `would overwrite this value; choose another key`},
		{"label key control", srv(map[string]string{"labels": "{ \"team\u0085\" = \"x\" }"}), `labels`, `the key contains control characters`},
		{"label empty key", srv(map[string]string{"labels": `{ "" = "x" }`}), "labels", `has an empty label key`},
		{"label value control", srv(map[string]string{"labels": `{ team = "a\nb" }`}), `labels["team"]`, `the value contains control characters`},
		{"extra_args api key", srv(map[string]string{"extra_args": `["--api-key", "sk-123"]`}), "extra_args[0]", `--api-key puts a secret on the command line`},
		{"extra_args api key with =", srv(map[string]string{"extra_args": `["--api-key=sk-123"]`}), "extra_args[0]", `--api-key puts a secret on the command line`},
		{"extra_args hf token", srv(map[string]string{"extra_args": `["--hf-token", "hf"]`}), "extra_args[0]", `--hf-token puts a secret`},
		{"extra_args control", srv(map[string]string{"extra_args": `["--log-level\tdebug"]`}), "extra_args[0]", `contains control characters`},
		{"entrypoint empty element", srv(map[string]string{"entrypoint": `[""]`}), "entrypoint[0]", `must not be empty`},

		// Lifecycle settings.
		{"readiness_timeout zero", srv(map[string]string{"readiness_timeout": `"0s"`}), "readiness_timeout", `must be a positive Go duration`},
		{"readiness_timeout words", srv(map[string]string{"readiness_timeout": `"ten minutes"`}), "readiness_timeout", `readiness_timeout must be a Go duration: a number and a unit`},
		{"timeouts.create zero", srv(map[string]string{"timeouts": `{ create = "0s" }`}), "timeouts.create", `must be a positive Go duration`},
		{"timeouts.create negative", srv(map[string]string{"timeouts": `{ create = "-5m" }`}), "timeouts.create", `must be a positive Go duration`},
		{"timeouts.delete zero", srv(map[string]string{"timeouts": `{ delete = "0m" }`}), "timeouts.delete", `must be a positive Go duration`},
		{"deployment timeouts.update negative", deployment(map[string]string{"timeouts": `{ update = "-5m" }`}), "timeouts.update", `must be a positive Go duration`},
		{"deployment name not a DNS label", deployment(map[string]string{"name": `"Llama_3"`}), "name", `must be a DNS-1035 label`},
		{"stop grace negative", srv(map[string]string{"stop_grace_period_seconds": `-1`}), "stop_grace_period_seconds", `must be at least 0`},
		{"restart policy unknown", srv(map[string]string{"restart_policy": `"sometimes"`}), "restart_policy", `value must be one of`},
		{"created stopped", srv(map[string]string{"running": `false`}), "running", `running = false stops an existing server`},
		{"engine_version escape", srv(map[string]string{"engine_version": `"0.5\u001b[2J"`}), "engine_version", `contains the control character U+001B`},
		{"llamacpp engine_version latest", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "engine_version": `"latest"`}), "engine_version",
			`llama.cpp releases are build numbers such as "b8846" (what llama-server --version and /props build_info show), got "latest", which would silently select the newest flags`},
		{"admin_api_key_wo on vllm", srv(map[string]string{"engine": `"vllm"`, "admin_api_key_wo": `"k"`}), "admin_api_key_wo",
			`engine "vllm" has no admin API key (only SGLang's --admin-api-key guards its admin endpoints), so this key would be dropped; remove admin_api_key_wo`},
		{"admin_api_key_wo on llamacpp deployment", deployment(map[string]string{"admin_api_key_wo": `"k"`}), "admin_api_key_wo", `engine "llamacpp" has no admin API key`},
		{"admin_api_key_wo escape", srv(map[string]string{"admin_api_key_wo": `"k\u001b"`}), "admin_api_key_wo", `contains the control character U+001B`},

		// llmserve_inference_deployment: the rules of llmserve_inference_server, and Kubernetes' own.
		{"deployment env HF_TOKEN", deployment(map[string]string{"environment": `{ HF_TOKEN = "hf_abc" }`}), `environment["HF_TOKEN"]`, `remove it and set hub_token_wo`},
		{"deployment env LLAMA_API_KEY", deployment(map[string]string{"environment": `{ LLAMA_API_KEY = "k" }`}), `environment["LLAMA_API_KEY"]`, `remove it and set api_key_wo`},
		{"deployment env provider key", deployment(map[string]string{"environment": `{ LLMSERVE_API_KEY = "k" }`}), `environment["LLMSERVE_API_KEY"]`, `is set by the provider from api_key_wo`},
		{"deployment env escape", deployment(map[string]string{"environment": `{ A = "x\u001b]0;pwned\u0007" }`}), `environment["A"]`, `the value contains control characters`},
		{"deployment label managed-by", deployment(map[string]string{"labels": `{ "app.kubernetes.io/managed-by" = "helm" }`}), `labels["app.kubernetes.io/managed-by"]`, `is written by the provider (destroy and the Service select on it) and would overwrite this value; choose another key`},
		{"deployment label instance", deployment(map[string]string{"labels": `{ "app.kubernetes.io/instance" = "x" }`}), `labels["app.kubernetes.io/instance"]`, `is written by the provider`},
		{"deployment label value syntax", deployment(map[string]string{"labels": `{ team = "a b" }`}), `labels["team"]`, `"a b" is not a label value`},
		{"deployment label key control", deployment(map[string]string{"labels": "{ \"team\u0085\" = \"x\" }"}), `labels`, `a key contains control characters`},
		{"deployment node_selector value escape", deployment(map[string]string{"node_selector": `{ "gpu.intel.com/family" = "B70\u001b[2J" }`}), `node_selector["gpu.intel.com/family"]`, `is not a label value`},
		{"deployment annotation launch record", deployment(map[string]string{"annotations": `{ "llmserve.dev/launch" = "{}" }`}), `annotations["llmserve.dev/launch"]`, `holds the launch record import reads`},
		{"deployment mount_path relative", deployment(map[string]string{"model_cache": `{ host_path = "/srv/models", mount_path = "models" }`}), "model_cache.mount_path", `must be an absolute path inside the engine container, got "models"`},
		{"deployment host_path relative", deployment(map[string]string{"model_cache": `{ host_path = "srv/models", mount_path = "/models" }`}), "model_cache.host_path", `must be an absolute directory on the node`},
		{"deployment toleration Exists with value", deployment(map[string]string{"tolerations": `[{ key = "gpu", operator = "Exists", value = "true" }]`}), "tolerations[0].value",
			`must be left out with operator = "Exists", which matches every value of the key`},
		{"deployment toleration Equal without key", deployment(map[string]string{"tolerations": `[{ value = "x" }]`}), "tolerations[0].key", `must be set with operator = "Equal" (the default)`},
		{"deployment toleration_seconds without NoExecute", deployment(map[string]string{"tolerations": `[{ key = "gpu", operator = "Exists", effect = "NoSchedule", toleration_seconds = 30 }]`}), "tolerations[0].toleration_seconds", `only applies with effect = "NoExecute"`},
		{"deployment accelerator_resource", deployment(map[string]string{"accelerator_resource": `"nvidia gpu"`}), "accelerator_resource", `is not a resource name`},
		// The server's Intel and Vulkan rules, from the same functions (issue 41).
		{"deployment gpu_ids vulkan index", deployment(map[string]string{"accelerator": `"vulkan"`, "gpu_ids": `["0.1"]`}), "gpu_ids[0]", `must be a Vulkan device index ("0")`},
		{"deployment gpu_ids fewer than tp", deployment(map[string]string{"accelerator": `"xpu"`, "tensor_parallel_size": "2", "gpu_ids": `["1"]`}), "gpu_ids",
			`lists 1 devices but tensor_parallel_size = 2 needs one per rank`},
		{"deployment gpu_ids and GGML_VK_VISIBLE_DEVICES", deployment(map[string]string{"accelerator": `"vulkan"`, "gpu_ids": `["0"]`, "environment": `{ GGML_VK_VISIBLE_DEVICES = "1" }`}),
			`environment["GGML_VK_VISIBLE_DEVICES"]`, `gpu_ids sets GGML_VK_VISIBLE_DEVICES for accelerator = "vulkan"; set the devices in one place`},
		{"deployment gpu_ids cuda", deployment(map[string]string{"accelerator": `"cuda"`, "gpu_ids": `["0"]`}), "gpu_ids", `on Kubernetes NVIDIA's device plugin (accelerator_resource) or the claim (accelerator_claim) chooses`},
		{"deployment vulkan split-mode", deployment(map[string]string{"accelerator": `"vulkan"`, "gpu_ids": `["0"]`, "extra_args": `["--split-mode", "row"]`}), "extra_args",
			`ggml's row split needs a split buffer type`},
		{"deployment xpu speculative topk", hcl("llmserve_inference_deployment", "bad", [][2]string{
			{"name", `"llmserve-bad"`}, {"image", `"lmsysorg/sglang:v0.5.20-xpu"`}, {"engine", `"sglang"`}, {"model", `"Qwen/Qwen3-8B"`},
		}, map[string]string{"accelerator": `"xpu"`, "speculative": `{ algorithm = "EAGLE3", steps = 3, topk = 2, draft_tokens = 8, draft_model = "d" }`}), "speculative.topk",
			`SGLang on XPU drafts only top-k 1`},
		{"deployment claim and resource", deployment(map[string]string{"accelerator": `"xpu"`, "accelerator_resource": `"gpu.intel.com/xe"`, "accelerator_claim": `{ device_class = "gpu.intel.com" }`}),
			"accelerator_claim", `and accelerator_resource = "gpu.intel.com/xe" both ask for the replicas' devices`},
		{"deployment claim and count", deployment(map[string]string{"accelerator": `"xpu"`, "accelerator_count": "2", "accelerator_claim": `{ device_class = "gpu.intel.com" }`}),
			"accelerator_count", `counts devices of accelerator_resource, which accelerator_claim replaces`},
		{"deployment claim class", deployment(map[string]string{"accelerator": `"xpu"`, "accelerator_claim": `{ device_class = "Intel GPUs" }`}), "accelerator_claim.device_class",
			`"Intel GPUs" is not a DeviceClass name`},
		{"deployment claim count", deployment(map[string]string{"accelerator": `"xpu"`, "accelerator_claim": `{ device_class = "gpu.intel.com", count = 33 }`}), "accelerator_claim.count",
			`value must be between 1 and 32`},
		{"deployment claim empty selector", deployment(map[string]string{"accelerator": `"xpu"`, "accelerator_claim": `{ device_class = "gpu.intel.com", selectors = [" "] }`}),
			"accelerator_claim.selectors[0]", `must be a CEL expression over device`},
		{"api_key_wo with newline", srv(map[string]string{"api_key_wo": `"sk-1\n"`}), "api_key_wo", `contains the control character U+000A`},

		// llmserve_capacity_benchmark: endpoint.
		{"endpoint without scheme", bench(map[string]string{"endpoint": `"gpu-host.example.com:30000"`}), "endpoint", `is not an http:// or https:// URL`},
		{"endpoint ftp", bench(map[string]string{"endpoint": `"ftp://gpu-host.example.com"`}), "endpoint", `is not an http:// or https:// URL`},
		{"endpoint empty", bench(map[string]string{"endpoint": `""`}), "endpoint", `must not be empty`},
		{"endpoint no host", bench(map[string]string{"endpoint": `"http://:30000"`}), "endpoint", `has no host`},
		// Issue 33: whatever else is wrong, a URL is quoted without its user info or query values
		// (TestURLsNeverEchoSecrets sweeps every URL-bearing attribute).
		{"endpoint password and bad port", bench(map[string]string{"endpoint": `"http://u:PW-S3CRET@127.0.0.1:8x8/"`}), "endpoint", `"http://REDACTED@127.0.0.1:8x8/" is not a URL`},
		{"telemetry token in the query", bench(map[string]string{"telemetry_endpoints": `["http://127.0.0.1:9400/metrics?token=TOK-S3CRET"]`}), "telemetry_endpoints[0]",
			`"http://127.0.0.1:9400/metrics?token=REDACTED" has a query string, which may carry a token into state and plan output`},
		{"endpoint password", bench(map[string]string{"endpoint": `"http://admin:hunter2@gpu-host.example.com:30000"`}), "endpoint", `carries credentials, which would be stored in state and shown in plan output; remove them from the URL and pass the key in api_key`},
		{"endpoint user only", bench(map[string]string{"endpoint": `"https://token@gpu-host.example.com"`}), "endpoint", `carries credentials`},
		{"endpoint /v1", bench(map[string]string{"endpoint": `"http://gpu-host.example.com:30000/v1"`}), "endpoint", `ends in /v1; the benchmark adds /v1/chat/completions or /v1/completions itself`},
		{"endpoint /v1/", bench(map[string]string{"endpoint": `"http://gpu-host.example.com:30000/v1/"`}), "endpoint", `use the base URL "http://gpu-host.example.com:30000"`},
		{"endpoint chat path", bench(map[string]string{"endpoint": `"http://gpu-host.example.com:30000/v1/chat/completions"`}), "endpoint", `ends in /v1/chat/completions`},
		{"endpoint query", bench(map[string]string{"endpoint": `"http://gpu-host.example.com:30000?key=abc"`}), "endpoint", `has a query string`},
		{"endpoint fragment", bench(map[string]string{"endpoint": `"http://gpu-host.example.com:30000#x"`}), "endpoint", `has a fragment`},
		{"endpoint port out of range", bench(map[string]string{"endpoint": `"http://gpu-host.example.com:70000"`}), "endpoint", `port 70000 is not between 1 and 65535`},
		{"endpoint with space", bench(map[string]string{"endpoint": `"http://gpu host:30000"`}), "endpoint", `contains spaces or control characters`},

		// llmserve_capacity_benchmark: bounds and shapes.
		{"benchmark admin_api_key escape", bench(map[string]string{"admin_api_key": `"k\u001b[2J"`}), "admin_api_key", `contains the control character U+001B`},
		{"benchmark model empty", bench(map[string]string{"model": `""`}), "model", `must not be empty; give the model name the server lists under /v1/models`},
		{"benchmark model control character", bench(map[string]string{"model": `"m\u009b"`}), "model", `contains the control character U+009B`},
		{"api unknown", bench(map[string]string{"api": `"responses"`}), "api", `must be "chat" or "completions", got "responses"`},
		{"no workloads", bench(map[string]string{"workloads": `[]`}), "workloads", `must list at least one workload`},
		{"label empty", bench(map[string]string{"workloads": `[{ label = "", input_tokens = 8, output_tokens = 8 }]`}), "workloads[0].label", `must not be empty: labels key the result maps`},
		{"label control character", bench(map[string]string{"workloads": `[{ label = "a\u001b[31m", input_tokens = 8, output_tokens = 8 }]`}), "workloads[0].label", `contains the control character U+001B`},
		{"label duplicated", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = 8 }, { label = "a", input_tokens = 9, output_tokens = 9 }]`}), "workloads[1].label", `is already used by workloads[0]`},
		{"input_tokens zero", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 0, output_tokens = 8 }]`}), "workloads[0].input_tokens", `must be at least 1, got 0`},
		{"input_tokens above 1 Mi", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 1048577, output_tokens = 8 }]`}), "workloads[0].input_tokens", `must be at most 1048576, got 1048577`},
		{"input_tokens 1e12", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 1e12, output_tokens = 8 }]`}), "workloads[0].input_tokens", `must be at most 1048576`},
		{"input_tokens fractional", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 1.5, output_tokens = 8 }]`}), "workloads[0].input_tokens", `must be a whole number, got 1.5`},
		{"output_tokens negative", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = -1 }]`}), "workloads[0].output_tokens", `must be at least 1, got -1`},
		{"output_tokens 1e11", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = 1e11 }]`}), "workloads[0].output_tokens", `must be at most 1048576`},
		{"output_tokens beyond int64", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = 1e30 }]`}), "workloads[0].output_tokens", `far outside what it accepts`},
		{"percentile zero", bench(map[string]string{"slos": `[{ percentile = 0, threshold_ms = 100 }]`}), "slos[0].percentile", `must be in (0, 100]`},
		{"percentile above 100", bench(map[string]string{"slos": `[{ percentile = 100.5, threshold_ms = 100 }]`}), "slos[0].percentile", `must be in (0, 100]`},
		{"percentile as a fraction", bench(map[string]string{"slos": `[{ percentile = 0.95, threshold_ms = 100 }]`}), "slos[0].percentile", `= 0.95 asks for p0.95, the most extreme request of each trial rather than a share of users: percentiles are on a 0-100 scale. Write 95 for p95`},
		{"percentile p0.5 ITL", bench(map[string]string{"slos": `[{ metric = "inter_token_latency", percentile = 0.5, threshold_ms = 40 }]`}), "slos[0].percentile", `asks for p0.5`},
		{"ITL with one output token", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = 1 }]`, "slos": `[{ metric = "inter_token_latency", percentile = 95, threshold_ms = 40 }]`}),
			"slos[0].metric", `is inter_token_latency, which needs at least two output tokens per request, but workloads[0].output_tokens ("a") has output_tokens = 1`},
		{"TTST with one output token", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = 1 }]`, "slos": `[{ metric = "time_to_second_token", percentile = 95, threshold_ms = 40 }]`}),
			"slos[0].metric", `is time_to_second_token, which needs at least two output tokens`},
		{"goodput greater than 100", bench(map[string]string{"slos": `[{ percentile = 95, threshold_ms = 100 }, { metric = "goodput", threshold_ms = 100 }]`}),
			"slos[1].threshold_ms", `= 100 with comparison greater_than can never be met: goodput is a percentage of requests, at most 100`},
		{"objectives contradict across percentiles", bench(map[string]string{"slos": `[{ percentile = 50, threshold_ms = 1000 }, { percentile = 95, threshold_ms = 200 }]`}),
			"slos[0]", `can never be the objective that fails: slos[1] (p95 TTFT < 200 ms) is at least as strict and a trial's p95 is never below its p50, so their thresholds contradict each other`},
		{"objectives contradict across metrics", bench(map[string]string{"slos": `[{ percentile = 95, threshold_ms = 1000 }, { metric = "request_latency", percentile = 95, threshold_ms = 500 }]`}),
			"slos[0]", `a request's latency is never below its time to first token`},
		{"threshold zero", bench(map[string]string{"slos": `[{ percentile = 95, threshold_ms = 0 }]`}), "slos[0].threshold_ms", `must be greater than 0, got 0`},
		{"metric unknown", bench(map[string]string{"slos": `[{ metric = "ttft", percentile = 95, threshold_ms = 100 }]`}), "slos[0].metric", `must be one of time_to_first_token, inter_token_latency`},
		{"comparison unknown", bench(map[string]string{"slos": `[{ comparison = "lt", percentile = 95, threshold_ms = 100 }]`}), "slos[0].comparison", `"lt" does not fit time_to_first_token, where lower is better; use strictly_less_than or less_than_or_equal`},
		{"min_concurrency zero", bench(map[string]string{"search": `{ min_concurrency = 0, max_concurrency = 4 }`}), "search.min_concurrency", `must be at least 1, got 0`},
		{"min_concurrency 9e18", bench(map[string]string{"search": `{ min_concurrency = 9e18, max_concurrency = 9e18 }`}), "search.min_concurrency", `must be at most 100000`},
		{"max_concurrency 9e18", bench(map[string]string{"search": `{ min_concurrency = 1, max_concurrency = 9e18 }`}), "search.max_concurrency", `must be at most 100000`},
		{"max_concurrency above bound", bench(map[string]string{"search": `{ max_concurrency = 100001 }`}), "search.max_concurrency", `must be at most 100000, got 100001`},
		{"min above max", bench(map[string]string{"search": `{ min_concurrency = 8, max_concurrency = 4 }`}), "search.min_concurrency", `(8) is greater than search.max_concurrency (4)`},
		{"concurrency_levels above bound", bench(map[string]string{"search": `{ concurrency_levels = [1, 200000] }`}), "search.concurrency_levels[1]", `must be at most 100000, got 200000`},
		{"max_concurrency fractional", bench(map[string]string{"search": `{ max_concurrency = 2.5 }`}), "search.max_concurrency", `must be a whole number, got 2.5`},
		{"measured_requests zero", bench(map[string]string{"trial": `{ measured_requests = 0 }`}), "trial.measured_requests", `must be at least 1, got 0`},
		{"measured_requests 1e11", bench(map[string]string{"trial": `{ measured_requests = 1e11 }`}), "trial.measured_requests", `must be at most 100000`},
		{"warmup_requests negative", bench(map[string]string{"trial": `{ warmup_requests = -1 }`}), "trial.warmup_requests", `must be at least 0, got -1`},
		{"warmup_requests 1e12", bench(map[string]string{"trial": `{ warmup_requests = 1e12 }`}), "trial.warmup_requests", `must be at most 100000`},
		{"confirmation_trials zero", bench(map[string]string{"trial": `{ confirmation_trials = 0 }`}), "trial.confirmation_trials", `must be at least 1, got 0`},
		{"confirmation_trials 1e9", bench(map[string]string{"trial": `{ confirmation_trials = 1e9 }`}), "trial.confirmation_trials", `must be at most 100, got 1000000000`},
		{"cache_flush unknown", bench(map[string]string{"trial": `{ cache_flush = "always" }`}), "trial.cache_flush", `must be one of auto, none, sglang, vllm, llamacpp, got "always"`},
		{"stall_timeout zero", bench(map[string]string{"trial": `{ stall_timeout = "0s" }`}), "trial.stall_timeout", `must be a positive Go duration such as "90s" or "30m", got "0s"`},
		{"request_timeout negative", bench(map[string]string{"trial": `{ request_timeout = "-5m" }`}), "trial.request_timeout", `must be a positive Go duration`},
		// The attribute's type reports a value that does not parse, and only it
		// (TestDurationIsOneError); its message quotes the value.
		{"stall_timeout words", bench(map[string]string{"trial": `{ stall_timeout = "five minutes" }`}), `Invalid duration`, `trial.stall_timeout must be a Go duration: a number and a unit`},
		{"benchmark timeouts.create words", bench(map[string]string{"timeouts": `{ create = "an hour" }`}), "timeouts.create", `must be a positive Go duration such as "90s" or "30m", got "an hour"`},
		{"concurrency_levels repeated", bench(map[string]string{"search": `{ concurrency_levels = [2, 4, 2] }`}), "search.concurrency_levels[2]", `2 is already search.concurrency_levels[0]; list each level once`},
		{"concurrency_levels 5000 repeats", bench(map[string]string{"search": `{ concurrency_levels = [` + strings.Repeat("2, ", 4999) + `2] }`}), "4999 of the 5000 levels in search.concurrency_levels",
			`repeat an earlier one. The first: search.concurrency_levels[1]: 2 is already search.concurrency_levels[0]`},
		{"concurrency_levels empty", bench(map[string]string{"search": `{ concurrency_levels = [] }`}), "search.concurrency_levels", `must list at least one level`},
		{"concurrency_levels with bounds", bench(map[string]string{"search": `{ concurrency_levels = [2], max_concurrency = 8 }`}), "search.concurrency_levels", `would be ignored; remove them`},

		// An explicit value is honoured or refused, never replaced or ignored.
		{"rate tolerance zero", bench(map[string]string{"search": `{ rate = { min = 1, max = 4, tolerance = 0 } }`}), "search.rate.tolerance",
			`must be in (0, 1), the relative step between neighbouring rates tried, got 0; remove it for the default 0.05`},
		{"burstiness with poisson", bench(map[string]string{"search": `{ rate = { min = 1, max = 4 } }`, "arrival": `{ pattern = "poisson", burstiness = 2 }`}), "arrival.burstiness",
			`(2) is the shape of gamma gaps and would be ignored with pattern = "poisson": set pattern = "gamma" to use it, or remove burstiness`},
		{"max_concurrency beside search.rate", bench(map[string]string{"search": `{ rate = { min = 1, max = 4 }, max_concurrency = 8 }`}), "search.max_concurrency",
			`bounds a concurrency search, and search.rate searches the request rate instead, so it would be ignored: remove search.max_concurrency, or remove search.rate to search concurrency`},
		{"min_concurrency beside search.rate", bench(map[string]string{"search": `{ rate = { min = 1, max = 4 }, min_concurrency = 2 }`}), "search.min_concurrency",
			`bounds a concurrency search, and search.rate searches the request rate instead`},
		{"rate.min 1e-300", bench(map[string]string{"search": `{ rate = { min = 1e-300, max = 4 } }`}), "search.rate.min",
			`must be at least 0.001 requests/s (one request every 1000 s), got 1e-300`},
		{"shared prefix as long as the prompt", bench(map[string]string{"workloads": `[{ label = "a", input_tokens = 8, output_tokens = 8, shared_prefix_tokens = 8 }]`}), "workloads[0].shared_prefix_tokens", `counts within input_tokens (8) and must be below it`},
		{"record_chunk_times without records", bench(map[string]string{"record_chunk_times": `true`}), "record_chunk_times", `set records_directory or remove record_chunk_times`},
		{"progress_file empty", bench(map[string]string{"progress_file": `""`}), "progress_file", `is empty; give a file path`},
		{"progress_file directory", bench(map[string]string{"progress_file": q(dir)}), "progress_file", `is a directory; give a file path inside it`},
		{"records_directory is a file", bench(map[string]string{"records_directory": q(file)}), "records_directory", `is an existing file, not a directory`},
		{"records_directory below a file", bench(map[string]string{"records_directory": q(file + "/records")}), "records_directory", `cannot be created: ` + q(file) + ` is a file, not a directory`},
		{"benchmark timeouts.create zero", bench(map[string]string{"timeouts": `{ create = "0s" }`}), "timeouts.create", `must be a positive Go duration`},
		{"benchmark timeouts.create negative", bench(map[string]string{"timeouts": `{ create = "-1h" }`}), "timeouts.create", `must be a positive Go duration`},
		{"trigger control character", bench(map[string]string{"triggers": `{ server = "a\u0000b" }`}), `triggers["server"]`, `contains the control character U+0000`},

		// Issue 39: the newest surfaces at plan (TestPlanRefusesBadNewSurfaces holds every row
		// of them; these go through the real CLI).
		{"runner docker container empty", bench(map[string]string{"runner": `{ docker = { container = "" } }`}), "runner.docker.container", `is empty; give the server container's id or name`},
		{"runner docker image malformed digest", bench(map[string]string{"runner": `{ docker = { container = "qwen", image = "llmserve-runner@sha256:xyz" } }`}), "runner.docker.image",
			`"llmserve-runner@sha256:xyz" is not an image reference`},
		{"runner kubernetes namespace not a DNS label", bench(map[string]string{"runner": `{ kubernetes = { namespace = "LLM_Serving", image = "ghcr.io/llmserve/llmserve-runner:1.0.0" } }`}),
			"runner.kubernetes.namespace", `"LLM_Serving" is not a namespace name`},
		{"runner kubernetes image with a space", bench(map[string]string{"runner": `{ kubernetes = { namespace = "llm", image = "llmserve runner" } }`}), "runner.kubernetes.image",
			`contains spaces or control characters`},
		{"unpublished bind_address", srv(map[string]string{"publish": `false`, "bind_address": `"0.0.0.0"`}), "bind_address", `would be ignored with publish = false: nothing is published`},
		{"devices listed twice", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "accelerator": `"vulkan"`, "devices": `["/dev/dri", "/dev/dri"]`}), "devices[1]",
			`is already listed as devices[0]; list each device once`},
		{"devices host:container:rwm", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "accelerator": `"vulkan"`, "devices": `["/dev/dri:/dev/dri:rwm"]`}), "devices[0]",
			`is Docker's host:container:permissions form, which devices does not take: give the host path alone ("/dev/dri")`},
		{"devices null", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "accelerator": `"vulkan"`, "devices": `[null]`}), "devices[0]",
			`is null: every element of this list must be a string`},
		{"vulkan extra_args -sm", srv(map[string]string{"engine": `"llamacpp"`, "model": `"/m/x.gguf"`, "accelerator": `"vulkan"`, "extra_args": `["-sm", "row"]`}), "extra_args[0]",
			`remove -sm from extra_args`},
		{"progress_log is progress_file", bench(map[string]string{"progress_file": q(filepath.Join(dir, "run.jsonl")), "progress_log": q(filepath.Join(dir, "run.jsonl"))}), "progress_log",
			`names the same file as progress_file`},
		{"conversation with the llama.cpp flush", bench(map[string]string{
			"workloads": `[{ label = "chat", input_tokens = 8, output_tokens = 8, conversation = { turns = 4, think_time = { mean = "2s" } } }]`,
			"trial":     `{ cache_flush = "llamacpp" }`}), "trial.cache_flush", `Set trial.cache_flush = "none"`},
		{"constant think time past timeouts.create", bench(map[string]string{
			"workloads": `[{ label = "chat", input_tokens = 8, output_tokens = 8, conversation = { turns = 4, think_time = { distribution = "constant", mean = "1000h" } } }]`}),
			"workloads[0].conversation.think_time.mean", `= 4000h0m0s on its own pauses, however fast the server answers, which is longer than timeouts.create (24h0m0s)`},

		// llmserve_capacity_report: which document to read.
		{"report path empty", `data "llmserve_capacity_report" "r" { path = "" }`, "path", `is empty; leave it out or give a results document`},
		{"report content empty", `data "llmserve_capacity_report" "r" { content = "" }`, "content", `is empty; leave it out or give a results document`},
		{"report neither source", `data "llmserve_capacity_report" "r" {}`, "content", `Set path to read a results document from a file`},
		{"report both sources", `data "llmserve_capacity_report" "r" {
  path    = "results.json"
  content = "{}"
}`, "content", `path and content are both set; set only one`},
		{"report path is a directory", `data "llmserve_capacity_report" "r" { path = ` + q(dir) + ` }`, "path", `is a directory, not a regular file`},
		// Issue 33: messages name their cause. The price overflowed into the computed
		// cost_per_million_output_tokens, and max_in_flight = 0 read "got -1".
		{"cost_per_hour overflows", `data "llmserve_capacity_report" "r" {
  path          = ` + q(referencePath(t)) + `
  cost_per_hour = 1.7e308
}`, "cost_per_hour", `cost_per_hour = 1.7e+308 overflows: workload "2K / 512"'s cost_per_million_output_tokens`},
		{"max_in_flight zero", bench(map[string]string{"search": `{ rate = { min = 1, max = 4 } }`, "arrival": `{ pattern = "poisson", max_in_flight = 0 }`}), "arrival.max_in_flight",
			`must be at least 1 when set, got 0`},
		{"report path missing", `data "llmserve_capacity_report" "r" { path = ` + q(dir+"/missing.json") + ` }`, "missing.json", `no such file or directory`},

		// Provider: the Docker Engine connection.
		{"docker_host without scheme", prov(`docker_host = "gpu-host.example.com:2376"`), "docker_host", `is not a URL`},
		{"docker_host http", prov(`docker_host = "http://gpu-host.example.com:2376"`), "docker_host", `scheme "http" is not supported`},
		{"docker_host tcp without port", prov(`docker_host = "tcp://gpu-host.example.com"`), "docker_host", `needs a host and a port`},
		{"docker_host tcp port range", prov(`docker_host = "tcp://gpu-host.example.com:99999"`), "docker_host", `must be between 1 and 65535`},
		{"docker_host tcp path", prov(`docker_host = "tcp://gpu-host.example.com:2376/v1.41"`), "docker_host", `has a path`},
		{"docker_host unix relative", prov(`docker_host = "unix://var/run/docker.sock"`), "docker_host", `needs an absolute path after unix://`},
		{"docker_host ssh password", prov(`docker_host = "ssh://deploy:hunter2@gpu-host.example.com"`), "docker_host", `carries a password`},
		{"docker_host ssh without host", prov(`docker_host = "ssh://deploy@"`), "docker_host", `needs a host`},
		{"docker_host ssh path", prov(`docker_host = "ssh://deploy@gpu-host.example.com/var/run/docker.sock"`), "docker_host", `set the engine's socket on the ssh host with ssh_socket_path`},
		{"docker_host query", prov(`docker_host = "tcp://gpu-host.example.com:2376?tls=1"`), "docker_host", `has a query or fragment`},
		{"TLS with unix host", prov(`docker_host = "unix:///var/run/docker.sock"
  ca_pem = ` + heredoc(string(tlsm.CAPEM))), "ca_pem", `TLS material only applies to a tcp:// engine`},
		{"cert_path with ssh host", prov(`docker_host = "ssh://deploy@gpu-host.example.com"
  cert_path = "/etc/docker/certs"
  ssh_private_key = ` + heredoc(plainKey)), "cert_path", `TLS material only applies to a tcp:// engine`},
		{"ssh key with tcp host", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  ssh_private_key = ` + heredoc(plainKey)), "ssh_private_key", `only applies to an ssh:// engine`},
		{"ca_pem not PEM", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  ca_pem = "not a certificate"`), "ca_pem", `holds no PEM certificate`},
		{"ca_pem holds a key", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  ca_pem = ` + heredoc(string(tlsm.ClientKeyPEM))), "ca_pem", `block where a certificate belongs`},
		{"cert_pem without key", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  ca_pem = ` + heredoc(string(tlsm.CAPEM)) + `
  cert_pem = ` + heredoc(string(tlsm.ClientCertPEM))), "key_pem", `cert_pem is set without its private key`},
		{"key_pem of another certificate", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  ca_pem = ` + heredoc(string(tlsm.CAPEM)) + `
  cert_pem = ` + heredoc(string(tlsm.ClientCertPEM)) + `
  key_pem = ` + heredoc(string(other.ClientKeyPEM))), "key_pem", `is not the private key of cert_pem`},
		{"client cert without CA", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  cert_pem = ` + heredoc(string(tlsm.ClientCertPEM)) + `
  key_pem = ` + heredoc(string(tlsm.ClientKeyPEM))), "ca_pem", `needs the CA certificate`},
		{"cert_path missing files", prov(`docker_host = "tcp://gpu-host.example.com:2376"
  cert_path = ` + q(dir)), "cert_path", `must hold ca.pem, cert.pem and key.pem`},
		{"ssh without key", prov(`docker_host = "ssh://deploy@gpu-host.example.com"`), "ssh_private_key", `needs the private key`},
		{"ssh key not a key", prov(`docker_host = "ssh://deploy@gpu-host.example.com"
  ssh_private_key = "hunter2"`), "ssh_private_key", `is not a private key in PEM or OpenSSH format`},
		{"ssh key with passphrase", prov(`docker_host = "ssh://deploy@gpu-host.example.com"
  ssh_private_key = ` + heredoc(encryptedKey)), "ssh_private_key", `protected by a passphrase`},
		{"ssh socket relative", prov(`docker_host = "ssh://deploy@gpu-host.example.com"
  ssh_private_key = ` + heredoc(plainKey) + `
  ssh_socket_path = "docker.sock"`), "ssh_socket_path", `must be an absolute path on the ssh host`},
	}
}

// TestAccBadConfigurations runs every bad configuration through the real Terraform CLI and
// checks that plan fails with a message naming the attribute and the problem.
func TestAccBadConfigurations(t *testing.T) {
	testAccPreCheck(t)
	// Plan never reaches an engine; a DOCKER_HOST of the caller must not change the cases.
	t.Setenv("DOCKER_HOST", "")
	cases := badConfigs(t)
	if len(cases) < 100 {
		t.Fatalf("only %d bad configurations; the issue asks for at least 100", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			pathRE, wantRE := words(tc.path), words(tc.want)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)(` + pathRE + `.*` + wantRE + `|` + wantRE + `.*` + pathRE + `)`),
				}},
			})
		})
	}
}

// A value unknown at plan (here the endpoint, built from another resource's id) is checked
// at apply by the same rule, before any request: credentials in it fail the apply with the
// plan-time message.
func TestAccBadConfigurations_unknownAtPlan(t *testing.T) {
	testAccPreCheck(t)
	srv := httptest.NewServer(newBoundaryEngine(t))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "llmserve_capacity_benchmark" "first" {
  endpoint  = "http://%[1]s"
  model     = "sim-qwen"
  api_key   = %[2]q
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ percentile = 95, threshold_ms = 150 }]
  search    = { min_concurrency = 1, max_concurrency = 1 }
  trial     = { warmup_requests = 1, measured_requests = 4, confirmation_trials = 1 }
}

resource "llmserve_capacity_benchmark" "second" {
  # Unknown until first exists: the plan cannot check it.
  endpoint  = "http://admin:hunter2@%[1]s${substr(llmserve_capacity_benchmark.first.id, 0, 0)}"
  model     = "sim-qwen"
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ percentile = 95, threshold_ms = 150 }]
  search    = { min_concurrency = 1, max_concurrency = 1 }
  trial     = { warmup_requests = 1, measured_requests = 4, confirmation_trials = 1 }
}`, host, benchAPIKey),
			// Terraform validates again once the value is known, before create; the message
			// masks the password.
			ExpectError: regexp.MustCompile(`(?s)Error running apply.*Invalid endpoint URL.*endpoint "http://REDACTED@.*` + words(`carries credentials, which would be stored in state and shown in plan output`)),
		}},
	})
}
