terraform {
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

variable "expected_users" {
  description = "Concurrent users to serve at peak, on the 8K / 1K workload."
  type        = number
  default     = 40
}

# The result of a benchmark run, archived beside this configuration (results.json here is a
# real schema v1 result: 7 users per server at 8K / 1K).
data "llmserve_capacity_report" "qwen" {
  path = "${path.module}/results.json"
}

locals {
  users_per_server = data.llmserve_capacity_report.qwen.maximum_passing_concurrency["8K / 1K"]
  # 40 users at 7 per server: 6 servers.
  servers = ceil(var.expected_users / local.users_per_server)
}

# Known at plan, because the data source reads the file at plan: it can drive count.
resource "terraform_data" "server" {
  count = local.servers
  input = "qwen-${count.index}" # stands in for one llmserve_inference_server per host
}

check "archived_capacity_usable" {
  assert {
    condition     = local.users_per_server != null && !data.llmserve_capacity_report.qwen.capacity_bounded_by_search["8K / 1K"]
    error_message = "The archived result has no boundary for 8K / 1K; measure again before sizing on it."
  }
}

output "servers" {
  value = local.servers
}
