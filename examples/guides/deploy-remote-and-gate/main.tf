terraform {
  required_version = ">= 1.11"
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

variable "ssh_private_key" {
  description = "Unencrypted private key of the deploy user on the GPU host."
  type        = string
  sensitive   = true
}

variable "hf_token" {
  description = "Hugging Face token for the model download; write-only, never stored."
  type        = string
  sensitive   = true
  ephemeral   = true
}

# The Docker Engine of the GPU host, over ssh. Its host key must be in known_hosts; the host
# needs sshd and dockerd, not the docker CLI.
provider "llmserve" {
  docker_host     = "ssh://deploy@gpu-host.example.com"
  ssh_private_key = var.ssh_private_key
}

# SGLang on 4 x Intel Arc Pro B70: Qwen AWQ INT4, tensor parallel 4, 256K context, EAGLE/MTP.
resource "llmserve_inference_server" "qwen" {
  name   = "qwen-sglang"
  image  = "rahulunair/sglang-xpu@sha256:feb7b9130eff2fa26dfa09ab1a8b9a8423db013ad7d18f804f8b55a57cb2c175"
  engine = "sglang"

  model                = "ulkaa/Qwen3.8-27B-AWQ-INT4"
  tensor_parallel_size = 4
  context_length       = 262144
  speculative          = { algorithm = "EAGLE", steps = 7, topk = 1, draft_tokens = 8 }
  accelerator          = "xpu" # /dev/dri, render and video groups, host IPC

  # Published nowhere: SGLang listens on 127.0.0.1 inside its container, so neither the network
  # nor the GPU host's other containers reach its API or its admin endpoints (/flush_cache).
  # The provider checks that it generates through the Docker Engine (over the same ssh), and
  # the benchmark's runner measures it from inside. endpoint is http://127.0.0.1:30000, the
  # address as seen from there, known at plan.
  publish = false
  mounts  = [{ source = "/srv/huggingface", target = "/root/.cache/huggingface" }]

  hub_token_wo      = var.hf_token
  secrets_version   = "1"
  readiness_timeout = "30m" # first start downloads the weights
}

resource "llmserve_capacity_benchmark" "qwen" {
  # The load runs on the GPU host, in a runner container sharing the server container's
  # network: it reaches SGLang on the container's loopback, the figures do not depend on the
  # link to this machine, and an interrupted apply leaves the runner measuring.
  runner     = { docker = { container = llmserve_inference_server.qwen.id } }
  endpoint   = llmserve_inference_server.qwen.endpoint # http://127.0.0.1:30000, inside its container
  model      = llmserve_inference_server.qwen.served_model_name
  experiment = llmserve_inference_server.qwen.experiment # recorded in results_json

  workloads = [
    { label = "2K / 512", input_tokens = 2048, output_tokens = 512 },
    { label = "8K / 1K", input_tokens = 8192, output_tokens = 1024 },
  ]
  slos = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 10000 }]

  # A new container (any change of the server) measures again.
  triggers = { server = llmserve_inference_server.qwen.id }

  lifecycle {
    # The gate: the apply fails, and nothing that depends on this benchmark is created, when
    # the deployment holds fewer users than the product needs.
    postcondition {
      condition     = coalesce(self.maximum_passing_concurrency["8K / 1K"], 0) >= 7
      error_message = "The deployment holds fewer than 7 users at 8K in / 1K out under p95 TTFT < 10 s."
    }
    postcondition {
      condition     = !self.capacity_bounded_by_search["8K / 1K"]
      error_message = "8K / 1K passed up to search.max_concurrency: the capacity was not found; raise it."
    }
  }
}

# What the gate protects: here a stand-in for putting the server behind an authenticating
# gateway (a container joining its network, as the runner does). It depends on the benchmark,
# so it is created only after the postconditions pass, and it carries the measured capacity to
# whatever routes the traffic.
resource "terraform_data" "route_traffic" {
  input = {
    container     = llmserve_inference_server.qwen.name
    max_users_8k  = llmserve_capacity_benchmark.qwen.maximum_passing_concurrency["8K / 1K"]
    max_users_2k  = llmserve_capacity_benchmark.qwen.maximum_passing_concurrency["2K / 512"]
    measured_with = llmserve_capacity_benchmark.qwen.id
  }
}

output "report" {
  value = provider::llmserve::report_markdown(llmserve_capacity_benchmark.qwen.results_json)
}
