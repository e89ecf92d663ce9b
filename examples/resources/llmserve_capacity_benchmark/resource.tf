variable "sglang_api_key" {
  type      = string
  sensitive = true
  ephemeral = true
}

# Find, per workload, the highest concurrency at which p95 time to first token stays under 10 s.
resource "llmserve_capacity_benchmark" "qwen" {
  endpoint = "http://gpu-host.example.com:30000"
  model    = "qwen"
  api      = "chat"
  api_key  = var.sglang_api_key

  workloads = [
    { label = "2K / 512", input_tokens = 2048, output_tokens = 512 },
    { label = "8K / 1K", input_tokens = 8192, output_tokens = 1024 },
    { label = "16K / 2K", input_tokens = 16384, output_tokens = 2048 },
  ]

  # Every objective must hold in every confirmation trial. Add more as the product needs, e.g.
  # { metric = "output_token_throughput_per_user", percentile = 50, threshold_ms = 20 } (tokens/s)
  # or { metric = "goodput", threshold_ms = 95 } (percent of requests meeting every objective).
  slos = [
    { metric = "time_to_first_token", percentile = 95, threshold_ms = 10000 },
  ]
  search = { min_concurrency = 1, max_concurrency = 64 }
  trial  = { warmup_requests = 8, measured_requests = 64, confirmation_trials = 3, cache_flush = "auto" }

  # Re-run whenever the server is replaced.
  triggers = { server = "sglang-qwen-2bf7f16" }

  # One JSON line per finished trial; `tail -f` it during a long run. An interrupted run
  # applied again resumes from the trials recorded here.
  progress_file = "${path.module}/qwen-capacity.progress.jsonl"

  # The GPUs' exporter (dcgm-exporter started with -c 1000 for a reading a second): each trial
  # in results_json then carries its power, utilisation, memory, energy and joules per token.
  telemetry_endpoints = ["http://gpu-host.example.com:9400/metrics"]

  timeouts = { create = "12h" }

  lifecycle {
    postcondition {
      condition     = coalesce(self.maximum_passing_concurrency["8K / 1K"], 0) >= 7
      error_message = "The server no longer holds p95 TTFT < 10 s for 7 users at 8K in / 1K out."
    }
  }
}

output "capacity" {
  value = llmserve_capacity_benchmark.qwen.maximum_passing_concurrency
}
