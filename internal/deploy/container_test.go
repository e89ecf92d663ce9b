package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

// referenceSpec is the B70 deployment behind shared/reference/b70-qwen-sglang-aiperf.json.
func referenceSpec() engine.Spec {
	return engine.Spec{
		Engine:         engine.SGLang,
		Model:          "ulkaa/Qwen3.8-27B-AWQ-INT4",
		Revision:       "2bf7f1646dc0875cff4404fdfef976cfb0ff2199",
		TensorParallel: 4,
		ContextLength:  262144,
		Speculative:    &engine.Speculative{Algorithm: "EAGLE", Steps: 7, TopK: 1, DraftTokens: 8},
		Accelerator:    engine.XPU,
		Port:           30000,
	}
}

func TestSecretsStayOutOfCommandAndLabel(t *testing.T) {
	t.Parallel()
	sec := engine.Secrets{HubToken: "hf_secret", APIKey: "sk-secret"}
	for _, e := range engine.Names {
		s := referenceSpec()
		s.Engine = e
		c, err := NewContainer(s, Placement{Name: "x", Image: "img"}, sec)
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(s.Command(), " ") + c.Labels[SpecLabel]
		if strings.Contains(all, "secret") {
			t.Errorf("%s: secret in command or label: %s", e, all)
		}
		if c.Env["HF_TOKEN"] != "hf_secret" {
			t.Errorf("%s: hub token not delivered: %v", e, c.Env)
		}
		// The key reaches the engine one way or the other.
		inFile := slices.ContainsFunc(c.Files, func(f File) bool { return string(f.Content) == "sk-secret\n" })
		if !strings.Contains(strings.Join(c.Args, " "), "sk-secret") && !slices.ContainsFunc(mapValues(c.Env), func(v string) bool { return v == "sk-secret" }) && !inFile {
			t.Errorf("%s: api key not delivered", e)
		}
	}
}

// llama.cpp gets its key from a file, so neither its environment nor its command (what
// docker inspect shows) holds it.
func TestLlamaCppKeyInFile(t *testing.T) {
	t.Parallel()
	s := engine.Spec{Engine: engine.LlamaCpp, Model: "/m/tiny.gguf", TensorParallel: 1, Accelerator: engine.CPU, Port: 8080}
	c, err := NewContainer(s, Placement{Name: "x", Image: "img"}, engine.Secrets{APIKey: "sk-secret"})
	if err != nil {
		t.Fatal(err)
	}
	want := []File{{Path: "/.llmserve/api-key", Content: []byte("sk-secret\n"), Mode: 0o444}}
	if len(c.Files) != 1 || c.Files[0].Path != want[0].Path || string(c.Files[0].Content) != string(want[0].Content) || c.Files[0].Mode != want[0].Mode {
		t.Fatalf("files = %+v, want %+v", c.Files, want)
	}
	args := strings.Join(c.Args, " ")
	if !strings.HasSuffix(args, "--api-key-file /.llmserve/api-key") {
		t.Errorf("args %q do not end with --api-key-file /.llmserve/api-key", args)
	}
	if strings.Contains(args, "sk-secret") || slices.Contains(mapValues(c.Env), "sk-secret") {
		t.Errorf("key in args or environment: %q %v", args, c.Env)
	}
	// Without a key there is no file and no flag.
	c, err = NewContainer(s, Placement{Name: "x", Image: "img"}, engine.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != 0 || strings.Contains(strings.Join(c.Args, " "), "--api-key-file") {
		t.Errorf("no key, yet files %v and args %q", c.Files, c.Args)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	s := referenceSpec()
	s.ExtraArgs = []string{"--log-level", "debug"}
	c, err := NewContainer(s, Placement{Name: "n", Image: "i", Env: map[string]string{"A": "1"}, HostPort: 31000}, engine.Secrets{HubToken: "hf_x"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseLaunchRecord(c.Labels[SpecLabel])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Spec.Command(), s.Command()) || *got.Spec.Speculative != *s.Speculative {
		t.Errorf("round trip changed the spec: %+v", got.Spec)
	}
	if got.Placement.HostPort != 31000 || got.Placement.Env["A"] != "1" || len(got.Placement.Env) != 1 {
		t.Errorf("round trip changed the placement: %+v", got.Placement)
	}
}

// gpu_ids picks Intel GPUs through the Level Zero affinity mask and NVIDIA GPUs through the
// device request; without it every device of the family is visible.
func TestGPUSelection(t *testing.T) {
	t.Parallel()
	xpu := referenceSpec()
	cuda := referenceSpec()
	cuda.Accelerator, cuda.Speculative = engine.CUDA, nil
	tests := []struct {
		name    string
		spec    engine.Spec
		ids     []string
		mask    string // ZE_AFFINITY_MASK; "" for unset
		request []string
	}{
		{"xpu four of eight", xpu, []string{"4", "5", "6", "7"}, "4,5,6,7", nil},
		{"xpu sub-devices", xpu, []string{"0.0", "0.1", "1.0", "1.1"}, "0.0,0.1,1.0,1.1", nil},
		{"xpu all", xpu, nil, "", nil},
		{"cuda two", cuda, []string{"0", "GPU-1a2b"}, "", []string{"0", "GPU-1a2b"}},
		{"cuda all", cuda, nil, "", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Placement{Name: "x", Image: "img", GPUIDs: tt.ids}
			if probs := p.Validate(tt.spec); len(probs) != 0 {
				t.Fatalf("Validate = %v", probs)
			}
			c, err := NewContainer(tt.spec, p, engine.Secrets{})
			if err != nil {
				t.Fatal(err)
			}
			mask, set := c.Env["ZE_AFFINITY_MASK"]
			if mask != tt.mask || set != (tt.mask != "") {
				t.Errorf("ZE_AFFINITY_MASK = %q (set %v), want %q", mask, set, tt.mask)
			}
			if !slices.Equal(c.GPURequest, tt.request) || (c.GPURequest == nil) != (tt.request == nil) {
				t.Errorf("GPU request %q, want %q", c.GPURequest, tt.request)
			}
			if tt.spec.Accelerator == engine.XPU && !slices.Equal(c.Devices, []string{"/dev/dri"}) {
				t.Errorf("devices %q, want /dev/dri", c.Devices)
			}
		})
	}
}
