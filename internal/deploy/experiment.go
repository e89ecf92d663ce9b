package deploy

import (
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/results"
)

// Experiment is a launched server in the results document's shape, from its spec, its
// image and what the running server reported: the server's own context length and token
// pool win over the configured ones. A backend adds what only it knows (kernel, replicas,
// the devices it probed).
func Experiment(spec engine.Spec, image, imageDigest string, info engine.ServerInfo) results.Experiment {
	exp := results.Experiment{
		ImageTag: image, ImageDigest: imageDigest, Model: spec.Model, Checkpoint: spec.Revision,
		Hardware: string(spec.Accelerator), TensorParallelism: spec.TensorParallel,
		ContextLength: spec.ContextLength, Accelerator: string(orCPU(spec.Accelerator)),
	}
	if info.TokenPool != 0 {
		exp.PhysicalTokenPool = &info.TokenPool
	}
	if info.MaxContext != 0 {
		exp.ContextLength = info.MaxContext
	}
	if sp := spec.Speculative; sp != nil {
		exp.SpeculativeMode = &results.SpeculativeMode{Algorithm: sp.Algorithm, Steps: sp.Steps, TopK: sp.TopK, DraftTokens: sp.DraftTokens}
	}
	return exp
}
