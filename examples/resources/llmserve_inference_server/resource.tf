# SGLang on 4 x Intel Arc Pro B70: Qwen AWQ INT4, tensor parallel 4, 256K context, EAGLE/MTP.
resource "llmserve_inference_server" "qwen" {
  name   = "qwen-sglang"
  image  = "rahulunair/sglang-xpu@sha256:feb7b9130eff2fa26dfa09ab1a8b9a8423db013ad7d18f804f8b55a57cb2c175"
  engine = "sglang"

  model                = "ulkaa/Qwen3.8-27B-AWQ-INT4"
  revision             = "2bf7f1646dc0875cff4404fdfef976cfb0ff2199"
  tensor_parallel_size = 4
  context_length       = 262144
  speculative = {
    algorithm    = "EAGLE"
    steps        = 7
    topk         = 1
    draft_tokens = 8 # topk 1 needs steps + 1
  }

  accelerator  = "xpu"                # /dev/dri, render + video groups, host IPC; with speculative: --attention-backend intel_xpu --page-size 64 --disable-decode-cuda-graph
  gpu_ids      = ["0", "1", "2", "3"] # Level Zero device indices (sycl-ls), set as ZE_AFFINITY_MASK
  bind_address = "0.0.0.0"
  host_port    = 30000
  mounts = [{
    source = "/srv/huggingface"
    target = "/root/.cache/huggingface"
  }]

  hub_token_wo      = var.hf_token # write-only: never in state
  secrets_version   = "1"          # bump to roll a new token
  readiness_timeout = "20m"
}

# llama.cpp on CPU with a GGUF file from the host and 4 slots. The image is the one
# `make quickstart` uses: scripts/build-llamacpp-image.sh builds it locally from Debian's
# llama.cpp-tools package (no registry needed) and tags it llmserve/llamacpp:latest.
resource "llmserve_inference_server" "tiny" {
  name                 = "tiny-llamacpp"
  image                = "llmserve/llamacpp:latest"
  engine               = "llamacpp"
  model                = "/models/tiny-llama.gguf"
  model_host_path      = "/var/lib/llmserve/tiny-llama.gguf" # scripts/build-model.sh prints the path of its model
  served_model_name    = "tiny"
  context_length       = 8192
  max_running_requests = 4
}

# llama.cpp on 2 x Intel Arc through Vulkan (Debian's ggml Vulkan backend and Mesa's ANV):
# every layer offloaded, split by layers over the two devices gpu_ids selects. The image is
# scripts/build-llamacpp-image.sh --vulkan.
resource "llmserve_inference_server" "arc" {
  name                 = "arc-llamacpp"
  image                = "llmserve/llamacpp-vulkan:latest"
  engine               = "llamacpp"
  model                = "/models/model.gguf"
  model_host_path      = "/srv/models/model.gguf"
  accelerator          = "xpu"      # /dev/dri, render + video groups; --n-gpu-layers 999 --device Vulkan0,Vulkan1 --split-mode layer
  gpu_ids              = ["0", "1"] # Vulkan device indices (vulkaninfo --summary), set as GGML_VK_VISIBLE_DEVICES
  tensor_parallel_size = 2
}

variable "hf_token" {
  type      = string
  sensitive = true
  ephemeral = true
}

output "qwen_endpoint" {
  value = llmserve_inference_server.qwen.endpoint
}
