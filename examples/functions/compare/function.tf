# Provider functions need the provider in required_providers (Terraform >= 1.8).
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

# Two schema v1 results of the same protocol: the release in production (baseline.json)
# and a candidate measured the same way (candidate.json, here a server 15 % slower).
locals {
  comparison = provider::llmserve::compare(
    file("${path.module}/baseline.json"),
    file("${path.module}/candidate.json"),
  )
}

# ["1K / 16"]: the workloads whose verdict is "regressed".
output "regressed" {
  value = local.comparison.regressed
}

# The workloads the trials could not judge ("inconclusive"): neither a regression beyond the
# noise nor shown within ±10 %; their notes say what would decide it. Here none.
output "inconclusive" {
  value = local.comparison.inconclusive
}

# One line per workload with its verdict and figures, for an error message:
# 1K / 16: regressed: p95 time_to_first_token +11.5 % (noise ± 3.5 %, t = 3.2, needs 2.8; interval +1.4 to +22.6 %) ...
output "summary" {
  value = local.comparison.summary
}

# Per workload: both capacities and their difference, and each objective's values at the
# levels both runs measured (concurrencies here; offered rates or speed-ups for open-loop
# and replay results, on their own axis).
output "capacity_change" {
  value = { for label, w in local.comparison.workloads : label => w.capacity_change }
}
