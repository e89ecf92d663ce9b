# Gate on an archived capacity result without re-running the benchmark. results.json beside
# this file is a real schema v1 result (SGLang, Qwen3.8 27B AWQ, 4 x Intel Arc Pro B70);
# llmserve_capacity_benchmark.<name>.results_json has the same shape.
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

data "llmserve_capacity_report" "qwen" {
  path = "${path.module}/results.json"
}

locals {
  # null when even the lowest concurrency tried missed the SLO for that workload.
  users_8k = data.llmserve_capacity_report.qwen.maximum_passing_concurrency["8K / 1K"]
}

check "capacity_for_8k_prompts" {
  assert {
    condition     = local.users_8k != null && local.users_8k >= 6
    error_message = "The archived result no longer supports 6 concurrent users at 8K / 1K under the p95 TTFT SLO."
  }
}

# A number at the edge of the search is a bound, not the capacity.
check "capacity_measured_not_bounded" {
  assert {
    condition     = !anytrue(values(data.llmserve_capacity_report.qwen.capacity_bounded_by_search))
    error_message = "A workload's capacity lies outside the concurrencies the benchmark tried; see workload_results[*].notes."
  }
}

output "max_users_by_workload" {
  value = data.llmserve_capacity_report.qwen.maximum_passing_concurrency
}

# The worst p95 TTFT among the confirmation trials at the maximum passing concurrency.
output "worst_passing_ttft_p95_ms" {
  value = {
    for w in data.llmserve_capacity_report.qwen.workload_results :
    w.label => max([for t in w.passing_trials : t.ttft_ms.p95]...)
  }
}

# The document can also be passed in directly, for example from the benchmark resource:
#
# data "llmserve_capacity_report" "latest" {
#   content = llmserve_capacity_benchmark.qwen.results_json
# }
