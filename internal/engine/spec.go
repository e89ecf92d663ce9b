package engine

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// Accelerator names the device family the engine computes on.
type Accelerator string

// The accelerators the provider knows how to map into a container.
const (
	CPU  Accelerator = "cpu"
	CUDA Accelerator = "cuda"
	XPU  Accelerator = "xpu"
	// Vulkan is any Vulkan device, through llama.cpp's Vulkan backend: Intel and AMD GPUs
	// (Mesa's ANV and RADV), and lavapipe, Mesa's Vulkan implementation on the CPU that CI
	// runs the GPU path on. SGLang and vLLM have no Vulkan backend.
	Vulkan Accelerator = "vulkan"
)

// Accelerators lists every accelerator, in documentation order.
var Accelerators = []Accelerator{CPU, CUDA, XPU, Vulkan}

// DefaultAccelerator is the accelerator of a server that names none: the CPU, which every
// engine this provider launches supports.
const DefaultAccelerator = CPU

// supportedAccelerators is which engine this provider can launch on which device family.
// llama.cpp on Intel GPUs (xpu) runs through ggml's Vulkan backend, as on any other Vulkan
// device (UsesVulkan): Debian ships that backend (libggml0-backend-vulkan) and Mesa's ANV
// driver, and no SYCL backend.
var supportedAccelerators = map[Name][]Accelerator{
	SGLang:   {CPU, CUDA, XPU},
	VLLM:     {CPU, CUDA, XPU},
	LlamaCpp: {CPU, CUDA, XPU, Vulkan},
}

// UsesVulkan says whether the spec computes through llama.cpp's Vulkan backend: llama.cpp on
// accelerator "vulkan", and on "xpu" (Intel GPUs), where Vulkan is the backend Debian's
// llama.cpp has (ggml 0.27.0, libggml0-backend-vulkan; no SYCL package).
func (s Spec) UsesVulkan() bool {
	return s.Engine == LlamaCpp && (s.Accelerator == Vulkan || s.Accelerator == XPU)
}

// VulkanVisibleDevicesEnv selects the Vulkan devices ggml may use: a comma-separated list of
// indices in the order the Vulkan loader enumerates them (ggml-vulkan.cpp, ggml_vk_instance_init).
// The devices it names are renumbered Vulkan0, Vulkan1, ... in that order. Without it ggml
// uses every GPU and skips CPU-type devices (lavapipe); naming a CPU-type device makes it usable.
const VulkanVisibleDevicesEnv = "GGML_VK_VISIBLE_DEVICES"

// VulkanDevices are the devices a Vulkan launch computes on, as llama-server --device names
// them: Vulkan0 .. Vulkan(n-1), one per tensor_parallel_size (the devices gpu_ids made
// visible, renumbered from 0).
func (s Spec) VulkanDevices() []string {
	n := max(s.TensorParallel, 1)
	devs := make([]string, n)
	for i := range devs {
		devs[i] = "Vulkan" + strconv.Itoa(i)
	}
	return devs
}

// Speculative is speculative decoding. Its fields follow SGLang's vocabulary; other engines
// translate them (vLLM's num_speculative_tokens is Steps, llama.cpp's --spec-draft-n-max, or
// --draft-max before the rename, is Steps).
type Speculative struct {
	Algorithm   string `json:"algorithm"`
	Steps       int    `json:"steps,omitempty"`
	TopK        int    `json:"topk,omitempty"`
	DraftTokens int    `json:"draft_tokens,omitempty"`
	DraftModel  string `json:"draft_model,omitempty"`
}

