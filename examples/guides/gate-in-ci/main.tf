terraform {
  required_version = ">= 1.11"
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

variable "endpoint" {
  type    = string
  default = "http://gpu-host.example.com:30000"
}

variable "server_version" {
  description = "What the server runs (image digest, release); a change measures again."
  type        = string
  default     = "sglang-0.5.4"
}

resource "llmserve_capacity_benchmark" "nightly" {
  endpoint  = var.endpoint
  model     = "Qwen/Qwen3-8B"
  workloads = [{ label = "8K / 1K", input_tokens = 8192, output_tokens = 1024 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 10000 }]
  triggers  = { server = var.server_version }

  # Blocking: the apply fails, anything depending on this resource is not applied, and the
  # result stays in state, so every later plan fails too until the benchmark is replaced.
  lifecycle {
    postcondition {
      condition     = coalesce(self.maximum_passing_concurrency["8K / 1K"], 0) >= 4
      error_message = "Fewer than 4 users at 8K / 1K: the release must not ship."
    }
  }
}

# Reporting: a failed check is a warning. The apply succeeds, the result is kept, and every
# later plan and apply warns again while it stays false.
check "capacity_target" {
  assert {
    condition     = coalesce(llmserve_capacity_benchmark.nightly.maximum_passing_concurrency["8K / 1K"], 0) >= 7
    error_message = "8K / 1K holds fewer than the 7 users we plan for; see the capacity report."
  }
}

check "capacity_found" {
  assert {
    condition     = !llmserve_capacity_benchmark.nightly.capacity_bounded_by_search["8K / 1K"]
    error_message = "8K / 1K passed up to search.max_concurrency: the number is a lower bound; raise it."
  }
}

output "capacity" {
  value = llmserve_capacity_benchmark.nightly.maximum_passing_concurrency
}

output "report_markdown" {
  value = provider::llmserve::report_markdown(llmserve_capacity_benchmark.nightly.results_json)
}
