# Provider functions need the provider in required_providers (Terraform >= 1.8).
terraform {
  required_providers {
    llmserve = {
      source = "llmserve/llmserve"
    }
  }
}

# p95 TTFT of every trial against concurrency (or offered request rate, or a replay's
# speed-up), per workload, with the SLO line,
# as an SVG image for a README or a dashboard.
output "capacity_chart" {
  value = provider::llmserve::report_svg(file("${path.module}/results.json"))
}

# With hashicorp/local:
#
# resource "local_file" "capacity_chart" {
#   filename = "${path.module}/capacity.svg"
#   content  = provider::llmserve::report_svg(llmserve_capacity_benchmark.qwen.results_json)
# }
