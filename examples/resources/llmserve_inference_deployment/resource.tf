# The cluster: a kubeconfig context (or host + token / client certificate).
provider "llmserve" {
  kubernetes {
    config_path    = "~/.kube/config"
    config_context = "inference"
  }
}

variable "hf_token" {
  type      = string
  sensitive = true
}

# Two vLLM replicas, each on two NVIDIA GPUs, behind a ClusterIP Service.
resource "llmserve_inference_deployment" "qwen" {
  name                 = "qwen-vllm"
  namespace            = "inference"
  image                = "vllm/vllm-openai:v0.11.0"
  engine               = "vllm"
  model                = "Qwen/Qwen3-8B"
  served_model_name    = "qwen3-8b"
  tensor_parallel_size = 2
  accelerator          = "cuda"
  replicas             = 2
  # accelerator_resource defaults to nvidia.com/gpu and accelerator_count to
  # tensor_parallel_size; Intel's device plugin exposes gpu.intel.com/i915 or gpu.intel.com/xe.

  node_selector = { "nvidia.com/gpu.product" = "NVIDIA-L40S" }
  tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  shm_size_mb   = 8192
  model_cache   = { claim_name = "hf-cache", mount_path = "/root/.cache/huggingface" }

  hub_token_wo    = var.hf_token
  secrets_version = "1"

  readiness_timeout = "20m"
}

# Measured from a runner Job in the same namespace: it reaches the ClusterIP Service and every
# pod from inside the cluster network, so the Service stays unpublished; the provider follows
# it through the API server. replica_endpoints: every pod is waited for and its prefix cache
# flushed before each trial (a flush through the Service would reach one of them).
resource "llmserve_capacity_benchmark" "qwen" {
  endpoint          = llmserve_inference_deployment.qwen.endpoint
  replica_endpoints = llmserve_inference_deployment.qwen.replica_endpoints
  model             = "qwen3-8b"
  workloads         = [{ label = "1024 / 128", input_tokens = 1024, output_tokens = 128 }]
  slos              = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 1000 }]
  experiment        = llmserve_inference_deployment.qwen.experiment # records replicas = 2
  runner = {
    kubernetes = {
      namespace = llmserve_inference_deployment.qwen.namespace
      image     = "ghcr.io/llmserve/llmserve-runner:0.1.0" # the release's runner image
    }
  }
}

# llama.cpp on Intel Arc GPUs claimed through Dynamic Resource Allocation (Kubernetes 1.34+,
# Intel's resource driver publishes the GPUs under the DeviceClass gpu.intel.com): each replica
# gets a ResourceClaim of its own from the template <name>-accelerator, two discrete GPUs for
# tensor_parallel_size = 2. The launch is the Docker server's: every layer on Vulkan0 and
# Vulkan1, split by layer; plan refuses and warns as it does for llmserve_inference_server.
resource "llmserve_inference_deployment" "arc" {
  name                 = "qwen-arc"
  namespace            = "inference"
  image                = "llmserve/llamacpp-vulkan:0.7.0-dfsg-2" # scripts/build-llamacpp-image.sh --vulkan
  engine               = "llamacpp"
  model                = "/models/qwen3-8b-q8_0.gguf"
  served_model_name    = "qwen3-8b"
  accelerator          = "xpu"
  tensor_parallel_size = 2
  max_running_requests = 8
  context_length       = 65536
  accelerator_claim = {
    device_class = "gpu.intel.com"
    selectors    = ["device.attributes[\"gpu.intel.com\"].deviceType == \"discrete\""]
  }
  model_cache = { claim_name = "gguf-models", mount_path = "/models", read_only = true }
}
