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
  description = "The archived results_json of the release in production, beside this configuration. Empty: no comparison (the first run, which makes the first baseline)."
  type        = string
  default     = "baseline.json"
}

variable "fail_on_inconclusive" {
  description = "Fail the gate when the comparison cannot tell (inconclusive), not only on a regression. The shipped candidate.json is the same server measured again on a busy machine: inconclusive."
  type        = bool
  default     = false
}

locals {
  baseline = var.baseline == "" ? null : file("${path.module}/${var.baseline}")
}

# The candidate, measured with the same protocol as the baseline (same workloads, objectives,
# trial shape and model; anything else makes the comparison refuse: comparable = false) and
# against it: after each workload's search it measures the levels the comparison needs and
# adds trials one at a time while the verdict is open, at most trial.comparison_budget.
resource "llmserve_capacity_benchmark" "candidate" {
  endpoint  = var.endpoint
  model     = "Qwen/Qwen3-8B"
  workloads = [{ label = "1K / 16", input_tokens = 1024, output_tokens = 16 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 600 }]
  search    = { min_concurrency = 1, max_concurrency = 16 }
  trial     = { warmup_requests = 4, measured_requests = 32, confirmation_trials = 3, comparison_budget = 12 }
  triggers  = { image = var.image }
  baseline  = local.baseline

  # The gate: the apply fails when the candidate is slower than the baseline beyond its
  # noise, or (with fail_on_inconclusive) when even the budget could not tell, naming each
  # workload, its figures and what would decide it; nothing depending on it is applied.
  # self.comparison is what provider::llmserve::compare(local.baseline, self.results_json)
  # returns, value for value.
  lifecycle {
    postcondition {
      # No baseline (the first run): nothing to compare. With one, a comparison that is not
      # there fails the gate rather than passing it.
      condition     = local.baseline == null ? true : self.comparison.comparable
      error_message = "The candidate was not measured like the baseline:\n${try(self.comparison.summary, "")}"
    }
    postcondition {
      condition = local.baseline == null ? true : length(self.comparison.regressed) == 0 && (
        !var.fail_on_inconclusive || length(self.comparison.inconclusive) == 0
      )
      error_message = "Capacity regressed, or could not be told, against ${var.baseline}:\n${try(self.comparison.summary, "")}"
    }
  }
}

# Archive this in CI as the next baseline once the release ships:
#   terraform output -raw results_json > releases/$VERSION.json
output "results_json" {
  value = llmserve_capacity_benchmark.candidate.results_json
}

# The same gate on a result archived earlier, at plan and without load: the data source's
# baseline compares it, and its postcondition fails the plan (terraform plan exits non-zero)
# on a regression, or on an inconclusive comparison where you chose to.
data "llmserve_capacity_report" "candidate" {
  path     = "${path.module}/candidate.json"
  baseline = local.baseline

  lifecycle {
    postcondition {
      condition = local.baseline == null ? true : self.comparison.comparable && length(self.comparison.regressed) == 0 && (
        !var.fail_on_inconclusive || length(self.comparison.inconclusive) == 0
      )
      error_message = "The candidate does not pass against ${var.baseline}:\n${try(self.comparison.summary, "")}"
    }
  }
}

output "comparison" {
  value = try(data.llmserve_capacity_report.candidate.comparison.summary, "no baseline: nothing compared")
}