// Spec is everything that decides how the engine is launched. It carries no secrets: those
// travel in Secrets so a Spec can be stored (in a container label, in Terraform state).
type Spec struct {
	Engine             Name         `json:"engine"`
	Model              string       `json:"model"`
	Revision           string       `json:"revision,omitempty"`
	ServedModelName    string       `json:"served_model_name,omitempty"`
	TensorParallel     int          `json:"tensor_parallel_size"`
	ContextLength      int          `json:"context_length,omitempty"`
	MaxRunningRequests int          `json:"max_running_requests,omitempty"`
	MemFraction        float64      `json:"mem_fraction,omitempty"`
	Speculative        *Speculative `json:"speculative,omitempty"`
	Accelerator        Accelerator  `json:"accelerator"`
	Port               int          `json:"port"`
	// ListenAddress is the address the engine binds in its network namespace; empty binds
	// every interface. A backend that shares the host's network sets it to the address the
	// user chose, since no port publishing restricts it there.
	ListenAddress string `json:"listen_address,omitempty"`
	// ExtraArgs and Entrypoint record an empty list as [] and an unset one as null, so an
	// import restores exactly what was configured.
	ExtraArgs []string `json:"extra_args"`
	// Entrypoint replaces the engine's default program (DefaultEntrypoint) when an image
	// installs it elsewhere.
	Entrypoint []string `json:"entrypoint"`
	// EngineVersion is the engine release the image holds, where flags changed between
	// releases: llama.cpp's build ("b8846"). Empty: the current upstream flags.
	EngineVersion string `json:"engine_version,omitempty"`
}

// Secrets are handed to the engine at launch and never stored.
type Secrets struct {
	HubToken string
	APIKey   string
	// AdminAPIKey guards SGLang's admin endpoints (/flush_cache …) with --admin-api-key; the
	// other engines have no such key.
	AdminAPIKey string
}

// Validate reports every constraint the spec violates, so a plan shows all of them at once.
func (s Spec) Validate() []problem.Problem {
	var out []problem.Problem
	add := func(field, format string, args ...any) {
		out = append(out, problem.At(attrpath.Root(field), format, args...))
	}
	if !slices.Contains(Names, s.Engine) {
		add("engine", "unknown engine %q; use one of %s", s.Engine, joinQuoted(Names))
		return out
	}
	if strings.TrimSpace(s.Model) == "" {
		add("model", "must name the model (a Hugging Face repository id or a path inside the container)")
	}
	if s.TensorParallel < 1 {
		add("tensor_parallel_size", "must be at least 1, got %d", s.TensorParallel)
	}
	if s.Port < 1 || s.Port > 65535 {
		add("port", "must be between 1 and 65535, got %d", s.Port)
	}
	if s.ContextLength < 0 {
		add("context_length", "must be positive, got %d; omit it to use the model's own", s.ContextLength)
	}
	if s.MaxRunningRequests < 0 {
		add("max_running_requests", "must be positive, got %d; omit it for the engine default", s.MaxRunningRequests)
	}
	if s.MemFraction < 0 || s.MemFraction > 1 {
		add("mem_fraction", "must be in (0, 1], got %g", s.MemFraction)
	}
	if s.Accelerator != "" && !slices.Contains(supportedAccelerators[s.Engine], s.Accelerator) {
		add("accelerator", "engine %q does not run on %q here; use one of %s", s.Engine, s.Accelerator, joinQuoted(supportedAccelerators[s.Engine]))
	}
	switch s.Engine {
	case LlamaCpp:
		if s.TensorParallel > 1 && !s.UsesVulkan() {
			add("tensor_parallel_size", "llama.cpp splits a model across devices only on GPUs here (accelerator \"xpu\" or \"vulkan\": --split-mode layer over Vulkan0..N-1); on %q set 1, or use engine \"sglang\" or \"vllm\"", orCPU(s.Accelerator))
		}
		if s.UsesVulkan() {
			out = append(out, s.vulkanFlags()...)
		}
		if s.MemFraction != 0 {
			add("mem_fraction", "llama.cpp sizes its KV cache from context_length, not a memory fraction; remove mem_fraction")
		}
		if s.Revision != "" {
			add("revision", "llama.cpp loads a GGUF file, which has no revision; remove revision or pin the file itself")
		}
		if !strings.HasSuffix(s.Model, ".gguf") || !path.IsAbs(s.Model) {
			add("model", "llama.cpp needs the absolute path of a .gguf file inside the container (mount it with model_host_path), got %q", s.Model)
		}
		if s.EngineVersion != "" && !llamaCppBuildRE.MatchString(s.EngineVersion) {
			add("engine_version", "llama.cpp releases are build numbers such as \"b8846\" (what llama-server --version and /props build_info show), got %q, which would silently select the newest flags; give the image's build, or remove engine_version for the current upstream flags", s.EngineVersion)
		}
	}
	out = append(out, s.validateXPUSpeculative()...)
	out = append(out, s.validateSpeculative()...)
	return out
}

