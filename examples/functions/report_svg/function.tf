# Chart p95 TTFT of every confirmation trial against concurrency, with the SLO line, for a
# README or a dashboard (needs hashicorp/local).
resource "local_file" "capacity_chart" {
  filename = "${path.module}/capacity.svg"
  content  = provider::llmserve::report_svg(file("${path.module}/results/b70-qwen-sglang-aiperf.json"))
}
