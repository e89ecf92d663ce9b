# Provider functions need the provider in required_providers (Terraform >= 1.8).
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

locals {
  # A schema v1 document: a file, or llmserve_capacity_benchmark.<name>.results_json.
  trials_csv = provider::llmserve::report_csv(file("${path.module}/results.json"))
}

# One row per trial, every number unrounded, for a spreadsheet or a notebook.
output "trials_csv" {
  value = local.trials_csv
}

# CSV is easy to take apart in Terraform too: the trials that missed the SLO (fail) or
# whose requests failed (error).
output "failed_trials" {
  value = [
    for row in csvdecode(local.trials_csv) :
    "${row.workload} at ${row.concurrency} users, trial ${row.trial}: ${row.slo_value_ms} ms"
    if contains(["fail", "error"], row.verdict)
  ]
}