// flagValue finds a flag in argv, as "--flag value" or "--flag=value"; the last one wins, as
// with argparse.
func flagValue(args []string, name string) (string, bool) {
	v, ok := "", false
	for i, a := range args {
		switch {
		case a == name && i+1 < len(args):
			v, ok = args[i+1], true
		case strings.HasPrefix(a, name+"="):
			v, ok = strings.TrimPrefix(a, name+"="), true
		}
	}
	return v, ok
}

// vulkanFlags refuses, in extra_args, the llama.cpp flags a Vulkan launch sets itself, in
// their long and short forms (llama.cpp common/arg.cpp): a second value would override the
// provider's, or fail the server at start.
func (s Spec) vulkanFlags() []problem.Problem {
	var out []problem.Problem
	extra := attrpath.Root("extra_args")
	if i, f, ok := flagAt(s.ExtraArgs, "--split-mode", "-sm"); ok {
		out = append(out, problem.At(extra.Index(i), "the provider sets --split-mode layer for tensor_parallel_size > 1; ggml's row split needs a split buffer type, which only the CUDA and SYCL backends have, not Vulkan: remove %s from extra_args", f))
	}
	for _, names := range [][]string{{"--device", "-dev"}, {"--n-gpu-layers", "-ngl", "--gpu-layers"}} {
		if i, f, ok := flagAt(s.ExtraArgs, names...); ok {
			out = append(out, problem.At(extra.Index(i), "%s is set by the provider on a Vulkan launch (every layer on the devices gpu_ids and tensor_parallel_size select); remove it from extra_args", f))
		}
	}
	return out
}

// flagAt finds the first of names in args, alone or as name=value, whether a value follows
// it or not: its index and the name as written.
func flagAt(args []string, names ...string) (int, string, bool) {
	for i, a := range args {
		for _, n := range names {
			if a == n || strings.HasPrefix(a, n+"=") {
				return i, n, true
			}
		}
	}
	return 0, "", false
}

func hasFlag(args []string, name string) bool {
	_, ok := flagValue(args, name)
	return ok
}

