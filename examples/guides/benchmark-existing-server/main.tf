terraform {
  required_version = ">= 1.11" # write-only api_key; 1.8 is enough without it
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

# Nothing to configure: a benchmark only talks to its endpoint. (The provider block matters
# only for llmserve_inference_server, which needs a Docker Engine.)
provider "llmserve" {}

variable "endpoint" {
  description = "Base URL of the running server, without /v1: vLLM, SGLang, llama.cpp or any OpenAI-compatible streaming API."
  type        = string
  default     = "http://gpu-host.example.com:8000"
}

variable "model" {
  description = "The model name the server lists at /v1/models."
  type        = string
  default     = "Qwen/Qwen3-8B"
}

variable "api_key" {
  description = "Bearer token, if the server demands one. Never stored in state or plan."
  type        = string
  default     = null
  sensitive   = true
  ephemeral   = true
}

resource "llmserve_capacity_benchmark" "existing" {
  endpoint = var.endpoint
  model    = var.model
  api_key  = var.api_key

  workloads = [
    { label = "chat", input_tokens = 1024, output_tokens = 256 },
    { label = "rag", input_tokens = 8192, output_tokens = 512 },
  ]
  # p95 time to first token strictly under 2 s, in every confirmation trial.
  slos   = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 2000 }]
  search = { min_concurrency = 1, max_concurrency = 32 }

  # `tail -f` this during the run; an interrupted apply resumes from it.
  progress_file = "${path.module}/capacity.progress.jsonl"
}

output "capacity" {
  description = "Per workload, the most concurrent users that meet the SLO."
  value       = llmserve_capacity_benchmark.existing.maximum_passing_concurrency
}

output "capacity_bounded_by_search" {
  description = "true where the number is the edge of the search (raise max_concurrency), not the capacity."
  value       = llmserve_capacity_benchmark.existing.capacity_bounded_by_search
}

output "results_json" {
  description = "The whole result (schema v1): archive it, gate on it later with the llmserve_capacity_report data source."
  value       = llmserve_capacity_benchmark.existing.results_json
}
