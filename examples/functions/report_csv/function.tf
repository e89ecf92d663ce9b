# One row per confirmation trial, every number unrounded, for a spreadsheet or a notebook
# (needs hashicorp/local).
resource "local_file" "capacity_trials" {
  filename = "${path.module}/capacity-trials.csv"
  content  = provider::llmserve::report_csv(llmserve_capacity_benchmark.qwen.results_json)
}

# CSV is easy to take apart in Terraform too: the trials that missed the SLO.
output "failed_trials" {
  value = [
    for row in csvdecode(provider::llmserve::report_csv(llmserve_capacity_benchmark.qwen.results_json)) :
    "${row.workload} at ${row.concurrency} users, trial ${row.trial}: ${row.slo_value_ms} ms"
    if row.verdict == "fail"
  ]
}
