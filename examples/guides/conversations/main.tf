# How many chat users a llama.cpp server holds: each virtual user keeps a 3-turn conversation
# (a shared system prompt, 48 new tokens a turn, 8 out), thinks 300 ms between turns and sends
# its whole history back, which the server's prompt cache should serve. The search is over
# users, not concurrent requests: a thinking user holds no request.

terraform {
  required_version = ">= 1.11"
  required_providers {
    llmserve = {
      source = "registry.terraform.io/llmserve/llmserve"
    }
  }
}

variable "model_path" {
  description = "Absolute host path of the GGUF model (scripts/build-model.sh prints it)."
  type        = string
}

variable "name" {
  description = "Container name."
  type        = string
  default     = "llmserve-conversations"
}

variable "image" {
  description = "llama.cpp engine image (scripts/build-llamacpp-image.sh builds it)."
  type        = string
  default     = "llmserve/llamacpp:latest"
}

variable "users" {
  description = "The numbers of users to try, each level a full trial."
  type        = list(number)
  default     = [1, 2, 4]
}

variable "ttft_p95_ms" {
  description = "SLO: p95 time to first token of every turn must stay strictly below this."
  type        = number
  default     = 60000
}

resource "llmserve_inference_server" "chat" {
  name                 = var.name
  image                = var.image
  engine               = "llamacpp"
  model                = "/models/tiny-llama.gguf"
  model_host_path      = var.model_path
  served_model_name    = "tiny"
  max_running_requests = 2
  context_length       = 4096 # llama.cpp splits it between the 2 slots: 2048 each
  readiness_timeout    = "3m"
}

resource "llmserve_capacity_benchmark" "chat" {
  endpoint = llmserve_inference_server.chat.endpoint
  model    = llmserve_inference_server.chat.served_model_name

  workloads = [{
    label         = "chat"
    input_tokens  = 48 # new tokens each turn adds
    output_tokens = 8
    conversation = {
      turns                = 3
      system_prompt_tokens = 128 # shared by every user: a prefix cache serves it once
      think_time           = { distribution = "constant", mean = "300ms" }
    }
  }]
  slos   = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = var.ttft_p95_ms }]
  search = { concurrency_levels = var.users } # levels of users on a users workload
  trial = {
    measured_requests   = 6 # turns
    confirmation_trials = 1
    # llama.cpp's only flush turns its prompt cache off per request, which a conversation
    # needs: "auto" is refused at plan here, saying so.
    cache_flush = "none"
  }
  triggers = { container = llmserve_inference_server.chat.id }
}

output "maximum_passing_users" {
  value = llmserve_capacity_benchmark.chat.maximum_passing_users["chat"]
}

output "report_markdown" {
  value = provider::llmserve::report_markdown(llmserve_capacity_benchmark.chat.results_json)
}