func (s Spec) validateSpeculative() []problem.Problem {
	sp := s.Speculative
	if sp == nil {
		return nil
	}
	var out []problem.Problem
	add := func(field, format string, args ...any) {
		out = append(out, problem.At(attrpath.Root("speculative").At(field), format, args...))
	}
	if sp.Steps < 1 {
		add("steps", "must be at least 1, got %d", sp.Steps)
	}
	switch s.Engine {
	case SGLang:
		if strings.EqualFold(sp.Algorithm, "MTP") {
			// intel/skills sglang-xpu-run references/spec-decode-and-multimodal.md @1bd1227
			// (lmsysorg/sglang:v0.5.20-xpu): "Unknown speculative algorithm name: MTP".
			add("algorithm", "SGLang has no algorithm \"MTP\" (it fails at start: \"Unknown speculative algorithm name: MTP\"); use \"NEXTN\", SGLang's name for drafting with the model's own MTP layers")
		} else if !slices.Contains(sglangAlgorithms, strings.ToUpper(sp.Algorithm)) {
			add("algorithm", "SGLang does not know %q; use one of %s", sp.Algorithm, joinQuoted(sglangAlgorithms))
		}
		if sp.TopK < 1 {
			add("topk", "must be at least 1 for SGLang, got %d", sp.TopK)
		}
		// With top-k 1 the draft is a single chain: the verifier checks the root plus one token
		// per step. SGLang does not refuse another draft token count: it rewrites it to
		// steps + 1 with a warning in its log (server_args.py _handle_speculative_decoding,
		// 0.5.x and 2026), so the server would run with a value other than the one in the
		// configuration and the state. Refused here so what is configured is what runs.
		if sp.TopK == 1 && sp.Steps >= 1 && sp.DraftTokens != sp.Steps+1 {
			add("draft_tokens", "with topk = 1 SGLang needs draft_tokens = steps + 1 = %d, got %d", sp.Steps+1, sp.DraftTokens)
		}
		if sp.TopK > 1 && sp.DraftTokens < sp.Steps+1 {
			add("draft_tokens", "must be at least steps + 1 = %d, got %d", sp.Steps+1, sp.DraftTokens)
		}
	case VLLM:
		if !slices.Contains(vllmMethods, strings.ToLower(sp.Algorithm)) {
			add("algorithm", "vLLM does not know %q; use one of %s", sp.Algorithm, joinQuoted(vllmMethods))
		}
		if sp.TopK > 1 {
			add("topk", "vLLM drafts a single chain; remove topk or set 1")
		}
		if sp.DraftTokens != 0 && sp.DraftTokens != sp.Steps+1 {
			add("draft_tokens", "vLLM verifies steps + 1 = %d tokens; remove draft_tokens or set %d", sp.Steps+1, sp.Steps+1)
		}
		// vLLM's SpeculativeConfig.__post_init__ (vllm/config/speculative.py) raises
		// "num_speculative_tokens was provided but without speculative model" for every
		// method but mtp, ngram and suffix when no draft model is given: the server dies at
		// start-up, after pulling the image. Only mtp (the model's own MTP layers) and ngram
		// (prompt lookup) need none here.
		if m := strings.ToLower(sp.Algorithm); sp.DraftModel == "" && slices.Contains(vllmMethods, m) && m != "mtp" && m != "ngram" {
			add("draft_model", "vLLM method %q needs a draft model (vLLM refuses to start without one: \"num_speculative_tokens was provided but without speculative model\"); "+
				"set draft_model to the %s head's repository id or path, or use algorithm \"mtp\" for a model with its own MTP layers, or \"ngram\"", m, m)
		}
	case LlamaCpp:
		if strings.ToLower(sp.Algorithm) != "draft" {
			add("algorithm", "llama.cpp only does draft-model speculation; set \"draft\"")
		}
		if sp.DraftModel == "" {
			add("draft_model", "llama.cpp needs a draft model: the path of a small .gguf inside the container")
		}
		if sp.TopK > 1 {
			add("topk", "llama.cpp drafts a single chain; remove topk or set 1")
		}
	}
	return out
}

var (
	sglangAlgorithms = []string{"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"}
	vllmMethods      = []string{"eagle", "eagle3", "mtp", "ngram", "draft_model"}
)

// Command is the engine's full argv: entrypoint then arguments, in a fixed order so the same
// Spec always yields the same command (state never diffs on flag order). Secrets are not in
// it; see SecretArgs.
func (s Spec) Command() []string {
	cmd := slices.Clone(s.Entrypoint)
	if len(cmd) == 0 {
		cmd = DefaultEntrypoint(s.Engine)
	}
	return append(cmd, s.Args()...)
}

