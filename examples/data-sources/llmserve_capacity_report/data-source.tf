# Read an archived capacity result and gate a deployment on it, without re-running the
# benchmark.
data "llmserve_capacity_report" "qwen" {
  path = "${path.module}/results/b70-qwen-sglang-aiperf.json"
}

locals {
  # null when even the lowest concurrency missed the SLO for that workload.
  users_8k = data.llmserve_capacity_report.qwen.maximum_passing_concurrency["8K / 1K"]
}

check "capacity_for_8k_prompts" {
  assert {
    condition     = local.users_8k != null && local.users_8k >= 6
    error_message = "The archived result no longer supports 6 concurrent users at 8K / 1K under the p95 TTFT SLO."
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
