# Provider functions need the provider in required_providers (Terraform >= 1.8).
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

# The measured capacity as Prometheus text, e.g. for the node exporter's textfile collector;
# alert when a deployment's traffic approaches
# llmserve_maximum_passing_concurrency{workload="8K / 1K"}.
output "capacity_metrics" {
  value = provider::llmserve::report_openmetrics(file("${path.module}/results.json"))
}

# With hashicorp/local:
#
# resource "local_file" "capacity_metrics" {
#   filename = "/var/lib/node_exporter/textfile_collector/llmserve_capacity.prom"
#   content  = provider::llmserve::report_openmetrics(llmserve_capacity_benchmark.qwen.results_json)
# }