// Args is the argv after the entrypoint.
func (s Spec) Args() []string {
	var a []string
	flag := func(name string, v string) {
		if v != "" {
			a = append(a, name, v)
		}
	}
	num := func(name string, v int) {
		if v != 0 {
			a = append(a, name, strconv.Itoa(v))
		}
	}
	switch s.Engine {
	case SGLang:
		flag("--model-path", s.Model)
		flag("--revision", s.Revision)
		flag("--served-model-name", s.ServedModelName)
		num("--tp", s.TensorParallel)
		num("--context-length", s.ContextLength)
		num("--max-running-requests", s.MaxRunningRequests)
		flag("--mem-fraction-static", formatFloat(s.MemFraction))
		if sp := s.Speculative; sp != nil {
			flag("--speculative-algorithm", strings.ToUpper(sp.Algorithm))
			flag("--speculative-draft-model-path", sp.DraftModel)
			num("--speculative-num-steps", sp.Steps)
			num("--speculative-eagle-topk", sp.TopK)
			num("--speculative-num-draft-tokens", sp.DraftTokens)
		}
		flag("--device", string(s.Accelerator))
		a = append(a, s.xpuSpeculativeArgs()...)
		// Prometheus metrics (idle signal, the server-side view of each trial) and
		// usage.prompt_tokens_details.cached_tokens, which SGLang fills only with
		// --enable-cache-report (server_args.py): the proof that a trial's cache was cold.
		a = append(a, "--enable-metrics", "--enable-cache-report")
	case VLLM:
		flag("--model", s.Model)
		flag("--revision", s.Revision)
		flag("--served-model-name", s.ServedModelName)
		num("--tensor-parallel-size", s.TensorParallel)
		num("--max-model-len", s.ContextLength)
		num("--max-num-seqs", s.MaxRunningRequests)
		flag("--gpu-memory-utilization", formatFloat(s.MemFraction))
		if sp := s.Speculative; sp != nil {
			flag("--speculative-config", vllmSpeculativeConfig(sp))
		}
		// usage.prompt_tokens_details.cached_tokens is filled only with this flag (the
		// serving classes default it off, entrypoints/openai/serving_completion.py).
		a = append(a, "--enable-prompt-tokens-details")
	case LlamaCpp:
		flag("--model", s.Model)
		flag("--alias", s.ServedModelName)
		num("--ctx-size", s.ContextLength)
		num("--parallel", s.MaxRunningRequests)
		if llamaCppCacheRAM(s) {
			num("--cache-ram", LlamaCppCacheRAMMiB)
		}
		if s.Accelerator == CUDA || s.UsesVulkan() {
			// Offload every layer; llama.cpp clamps the count to the model's layers.
			a = append(a, "--n-gpu-layers", "999")
		}
		if s.UsesVulkan() {
			// Named, not left to llama.cpp's default: a CPU-type device (lavapipe) is used
			// only when named, and the log then says which device holds the layers.
			a = append(a, "--device", strings.Join(s.VulkanDevices(), ","))
			if s.TensorParallel > 1 {
				// Whole layers per device (common/arg.cpp --split-mode; "row" needs a split
				// buffer type, which ggml-vulkan does not provide).
				a = append(a, "--split-mode", "layer")
			}
		}
		if sp := s.Speculative; sp != nil {
			// -md/--model-draft is accepted by every build (an alias of --spec-draft-model in
			// current ones); the draft length flag was renamed (see llamaCppLegacyDraftFlags).
			flag("--model-draft", sp.DraftModel)
			if llamaCppLegacyDraftFlags(s.EngineVersion) {
				num("--draft-max", sp.Steps)
			} else {
				a = append(a, "--spec-type", "draft-simple")
				num("--spec-draft-n-max", sp.Steps)
			}
		}
		// Prometheus metrics at /metrics: the benchmark reads slot and queue figures from it.
		a = append(a, "--metrics")
	}
	// By default the engine binds every interface inside the container, and what is reachable
	// from outside is decided by the backend's port publishing. Where nothing is published
	// (host networking) the engine binds ListenAddress itself.
	listen := s.ListenAddress
	if listen == "" {
		listen = "0.0.0.0"
	}
	a = append(a, "--host", listen, "--port", strconv.Itoa(s.Port))
	return append(a, s.ExtraArgs...)
}

