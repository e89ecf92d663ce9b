package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// referenceSpec is the B70 deployment behind shared/reference/b70-qwen-sglang-aiperf.json.
func referenceSpec() Spec {
	return Spec{
		Engine:         SGLang,
		Model:          "ulkaa/Qwen3.8-27B-AWQ-INT4",
		Revision:       "2bf7f1646dc0875cff4404fdfef976cfb0ff2199",
		TensorParallel: 4,
		ContextLength:  262144,
		Speculative:    &Speculative{Algorithm: "EAGLE", Steps: 7, TopK: 1, DraftTokens: 8},
		Accelerator:    XPU,
		Port:           30000,
	}
}

// The seed deployment's full launch command: SGLang on 4 Intel XPUs with EAGLE (7 steps,
// top-k 1, 8 draft tokens). Speculative decoding on XPU runs as Intel's runbook measured it
// on lmsysorg/sglang:v0.5.20-xpu: intel_xpu attention, page size 64, decode graph capture off.
func TestCommandReferenceSGLang(t *testing.T) {
	t.Parallel()
	want := []string{
		"python3", "-m", "sglang.launch_server",
		"--model-path", "ulkaa/Qwen3.8-27B-AWQ-INT4",
		"--revision", "2bf7f1646dc0875cff4404fdfef976cfb0ff2199",
		"--tp", "4",
		"--context-length", "262144",
		"--speculative-algorithm", "EAGLE",
		"--speculative-num-steps", "7",
		"--speculative-eagle-topk", "1",
		"--speculative-num-draft-tokens", "8",
		"--device", "xpu",
		"--attention-backend", "intel_xpu", "--page-size", "64", "--disable-decode-cuda-graph",
		"--enable-metrics", "--enable-cache-report",
		"--host", "0.0.0.0",
		"--port", "30000",
	}
	if got := referenceSpec().Command(); !slices.Equal(got, want) {
		t.Errorf("Command()\n got %q\nwant %q", got, want)
	}
	if p := referenceSpec().Validate(); len(p) != 0 {
		t.Errorf("reference spec should be valid, got %v", p)
	}
}

func TestCommandOtherEngines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{
			name: "vllm eagle on cuda",
			spec: Spec{Engine: VLLM, Model: "Qwen/Qwen3-8B", ServedModelName: "qwen", TensorParallel: 2, ContextLength: 32768,
				MaxRunningRequests: 64, MemFraction: 0.9, Accelerator: CUDA, Port: 8000,
				Speculative: &Speculative{Algorithm: "eagle3", Steps: 3, DraftModel: "org/eagle3-draft"}},
			want: []string{"python3", "-m", "vllm.entrypoints.openai.api_server",
				"--model", "Qwen/Qwen3-8B", "--served-model-name", "qwen", "--tensor-parallel-size", "2",
				"--max-model-len", "32768", "--max-num-seqs", "64", "--gpu-memory-utilization", "0.9",
				"--speculative-config", `{"method":"eagle3","model":"org/eagle3-draft","num_speculative_tokens":3}`,
				"--enable-prompt-tokens-details", "--host", "0.0.0.0", "--port", "8000"},
		},
		{
			name: "llamacpp gguf on cpu with slots",
			spec: Spec{Engine: LlamaCpp, Model: "/models/tiny.gguf", ServedModelName: "tiny", TensorParallel: 1,
				ContextLength: 8192, MaxRunningRequests: 4, Accelerator: CPU, Port: 8080, ExtraArgs: []string{"--threads", "2"}},
			want: []string{"llama-server", "--model", "/models/tiny.gguf", "--alias", "tiny", "--ctx-size", "8192",
				"--parallel", "4", "--cache-ram", "512", "--metrics", "--host", "0.0.0.0", "--port", "8080", "--threads", "2"},
		},
		{
			// Intel Arc through Vulkan: every layer offloaded, split by whole layers over the
			// two devices gpu_ids made visible (renumbered Vulkan0, Vulkan1).
			name: "llamacpp on two intel gpus",
			spec: Spec{Engine: LlamaCpp, Model: "/models/m.gguf", TensorParallel: 2, Accelerator: XPU, Port: 8080},
			want: []string{"llama-server", "--model", "/models/m.gguf", "--cache-ram", "512", "--n-gpu-layers", "999", "--device", "Vulkan0,Vulkan1",
				"--split-mode", "layer", "--metrics", "--host", "0.0.0.0", "--port", "8080"},
		},
		{
			name: "llamacpp on one vulkan device",
			spec: Spec{Engine: LlamaCpp, Model: "/models/m.gguf", TensorParallel: 1, Accelerator: Vulkan, Port: 8080},
			want: []string{"llama-server", "--model", "/models/m.gguf", "--cache-ram", "512", "--n-gpu-layers", "999", "--device", "Vulkan0",
				"--metrics", "--host", "0.0.0.0", "--port", "8080"},
		},
		{
			name: "custom entrypoint",
			spec: Spec{Engine: SGLang, Model: "m", TensorParallel: 1, Accelerator: CPU, Port: 1, Entrypoint: []string{"/opt/venv/bin/python", "-m", "sglang.launch_server"}},
			want: []string{"/opt/venv/bin/python", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "1", "--device", "cpu", "--enable-metrics", "--enable-cache-report", "--host", "0.0.0.0", "--port", "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.Command(); !slices.Equal(got, tt.want) {
				t.Errorf("Command()\n got %q\nwant %q", got, tt.want)
			}
			if p := tt.spec.Validate(); len(p) != 0 {
				t.Errorf("spec should be valid, got %v", p)
			}
		})
	}
}

