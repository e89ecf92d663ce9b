package engine

import (
	"maps"
	"strings"
	"testing"
)

// FI_TCP_IFACE=lo goes to SGLang and vLLM on XPU with tensor parallel > 1, never over the
// user's own value, and nowhere else.
func TestHostNetworkEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		user map[string]string
		want map[string]string
	}{
		{"sglang xpu tp 4", referenceSpec(), nil, map[string]string{"FI_TCP_IFACE": "lo"}},
		{"vllm xpu tp 2", Spec{Engine: VLLM, Accelerator: XPU, TensorParallel: 2}, nil, map[string]string{"FI_TCP_IFACE": "lo"}},
		{"user pinned a nic", referenceSpec(), map[string]string{"FI_TCP_IFACE": "eno3np0"}, nil},
		{"one rank", Spec{Engine: SGLang, Accelerator: XPU, TensorParallel: 1}, nil, nil},
		{"cuda", Spec{Engine: SGLang, Accelerator: CUDA, TensorParallel: 4}, nil, nil},
		{"llamacpp on intel", Spec{Engine: LlamaCpp, Accelerator: XPU, TensorParallel: 2}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.HostNetworkEnv(tt.user); !maps.Equal(got, tt.want) {
				t.Errorf("HostNetworkEnv = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFirstCompletionHint(t *testing.T) {
	t.Parallel()
	if h := referenceSpec().FirstCompletionHint(); !strings.Contains(h, "FI_TCP_IFACE=lo") || !strings.Contains(h, "tp_collective_probe.py") {
		t.Errorf("hint %q must name FI_TCP_IFACE and the runbook's probe", h)
	}
	one := referenceSpec()
	one.TensorParallel = 1
	if h := one.FirstCompletionHint(); h != "" {
		t.Errorf("one rank has no collective to blame, got %q", h)
	}
}

// The draft knobs are warned about for the drafts known to need them; NEXTN on XPU is
// flagged as unproven; nothing is said on CUDA.
func TestLaunchWarnings(t *testing.T) {
	t.Parallel()
	eagle3 := func(s *Spec) {
		s.Speculative = &Speculative{Algorithm: "EAGLE3", Steps: 3, TopK: 1, DraftTokens: 4, DraftModel: "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"}
	}
	tests := []struct {
		name   string
		mutate func(*Spec)
		env    map[string]string
		want   []string // the paths warned about, in order
	}{
		{"known fp16 short-context draft", eagle3, nil, []string{"extra_args", "environment"}},
		{"both knobs set", func(s *Spec) { eagle3(s); s.ExtraArgs = []string{"--dtype", "bfloat16"} },
			map[string]string{"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}, nil},
		{"unknown draft", func(s *Spec) { eagle3(s); s.Speculative.DraftModel = "org/own-draft" }, nil, nil},
		{"nextn", func(s *Spec) { s.Speculative.Algorithm = "NEXTN" }, nil, []string{"speculative.algorithm"}},
		{"known draft on cuda", func(s *Spec) { eagle3(s); s.Accelerator = CUDA }, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := referenceSpec()
			tt.mutate(&s)
			var got []string
			for _, p := range s.LaunchWarnings(tt.env) {
				if !p.Warning {
					t.Errorf("%s is not a warning", p.Detail)
				}
				got = append(got, p.Path.String())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("warnings on %q, want %q", got, tt.want)
			}
		})
	}
}
