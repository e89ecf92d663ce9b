# Provider functions need the provider in required_providers (Terraform >= 1.8).
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

# results.json is a real schema v1 result: 7 users per server at 8K / 1K.
data "llmserve_capacity_report" "qwen" {
  path = "${path.module}/results.json"
}

locals {
  users_per_server = data.llmserve_capacity_report.qwen.maximum_passing_concurrency["8K / 1K"]
}

# 40 users at 7 per server, keeping 20 % of each free: 40 / 5.6 = 7.1, so 8 servers.
output "servers" {
  value = provider::llmserve::replicas_for(40, local.users_per_server, 0.2)
}

# No demand needs no server; a capacity of 0 (one user already missed the SLO) serves nobody,
# and any demand against it is an error that says so.
output "servers_at_night" {
  value = provider::llmserve::replicas_for(0, local.users_per_server, 0.2)
}

check "servers" {
  assert {
    condition     = provider::llmserve::replicas_for(40, local.users_per_server, 0.2) == 8
    error_message = "40 users at 7 per server with 20 % headroom need 8 servers."
  }
}
