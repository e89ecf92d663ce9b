terraform {
  required_version = ">= 1.8"
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

variable "users" {
  description = "Concurrent users on the 8K / 1K workload: quiet hours and peak."
  type        = object({ quiet = number, peak = number })
  default     = { quiet = 6, peak = 40 }
}

variable "headroom" {
  description = "Fraction of each replica's measured capacity the autoscaler keeps free."
  type        = number
  default     = 0.2
}

# One replica's capacity, measured against one replica and archived (7 users at 8K / 1K).
data "llmserve_capacity_report" "one_replica" {
  path = "${path.module}/results.json"
}

locals {
  label       = "8K / 1K"
  per_replica = data.llmserve_capacity_report.one_replica.maximum_passing_concurrency[local.label]
  # The autoscaler's target: requests in flight per replica, 7 × (1 − 0.2) = 5.6.
  target = local.per_replica * (1 - var.headroom)
  # Quiet hours: 6 / 5.6 → 2 replicas; peak: 40 / 5.6 → 8.
  min_replicas = max(1, provider::llmserve::replicas_for(var.users.quiet, local.per_replica, var.headroom))
  max_replicas = provider::llmserve::replicas_for(var.users.peak, local.per_replica, var.headroom)
  # Requests in flight on one SGLang replica: running plus queued (the engine's own series,
  # sglang:num_running_reqs and sglang:num_queue_reqs; vLLM: vllm:num_requests_running and
  # vllm:num_requests_waiting; llama.cpp: llamacpp:requests_processing and requests_deferred).
  in_flight = "sum(sglang:num_running_reqs{namespace=\"inference\",service=\"qwen-sglang\"}) + sum(sglang:num_queue_reqs{namespace=\"inference\",service=\"qwen-sglang\"})"
  # The slowest passing confirmation trial's request rate at the capacity: what one replica
  # completes per second while holding its SLO, for a rate limit.
  rps_per_replica = min([
    for t in one(
      [for w in data.llmserve_capacity_report.one_replica.workload_results : w if w.label == local.label]
    ).passing_trials : t.request_throughput_rps
  ]...)
}

# KEDA: desired replicas = ceil(in-flight requests / threshold), between the quiet-hours and
# peak sizes. Apply with kubectl or the kubernetes provider's kubernetes_manifest.
output "keda_scaled_object" {
  value = yamlencode({
    apiVersion = "keda.sh/v1alpha1"
    kind       = "ScaledObject"
    metadata   = { name = "qwen-sglang", namespace = "inference" }
    spec = {
      scaleTargetRef  = { name = "qwen-sglang" }
      minReplicaCount = local.min_replicas
      maxReplicaCount = local.max_replicas
      triggers = [{
        type = "prometheus"
        metadata = {
          serverAddress = "http://prometheus.monitoring:9090"
          query         = local.in_flight
          threshold     = format("%g", local.target)
        }
      }]
    }
  })
}

# HorizontalPodAutoscaler on a per-pod metric that a Prometheus adapter exposes from
# sglang:num_running_reqs (named sglang_num_running_reqs here): average value 5600m = 5.6.
output "horizontal_pod_autoscaler" {
  value = yamlencode({
    apiVersion = "autoscaling/v2"
    kind       = "HorizontalPodAutoscaler"
    metadata   = { name = "qwen-sglang", namespace = "inference" }
    spec = {
      scaleTargetRef = { apiVersion = "apps/v1", kind = "Deployment", name = "qwen-sglang" }
      minReplicas    = local.min_replicas
      maxReplicas    = local.max_replicas
      metrics = [{
        type = "Pods"
        pods = {
          metric = { name = "sglang_num_running_reqs" }
          target = { type = "AverageValue", averageValue = format("%dm", floor(local.target * 1000)) }
        }
      }]
    }
  })
}

# The gateway: past the measured capacity of every replica at peak, a request waits at the
# gateway (or is refused) instead of slowing everybody past the SLO. Envoy Gateway's
# BackendTrafficPolicy circuit breaker, for the route to the engine.
output "gateway_policy" {
  value = yamlencode({
    apiVersion = "gateway.envoyproxy.io/v1alpha1"
    kind       = "BackendTrafficPolicy"
    metadata   = { name = "qwen-sglang", namespace = "inference" }
    spec = {
      targetRefs     = [{ group = "gateway.networking.k8s.io", kind = "HTTPRoute", name = "qwen-sglang" }]
      circuitBreaker = { maxParallelRequests = local.max_replicas * local.per_replica }
    }
  })
}

# A rate limit instead, from the request rate one replica sustained at its capacity (8K / 1K
# requests are long: about 8 a minute per replica here).
output "requests_per_minute_at_peak" {
  value = floor(local.max_replicas * local.rps_per_replica * 60)
}

check "sizes" {
  assert {
    condition     = local.min_replicas == 2 && local.max_replicas == 8 && local.max_replicas * local.per_replica == 56
    error_message = "6 and 40 users at 7 per replica with 20 % headroom: 2 and 8 replicas, 56 requests in flight at most."
  }
}
