package deploy

import (
	"strings"
	"unicode"

	"github.com/llmserve/terraform-provider-llmserve/internal/attrpath"
	"github.com/llmserve/terraform-provider-llmserve/internal/engine"
	"github.com/llmserve/terraform-provider-llmserve/internal/problem"
)

// The rules of gpu_ids, which both backends apply: llmserve_inference_server on Docker
// (Placement.Validate, NewContainer) and llmserve_inference_deployment on Kubernetes
// (kubernetes.Deployment.Validate, its pod template). One copy, so a server moved from a
// Docker host to a cluster is refused and launched by the same words.

// CheckGPUIDs reports the gpu_ids a spec cannot use: ids on an accelerator that selects no
// GPU, ids not in the form the accelerator's selection takes (a Vulkan device index, a Level
// Zero index or device.sub-device, an NVIDIA index or UUID), an id listed twice, fewer ids
// than tensor-parallel ranks (xpu and vulkan, where the provider hands the ranks the listed
// devices), and the selection variable set in env as well. env is the user's environment.
func CheckGPUIDs(s engine.Spec, ids []string, env map[string]string) []problem.Problem {
	var out []problem.Problem
	add := func(p attrpath.Path, format string, args ...any) {
		out = append(out, problem.At(p, format, args...))
	}
	if len(ids) > 0 && s.Accelerator != engine.CUDA && s.Accelerator != engine.XPU && s.Accelerator != engine.Vulkan {
		add(attrpath.Root("gpu_ids"), "selects GPUs, which only accelerator = \"cuda\" (NVIDIA), \"xpu\" (Intel) and \"vulkan\" use; with %q it would be ignored. Remove gpu_ids or set the accelerator", orCPU(s.Accelerator))
	}
	seen := map[string]int{}
	for i, id := range ids {
		f := attrpath.Root("gpu_ids").Index(i)
		switch {
		case s.UsesVulkan() && !vulkanDevice.MatchString(id):
			add(f, "must be a Vulkan device index (\"0\"), in the order the Vulkan loader lists them (vulkaninfo --summary: GPU0, GPU1, …), which llama.cpp reads from %s, got %q", engine.VulkanVisibleDevicesEnv, id)
			continue
		case s.Accelerator == engine.XPU && !s.UsesVulkan() && !levelZeroDevice.MatchString(id):
			add(f, "must be a Level Zero device index (\"0\") or device.sub-device (\"0.1\"), as sycl-ls or xpu-smi discovery number them, got %q", id)
			continue
		case s.Accelerator == engine.CUDA && !cudaDevice.MatchString(id):
			add(f, "must be a GPU index (\"0\") or a GPU or MIG UUID (\"GPU-…\", \"MIG-…\"), as nvidia-smi -L shows them, got %q", id)
			continue
		case strings.TrimSpace(id) == "" || strings.ContainsFunc(id, unicode.IsControl):
			add(f, "must be a GPU index or UUID (as nvidia-smi -L shows), got %q", id)
			continue
		}
		if j, dup := seen[id]; dup {
			add(f, "%q is already listed as gpu_ids[%d]; list each GPU once", id, j)
		}
		seen[id] = i
	}
	if (s.Accelerator == engine.XPU || s.Accelerator == engine.Vulkan) && len(ids) > 0 {
		v := GPUSelectionEnv(s)
		if _, set := env[v]; set {
			add(attrpath.Root("environment").Key(v), "gpu_ids sets %s for accelerator = %q; set the devices in one place: remove it from environment or remove gpu_ids", v, s.Accelerator)
		}
		if s.TensorParallel > len(ids) {
			add(attrpath.Root("gpu_ids"), "lists %d devices but tensor_parallel_size = %d needs one per rank; list %d devices or lower tensor_parallel_size", len(ids), s.TensorParallel, s.TensorParallel)
		}
	}
	return out
}

// GPUSelectionEnv is the variable gpu_ids sets for a spec on xpu and vulkan: the Vulkan
// device list for llama.cpp's Vulkan backend (on xpu too), the Level Zero mask for SGLang
// and vLLM on xpu.
func GPUSelectionEnv(s engine.Spec) string {
	if s.UsesVulkan() {
		return engine.VulkanVisibleDevicesEnv
	}
	return XPUAffinityEnv
}

// GPUSelection is the environment that makes only gpu_ids visible to the engine on xpu and
// vulkan (every render node stays mapped; the Level Zero loader exposes only the masked
// devices to SYCL, PyTorch's xpu backend and so to SGLang and vLLM, and ggml's Vulkan
// backend only the listed ones to llama.cpp); nil for no ids and for the accelerators
// whose GPUs are chosen another way (NVIDIA: the device request or the device plugin).
func GPUSelection(s engine.Spec, ids []string) map[string]string {
	if len(ids) == 0 || (s.Accelerator != engine.XPU && s.Accelerator != engine.Vulkan) {
		return nil
	}
	return map[string]string{GPUSelectionEnv(s): strings.Join(ids, ",")}
}
