# Provider functions need the provider in required_providers (Terraform >= 1.8).
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

# A Markdown capacity report: setup, boundaries per workload, every confirmation trial.
# The argument is a schema v1 document: a file, or llmserve_capacity_benchmark.<name>.results_json.
output "capacity_report" {
  value = provider::llmserve::report_markdown(file("${path.module}/results.json"))
}

# Write it next to the configuration with hashicorp/local:
#
# resource "local_file" "capacity_report" {
#   filename = "${path.module}/CAPACITY.md"
#   content  = provider::llmserve::report_markdown(llmserve_capacity_benchmark.qwen.results_json)
# }