// SecretEnv is the environment that carries secrets into the container: the Hugging Face token
// under both names huggingface_hub reads, and the API key where the engine reads it from the
// environment (so it stays out of argv).
func (s Spec) SecretEnv(sec Secrets) map[string]string {
	env := map[string]string{}
	if sec.HubToken != "" {
		env["HF_TOKEN"] = sec.HubToken
		env["HUGGING_FACE_HUB_TOKEN"] = sec.HubToken
	}
	if sec.APIKey != "" {
		switch s.Engine {
		case VLLM:
			env["VLLM_API_KEY"] = sec.APIKey
		case LlamaCpp:
			env["LLAMA_API_KEY"] = sec.APIKey
		}
	}
	return env
}

// APIKeyFile is where llama.cpp finds its API key inside the container (--api-key-file).
const APIKeyFile = "/.llmserve/api-key" //nolint:gosec // G101: a path, not a credential

// SecretFiles is how a backend that can write files into the container before it starts
// hands over secrets an engine also reads from a file: the files (by absolute path), the
// arguments that point the engine at them, and the SecretEnv names they replace. llama.cpp
// reads its key with --api-key-file, so neither docker inspect (environment, command) nor
// the process list shows it. A backend that cannot write files uses SecretEnv alone.
func (s Spec) SecretFiles(sec Secrets) (files map[string][]byte, args, replacesEnv []string) {
	if sec.APIKey != "" && s.Engine == LlamaCpp {
		return map[string][]byte{APIKeyFile: []byte(sec.APIKey + "\n")}, []string{"--api-key-file", APIKeyFile}, []string{"LLAMA_API_KEY"}
	}
	return nil, nil, nil
}

// SecretArgs are arguments appended after Args for secrets an engine only takes as a flag
// (SGLang's --api-key and --admin-api-key; SGLang has no file or environment alternative,
// so docker inspect shows them). They are kept out of Command so the stored command holds
// no secret.
func (s Spec) SecretArgs(sec Secrets) []string {
	if s.Engine != SGLang {
		return nil
	}
	var a []string
	if sec.APIKey != "" {
		a = append(a, "--api-key", sec.APIKey)
	}
	if sec.AdminAPIKey != "" {
		a = append(a, "--admin-api-key", sec.AdminAPIKey)
	}
	return a
}

// Env is the environment the engine needs to serve what the benchmark uses. vLLM registers
// /reset_prefix_cache (and, in older releases, /server_info) only in development mode
// (vllm/entrypoints/serve/cache/api_router.py; before, under envs.VLLM_SERVER_DEV_MODE in
// api_server.py), so cache_flush = "auto" needs it.
func (s Spec) Env() map[string]string {
	if s.Engine == VLLM {
		return map[string]string{"VLLM_SERVER_DEV_MODE": "1"}
	}
	return nil
}

// LaunchAPIKey finds the API key a running engine was started with, in its environment or
// argv, the way SecretEnv and SecretArgs put it there; "" when it has none. The provider uses
// it, in memory only, to read an imported server's self-description.
func LaunchAPIKey(e Name, env map[string]string, args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--api-key" {
			return args[i+1]
		}
	}
	switch e {
	case VLLM:
		return env["VLLM_API_KEY"]
	case LlamaCpp:
		return env["LLAMA_API_KEY"]
	}
	return ""
}

// RequestModel is the model name a client sends in a completion request.
func (s Spec) RequestModel() string {
	if s.ServedModelName != "" {
		return s.ServedModelName
	}
	return s.Model
}

func vllmSpeculativeConfig(sp *Speculative) string {
	cfg := struct {
		Method string `json:"method"`
		Model  string `json:"model,omitempty"`
		Tokens int    `json:"num_speculative_tokens"`
	}{Method: strings.ToLower(sp.Algorithm), Model: sp.DraftModel, Tokens: sp.Steps}
	b, _ := json.Marshal(cfg) // a struct of strings and ints always marshals
	return string(b)
}

