terraform {
  required_version = ">= 1.8"
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "~> 0.1"
    }
  }
}

provider "llmserve" {
  kubernetes {
    config_path    = "~/.kube/config"
    config_context = "inference"
  }
}

variable "peak_users" {
  description = "Concurrent users at peak on the 8K / 1K workload."
  type        = number
  default     = 40
}

variable "cost_per_hour" {
  description = "What one replica costs per hour (here its 4 GPUs)."
  type        = number
  default     = 18
}

variable "headroom" {
  description = "Fraction of each replica's measured capacity kept free (bursts, a replica restarting)."
  type        = number
  default     = 0.2
}

# One replica's capacity, measured against one replica of the same settings and archived
# (results.json here: 7 users at 8K / 1K). The data source reads it at plan, so it can size
# the deployment in the same plan.
data "llmserve_capacity_report" "one_replica" {
  path          = "${path.module}/results.json"
  cost_per_hour = var.cost_per_hour # what the measured replica costs: gives cost per workload
}

locals {
  per_replica = data.llmserve_capacity_report.one_replica.maximum_passing_concurrency["8K / 1K"]
  # 40 users / (7 × 0.8) = 7.1: 8 replicas.
  replicas = provider::llmserve::replicas_for(var.peak_users, local.per_replica, var.headroom)
}

resource "llmserve_inference_deployment" "qwen" {
  name                 = "qwen-sglang"
  namespace            = "inference"
  image                = "lmsysorg/sglang:v0.5.4"
  engine               = "sglang"
  model                = "Qwen/Qwen3-8B"
  tensor_parallel_size = 1
  accelerator          = "cuda"
  replicas             = local.replicas

  lifecycle {
    precondition {
      condition     = !data.llmserve_capacity_report.one_replica.capacity_bounded_by_search["8K / 1K"]
      error_message = "The archived capacity is the edge of its search, not the capacity: measure again with a higher search.max_concurrency before sizing on it."
    }
  }
}

output "replicas" {
  value = local.replicas
}

# What the capacity costs: per concurrent user-hour and per million output tokens at the
# boundary of one replica, and the deployment per month (730 hours).
output "cost" {
  value = {
    per_user_hour          = data.llmserve_capacity_report.one_replica.cost["8K / 1K"].cost_per_concurrent_user_hour
    per_million_out_tokens = data.llmserve_capacity_report.one_replica.cost["8K / 1K"].cost_per_million_output_tokens
    per_month              = local.replicas * var.cost_per_hour * 730
  }
}
