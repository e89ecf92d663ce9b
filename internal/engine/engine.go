// Package engine owns every fact about the inference engines the provider launches and
// measures (SGLang, vLLM, llama.cpp's llama-server): their names and default ports, launch
// flags and the constraints between them, secret environment names, health and readiness
// paths, how each version reports itself, and how its cache is flushed, its idleness told,
// its tokens counted and its metrics named. deploy, load and capacity ask this package; none
// of them spells an engine path or flag. It is a leaf: it imports nothing of this module.
//
// Comments cite the engine version and source file each fact was read from.
package engine

// Name names an inference server implementation.
type Name string

// The engines the provider can launch and measure.
const (
	SGLang   Name = "sglang"
	VLLM     Name = "vllm"
	LlamaCpp Name = "llamacpp"
)

// Names lists every supported engine, in documentation order.
var Names = []Name{SGLang, VLLM, LlamaCpp}

// DefaultPort is the port each engine listens on by default, kept so a container looks the way
// the engine's own documentation says.
func DefaultPort(e Name) int {
	switch e {
	case VLLM:
		return 8000
	case LlamaCpp:
		return 8080
	default:
		return 30000
	}
}

// DefaultTensorParallel is the tensor-parallel size of a server that sets none: one
// accelerator per engine, no tensor parallelism (the engines' own default too).
const DefaultTensorParallel = 1

// DefaultEntrypoint is the program that starts the engine in its upstream images. It is set
// explicitly rather than inherited from the image so the launch command in state is exact.
func DefaultEntrypoint(e Name) []string {
	switch e {
	case VLLM:
		return []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}
	case LlamaCpp:
		return []string{"llama-server"}
	default:
		return []string{"python3", "-m", "sglang.launch_server"}
	}
}

// HealthPath is the endpoint that answers 200 once the engine can serve. SGLang's
// /health_generate runs a real generation; vLLM and llama.cpp only have /health, which is why
// readiness also sends one completion.
func HealthPath(e Name) string {
	if e == SGLang {
		return "/health_generate"
	}
	return "/health"
}
