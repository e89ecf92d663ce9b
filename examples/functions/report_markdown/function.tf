# Publish a Markdown capacity report next to the configuration (needs hashicorp/local).
resource "local_file" "capacity_report" {
  filename = "${path.module}/CAPACITY.md"
  content  = provider::llmserve::report_markdown(file("${path.module}/results/b70-qwen-sglang-aiperf.json"))
}

# Or straight from a benchmark run:
output "capacity_report" {
  value = provider::llmserve::report_markdown(llmserve_capacity_benchmark.qwen.results_json)
}
