terraform {
  required_version = ">= 1.8"
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

provider "llmserve" {}

variable "endpoint" {
  description = "Base URL of the running server, without /v1."
  type        = string
  default     = "http://gpu-host.example.com:8000"
}

variable "model" {
  description = "The model name the server lists at /v1/models."
  type        = string
  default     = "Qwen/Qwen3-8B"
}

# trace.jsonl is recorded traffic in the Mooncake shape, one request per line:
#   {"timestamp": 63, "input_length": 1278, "output_length": 256, "hash_ids": [0, 1, 2]}
# (arrival in ms, lengths in tokens, the prompt's 512-token blocks: requests whose hash_ids
# begin alike share that prefix). The search replays it at 0.5 to 8 times its recorded pace
# and finds the fastest at which the SLO still holds and the server keeps up.
resource "llmserve_capacity_benchmark" "replay" {
  endpoint = var.endpoint
  model    = var.model

  workloads = [
    { label = "production", trace = { file = "${path.module}/trace.jsonl" } },
  ]
  slos = [
    { metric = "time_to_first_token", percentile = 95, threshold_ms = 2000 },
    { metric = "inter_token_latency", percentile = 95, threshold_ms = 100 },
  ]
  search = { speedup = { min = 0.5, max = 8, tolerance = 0.1 } }
  # The trace's first 4 requests are warmups; the other 40 are measured.
  trial = { warmup_requests = 4, confirmation_trials = 2 }

  progress_file = "${path.module}/replay.progress.jsonl"
}

output "headroom" {
  description = "How many times the recorded traffic the deployment holds under the SLO."
  value       = llmserve_capacity_benchmark.replay.maximum_passing_speedup["production"]
}

output "requests_per_second" {
  description = "The trace's mean request rate at that speedup, and the first failing one above it."
  value = {
    passing = llmserve_capacity_benchmark.replay.maximum_passing_request_rate["production"]
    failing = llmserve_capacity_benchmark.replay.first_failing_request_rate["production"]
  }
}
