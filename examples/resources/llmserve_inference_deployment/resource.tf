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
