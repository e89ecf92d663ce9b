terraform {
  required_version = ">= 1.8"
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

variable "image" {
  description = "The candidate release (image digest or tag); a change measures again."
  type        = string
  default     = "lmsysorg/sglang:v0.5.5"
}

variable "baseline" {
  description = "The archived results_json of the release in production, beside this configuration."
  type        = string
  default     = "baseline.json"
}

locals {
  baseline = file("${path.module}/${var.baseline}")
}

# The candidate, measured with the same protocol as the baseline: same workloads, objectives,
# trial shape and model. Anything else makes compare() refuse (comparable = false).
resource "llmserve_capacity_benchmark" "candidate" {
  endpoint  = var.endpoint
  model     = "Qwen/Qwen3-8B"
  workloads = [{ label = "1K / 16", input_tokens = 1024, output_tokens = 16 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 600 }]
  search    = { min_concurrency = 1, max_concurrency = 16 }
  trial     = { warmup_requests = 4, measured_requests = 32, confirmation_trials = 3 }
  triggers  = { image = var.image }

  # The gate: the apply fails when the candidate is slower than the baseline beyond its
  # noise, naming each workload and its figures; nothing depending on it is applied.
  lifecycle {
    postcondition {
      condition     = provider::llmserve::compare(local.baseline, self.results_json).comparable
      error_message = "The candidate was not measured like the baseline:\n${provider::llmserve::compare(local.baseline, self.results_json).summary}"
    }
    postcondition {
      condition     = length(provider::llmserve::compare(local.baseline, self.results_json).regressed) == 0
      error_message = "Capacity regressed against ${var.baseline}:\n${provider::llmserve::compare(local.baseline, self.results_json).summary}"
    }
  }
}

# Archive this in CI as the next baseline once the release ships:
#   terraform output -raw results_json > releases/$VERSION.json
output "results_json" {
  value = llmserve_capacity_benchmark.candidate.results_json
}

# The same gate on a result archived earlier, at plan and without load: the data source's
# baseline compares it, and a check warns (or, in a precondition, fails) on a regression.
data "llmserve_capacity_report" "candidate" {
  path     = "${path.module}/candidate.json"
  baseline = local.baseline
}

check "no_regression" {
  assert {
    condition     = data.llmserve_capacity_report.candidate.comparison.comparable && length(data.llmserve_capacity_report.candidate.comparison.regressed) == 0
    error_message = data.llmserve_capacity_report.candidate.comparison.summary
  }
}

output "comparison" {
  value = data.llmserve_capacity_report.candidate.comparison.summary
}