func orCPU(a Accelerator) Accelerator {
	if a == "" {
		return CPU
	}
	return a
}

func formatFloat(f float64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// joinQuoted lists values for a message: "a", "b", "c".
func joinQuoted[T ~string](vs []T) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(string(v))
	}
	return strings.Join(q, ", ")
}

// llamaCppSpecRenameBuild is the first llama.cpp build known to name its speculative flags
// --spec-draft-n-max/-n-min and to select the draft-model method with --spec-type
// draft-simple; tools/server/README.md @00dc8057 says --draft-max/--draft-min "have been
// removed". Builds up to b8846 still print only the old names. Between the two the exact
// build is not pinned down: such an image can set engine_version past the rename or pass
// the flags in extra_args.
const llamaCppSpecRenameBuild = 10749

// LlamaCppCacheRAMMiB is the host RAM the provider lets llama-server keep prompts' KV state
// in. llama-server's own --cache-ram/-cram help reads "set the maximum cache size in MiB
// (default: 8192, 0 for decision models, -1 - no limit, 0 - disable)" (env
// LLAMA_ARG_CACHE_RAM; Debian's llama.cpp 0.7.0, build 11669; the cache came with
// ggml-org/llama.cpp PR #16391, "server : host-memory prompt caching", October 2025): each
// prompt a slot lets go of is copied to host memory, up to 8 GiB beside the weights and the
// KV cache, whatever the model's size. The quickstart's llama-server grew to 6.47 GiB of
// RSS for a 49 MB model that way. 512 MiB keeps a few prompts' state of a small or mid-sized
// model (a 4096-token prompt of an 8B model is about 512 MiB in f16 KV) and bounds the
// server's memory; the benchmark itself sends cache_prompt: false, so its figures do not
// depend on it. A --cache-ram (or -cram) in extra_args replaces it (0 turns the cache off,
// -1 lifts the limit).
const LlamaCppCacheRAMMiB = 512

// llamaCppCacheRAMBuild is the first build known to take --cache-ram: Debian's 0.7.0 (build
// 11669) prints it, and the PR that added it is from October 2025; the build it first shipped
// in is not pinned down, so an image that says it is older (engine_version) keeps
// llama-server's own default rather than fail on an unknown flag.
const llamaCppCacheRAMBuild = 11669

// llamaCppCacheRAM reports whether the launch passes --cache-ram LlamaCppCacheRAMMiB: for a
// build known to take it (or an unknown version, which gets the current flags) unless
// extra_args sets it.
func llamaCppCacheRAM(s Spec) bool {
	if hasFlag(s.ExtraArgs, "--cache-ram") || hasFlag(s.ExtraArgs, "-cram") {
		return false
	}
	n, ok := llamaCppBuild(s.EngineVersion)
	return !ok || n >= llamaCppCacheRAMBuild
}

// llamaCppBuild reads a llama.cpp build number ("b8846", "b8846-abc1234" or "8846"); false
// when the version is empty or not a build.
func llamaCppBuild(version string) (int, bool) {
	v := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(version)), "b")
	if i := strings.IndexAny(v, "-+ "); i >= 0 {
		v = v[:i]
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n > 0
}

// llamaCppBuildRE is a llama.cpp release as users write it: the build ("b8846" or "8846"),
// optionally with the commit as build_info reports it ("b8846-abc1234").
var llamaCppBuildRE = regexp.MustCompile(`^[bB]?[0-9]+(-[0-9a-f]{7,40})?$`)

// llamaCppLegacyDraftFlags reports whether a llama.cpp build ("b8846", "b8846-abc1234", or
// "8846") predates the speculative-flag rename. An unknown or unparsable version gets the
// current flags.
func llamaCppLegacyDraftFlags(version string) bool {
	n, ok := llamaCppBuild(version)
	return ok && n < llamaCppSpecRenameBuild
}
