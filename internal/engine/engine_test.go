package engine

import (
	"slices"
	"strconv"
	"testing"
)

// TestDefaults checks the defaults a server gets when its configuration leaves port,
// tensor_parallel_size and accelerator out: each engine's documented port (shared/ENGINES.md,
// host/port row), one accelerator, and the CPU; every engine accepts them together.
func TestDefaults(t *testing.T) {
	t.Parallel()
	for e, want := range map[Name]int{SGLang: 30000, VLLM: 8000, LlamaCpp: 8080} {
		if got := DefaultPort(e); got != want {
			t.Errorf("DefaultPort(%s) = %d, want %d", e, got, want)
		}
	}
	if DefaultTensorParallel != 1 {
		t.Errorf("DefaultTensorParallel = %d, want 1", DefaultTensorParallel)
	}
	for _, e := range Names {
		s := Spec{Engine: e, Model: "/models/m.gguf", TensorParallel: DefaultTensorParallel, Port: DefaultPort(e), Accelerator: DefaultAccelerator}
		if problems := s.Validate(); len(problems) > 0 {
			t.Errorf("%s with the defaults does not validate: %v", e, problems)
		}
		cmd := s.Command()
		if i := slices.Index(cmd, "--port"); i < 0 || i+1 >= len(cmd) || cmd[i+1] != strconv.Itoa(DefaultPort(e)) {
			t.Errorf("%s with the defaults: command %q does not listen on its default port", e, cmd)
		}
	}
}
