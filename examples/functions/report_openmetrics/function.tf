# Expose the measured capacity to Prometheus through the node exporter's textfile
# collector (needs hashicorp/local). Alert when a deployment's traffic approaches
# llmserve_maximum_passing_concurrency{workload="8K / 1K"}.
resource "local_file" "capacity_metrics" {
  filename = "/var/lib/node_exporter/textfile_collector/llmserve_capacity.prom"
  content  = provider::llmserve::report_openmetrics(llmserve_capacity_benchmark.qwen.results_json)
}