// The XPU speculative flags go only where they are needed, and what the user chose stays.
func TestXPUSpeculativeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(*Spec)
		want    []string // the flags the provider adds after --device
		problem string   // a problem on extra_args containing this; "" for none
	}{
		{"xpu speculative", func(*Spec) {}, []string{"--attention-backend", "intel_xpu", "--page-size", "64", "--disable-decode-cuda-graph"}, ""},
		{"xpu without speculative", func(s *Spec) { s.Speculative = nil }, nil, ""},
		{"cuda speculative", func(s *Spec) { s.Accelerator = CUDA }, nil, ""},
		{"user picked triton: no page size", func(s *Spec) { s.ExtraArgs = []string{"--attention-backend=triton"} }, []string{"--disable-decode-cuda-graph"}, ""},
		{"user picked intel_xpu", func(s *Spec) { s.ExtraArgs = []string{"--attention-backend", "intel_xpu"} }, []string{"--page-size", "64", "--disable-decode-cuda-graph"}, ""},
		{"user set page size 64 and graph off", func(s *Spec) { s.ExtraArgs = []string{"--page-size", "64", "--disable-decode-cuda-graph"} }, []string{"--attention-backend", "intel_xpu"}, ""},
		{"page size 128 on intel_xpu", func(s *Spec) { s.ExtraArgs = []string{"--page-size", "128"} }, []string{"--attention-backend", "intel_xpu", "--disable-decode-cuda-graph"}, "--page-size 64"},
		{"page size 128 on triton", func(s *Spec) { s.ExtraArgs = []string{"--attention-backend", "triton", "--page-size", "128"} }, []string{"--disable-decode-cuda-graph"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := referenceSpec()
			tt.mutate(&s)
			args := s.Args()
			i := slices.Index(args, "--device") + 2
			j := slices.Index(args, "--enable-metrics")
			if got := args[i:j]; !slices.Equal(got, tt.want) {
				t.Errorf("flags after --device %q, want %q (argv %q)", got, tt.want, args)
			}
			var problems []string
			for _, p := range s.Validate() {
				if p.Path.String() == "extra_args" {
					problems = append(problems, p.Error())
				}
			}
			switch {
			case tt.problem == "" && len(problems) > 0:
				t.Errorf("unexpected problems %q", problems)
			case tt.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0], tt.problem)):
				t.Errorf("problems %q, want one containing %q", problems, tt.problem)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*Spec)
		field  string
		detail string // substring of the message: it must say what to set
	}{
		{"sglang topk 1 needs steps+1 draft tokens", func(s *Spec) { s.Speculative.DraftTokens = 7 }, "speculative.draft_tokens", "draft_tokens = steps + 1 = 8"},
		{"tp zero", func(s *Spec) { s.TensorParallel = 0 }, "tensor_parallel_size", "at least 1"},
		{"port too high", func(s *Spec) { s.Port = 70000 }, "port", "between 1 and 65535"},
		{"port zero", func(s *Spec) { s.Port = 0 }, "port", "between 1 and 65535"},
		{"unknown sglang algorithm", func(s *Spec) { s.Speculative.Algorithm = "MEDUSA" }, "speculative.algorithm", `"EAGLE"`},
		{"mem fraction over one", func(s *Spec) { s.MemFraction = 1.5 }, "mem_fraction", "(0, 1]"},
		{"sglang on vulkan", func(s *Spec) { s.Accelerator = Vulkan }, "accelerator", `use one of "cpu", "cuda", "xpu"`},
		{"llamacpp tensor parallel on cpu", func(s *Spec) {
			*s = Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 2, Accelerator: CPU, Port: 8080}
		}, "tensor_parallel_size", `on "cpu" set 1`},
		{"llamacpp row split on vulkan", func(s *Spec) {
			*s = Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 2, Accelerator: Vulkan, Port: 8080, ExtraArgs: []string{"--split-mode", "row"}}
		}, "extra_args[0]", "remove --split-mode"},
		{"llamacpp short row split on vulkan", func(s *Spec) {
			*s = Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 2, Accelerator: Vulkan, Port: 8080, ExtraArgs: []string{"--verbose", "-sm", "row"}}
		}, "extra_args[1]", "remove -sm"},
		{"llamacpp device in extra_args on xpu", func(s *Spec) {
			*s = Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 1, Accelerator: XPU, Port: 8080, ExtraArgs: []string{"-dev", "Vulkan1"}}
		}, "extra_args[0]", "-dev is set by the provider"},
		{"sglang topk > 1 on xpu", func(s *Spec) { s.Speculative.TopK, s.Speculative.DraftTokens = 4, 16 }, "speculative.topk", "set topk = 1"},
		{"sglang MTP", func(s *Spec) { s.Speculative.Algorithm = "mtp" }, "speculative.algorithm", `use "NEXTN"`},
		{"llamacpp needs a gguf path", func(s *Spec) {
			*s = Spec{Engine: LlamaCpp, Model: "org/repo", TensorParallel: 1, Accelerator: CPU, Port: 8080}
		}, "model", ".gguf"},
		{"llamacpp speculation needs a draft model", func(s *Spec) {
			*s = Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 1, Accelerator: CPU, Port: 8080, Speculative: &Speculative{Algorithm: "draft", Steps: 4}}
		}, "speculative.draft_model", "draft model"},
		// vllm/config/speculative.py refuses eagle and eagle3 without a draft model at start-up.
		{"vllm eagle without draft model", func(s *Spec) {
			s.Engine, s.Accelerator, s.Speculative = VLLM, CUDA, &Speculative{Algorithm: "eagle", Steps: 3}
		}, "speculative.draft_model", `set draft_model to the eagle head's repository id or path, or use algorithm "mtp"`},
		{"vllm eagle3 without draft model", func(s *Spec) {
			s.Engine, s.Accelerator, s.Speculative = VLLM, CUDA, &Speculative{Algorithm: "EAGLE3", Steps: 3}
		}, "speculative.draft_model", "without speculative model"},
		{"vllm draft_model without draft model", func(s *Spec) {
			s.Engine, s.Accelerator, s.Speculative = VLLM, CUDA, &Speculative{Algorithm: "draft_model", Steps: 3}
		}, "speculative.draft_model", "needs a draft model"},
		{"vllm topk", func(s *Spec) {
			s.Engine, s.Speculative = VLLM, &Speculative{Algorithm: "mtp", Steps: 2, TopK: 4}
		}, "speculative.topk", "single chain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := referenceSpec()
			tt.mutate(&s)
			var found []string
			for _, p := range s.Validate() {
				found = append(found, p.Error())
				if p.Path.String() == tt.field && strings.Contains(p.Detail, tt.detail) {
					return
				}
			}
			t.Errorf("want a problem on %s mentioning %q, got %q", tt.field, tt.detail, found)
		})
	}
}

func TestLaunchAPIKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    Name
		env  map[string]string
		args []string
		want string
	}{
		{"sglang flag", SGLang, nil, []string{"--port", "1", "--api-key", "k1", "--admin-api-key", "adm"}, "k1"},
		{"vllm env", VLLM, map[string]string{"VLLM_API_KEY": "k2", "VLLM_SERVER_DEV_MODE": "1"}, nil, "k2"},
		{"llamacpp env", LlamaCpp, map[string]string{"LLAMA_API_KEY": "k3"}, nil, "k3"},
		{"llamacpp flag wins", LlamaCpp, map[string]string{"LLAMA_API_KEY": "k3"}, []string{"--api-key", "k4"}, "k4"},
		{"none", SGLang, map[string]string{"VLLM_API_KEY": "other engine"}, []string{"--api-key"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LaunchAPIKey(tt.e, tt.env, tt.args); got != tt.want {
				t.Errorf("LaunchAPIKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSecretsAndEngineEnv(t *testing.T) {
	t.Parallel()
	sec := Secrets{APIKey: "user", AdminAPIKey: "admin"}
	s := Spec{Engine: SGLang}
	if got := strings.Join(s.SecretArgs(sec), " "); got != "--api-key user --admin-api-key admin" {
		t.Errorf("SGLang secret args %q", got)
	}
	if got := (Spec{Engine: VLLM}).SecretArgs(sec); got != nil {
		t.Errorf("vLLM takes no admin key, got %q", got)
	}
	if got := (Spec{Engine: VLLM}).Env()["VLLM_SERVER_DEV_MODE"]; got != "1" {
		t.Errorf("vLLM not launched in dev mode (needed for /reset_prefix_cache): %q", got)
	}
	if got := (Spec{Engine: LlamaCpp}).Env(); got != nil {
		t.Errorf("llama.cpp env %v", got)
	}
}

// llama.cpp renamed its speculative flags: old builds take --draft-max, current ones (and an
// unknown version) --spec-type draft-simple --spec-draft-n-max.
func TestLlamaCppDraftFlagsByVersion(t *testing.T) {
	t.Parallel()
	base := Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 1, Accelerator: CPU, Port: 8080,
		Speculative: &Speculative{Algorithm: "draft", Steps: 4, DraftModel: "/d.gguf"}}
	oldFlags := []string{"--model-draft", "/d.gguf", "--draft-max", "4"}
	newFlags := []string{"--model-draft", "/d.gguf", "--spec-type", "draft-simple", "--spec-draft-n-max", "4"}
	tests := []struct {
		version string
		want    []string
	}{
		{"", newFlags},
		{"b8846", oldFlags},
		{"b8846-3b2c1a0", oldFlags},
		{"5000", oldFlags},
		{"b10749", newFlags},
		{"b12000", newFlags},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			s := base
			s.EngineVersion = tt.version
			args := strings.Join(s.Args(), " ")
			if !strings.Contains(args, strings.Join(tt.want, " ")) {
				t.Errorf("args %q lack %q", args, tt.want)
			}
			if p := s.Validate(); len(p) != 0 {
				t.Errorf("problems %v", p)
			}
		})
	}
}

// engine_version of llama.cpp is a build number: anything else ("latest", a distribution's
// package version) would silently select the newest flags, so it is refused.
func TestLlamaCppEngineVersionIsABuild(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		version string
		ok      bool
	}{
		{"b8846", true}, {"B8846", true}, {"8846", true}, {"b8846-3b2c1a0", true},
		{"latest", false}, {"1:0.7.0+dfsg-2", false}, {"b8846 ", false}, {"v0.5.4", false}, {"b", false}, {"b8846-xyz", false},
	} {
		t.Run(tt.version, func(t *testing.T) {
			s := Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 1, Accelerator: CPU, Port: 8080, EngineVersion: tt.version}
			p := s.Validate()
			if tt.ok {
				if len(p) != 0 {
					t.Errorf("problems %v", p)
				}
				return
			}
			want := fmt.Sprintf(`engine_version: llama.cpp releases are build numbers such as "b8846" (what llama-server --version and /props build_info show), got %q, which would silently select the newest flags; give the image's build, or remove engine_version for the current upstream flags`, tt.version)
			if len(p) != 1 || p[0].Error() != want {
				t.Errorf("problems %v, want one: %s", p, want)
			}
		})
	}
	// Other engines do not read engine_version.
	s := Spec{Engine: SGLang, Model: "org/m", TensorParallel: 1, Accelerator: CPU, Port: 30000, EngineVersion: "latest"}
	if p := s.Validate(); len(p) != 0 {
		t.Errorf("sglang problems %v", p)
	}
}

