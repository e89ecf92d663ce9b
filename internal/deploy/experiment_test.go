package deploy

import (
	"testing"

	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
)

func TestExperiment(t *testing.T) {
	t.Parallel()
	spec := engine.Spec{Engine: engine.SGLang, Model: "m", Revision: "r", Accelerator: engine.XPU, TensorParallel: 4, ContextLength: 8192,
		Speculative: &engine.Speculative{Algorithm: "EAGLE", Steps: 7, TopK: 1, DraftTokens: 8}}
	exp := Experiment(spec, "img:1", "sha256:0", engine.ServerInfo{TokenPool: 262144, MaxContext: 262144})
	if exp.ContextLength != 262144 || exp.PhysicalTokenPool == nil || *exp.PhysicalTokenPool != 262144 {
		t.Errorf("the server's own context length and pool must win: %+v", exp)
	}
	if exp.Hardware != "xpu" || exp.Accelerator != "xpu" || exp.TensorParallelism != 4 || exp.ImageTag != "img:1" || exp.Checkpoint != "r" ||
		exp.SpeculativeMode == nil || exp.SpeculativeMode.DraftTokens != 8 {
		t.Errorf("experiment = %+v", exp)
	}
	if exp := Experiment(spec, "img:1", "", engine.ServerInfo{}); exp.ContextLength != 8192 || exp.PhysicalTokenPool != nil {
		t.Errorf("without server info the configured context length stands: %+v", exp)
	}
	if exp := Experiment(engine.Spec{Engine: engine.LlamaCpp}, "img:1", "", engine.ServerInfo{}); exp.Accelerator != "cpu" {
		t.Errorf("a spec without an accelerator runs on the CPU: %q", exp.Accelerator)
	}
}