func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		engine Name
		sec    Secrets
		want   string
	}{
		{SGLang, Secrets{AdminAPIKey: "k"}, ""},
		{VLLM, Secrets{APIKey: "k"}, ""},
		{VLLM, Secrets{AdminAPIKey: "k"}, `admin_api_key_wo: engine "vllm" has no admin API key (only SGLang's --admin-api-key guards its admin endpoints), so this key would be dropped; remove admin_api_key_wo, and use api_key_wo for the key vllm checks`},
		{LlamaCpp, Secrets{AdminAPIKey: "k", APIKey: "a"}, `admin_api_key_wo: engine "llamacpp" has no admin API key`},
	} {
		p := Spec{Engine: tt.engine}.CheckSecrets(tt.sec)
		switch {
		case tt.want == "" && len(p) != 0:
			t.Errorf("%s: problems %v", tt.engine, p)
		case tt.want != "" && (len(p) != 1 || !strings.HasPrefix(p[0].Error(), tt.want)):
			t.Errorf("%s: problems %v, want one starting %s", tt.engine, p, tt.want)
		}
	}
}

// mtp (the model's own MTP layers) and ngram (prompt lookup) need no draft model in vLLM.
func TestVLLMSpeculativeWithoutDraftModel(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"mtp", "ngram", "MTP"} {
		s := Spec{Engine: VLLM, Model: "Qwen/Qwen3-8B", TensorParallel: 1, Accelerator: CUDA, Port: 8000, Speculative: &Speculative{Algorithm: m, Steps: 2}}
		if p := s.Validate(); len(p) != 0 {
			t.Errorf("method %q: problems %v", m, p)
		}
	}
}

// llama-server's host prompt cache defaults to 8 GiB; the launch bounds it to 512 MiB, unless
// extra_args sets it or the image is a build older than the flag.
func TestLlamaCppCacheRAM(t *testing.T) {
	t.Parallel()
	base := Spec{Engine: LlamaCpp, Model: "/m.gguf", TensorParallel: 1, Accelerator: CPU, Port: 8080}
	for _, tc := range []struct {
		name    string
		version string
		extra   []string
		want    string // the --cache-ram value in argv, "" when the launch passes none
	}{
		{"current upstream", "", nil, "512"},
		{"Debian's build", "b11669", nil, "512"},
		{"set in extra_args", "", []string{"--cache-ram", "0"}, "0"},
		{"short form in extra_args", "", []string{"-cram", "2048"}, ""},
		{"older build", "b8846", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.EngineVersion, s.ExtraArgs = tc.version, tc.extra
			args := s.Args()
			n := 0
			for _, a := range args {
				if a == "--cache-ram" {
					n++
				}
			}
			got, _ := flagValue(args, "--cache-ram")
			if got != tc.want || n > 1 {
				t.Errorf("args %q: --cache-ram %q (%d times), want %q once", args, got, n, tc.want)
			}
		})
	}
}
