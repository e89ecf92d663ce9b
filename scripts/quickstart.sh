#!/usr/bin/env bash
# The README's first command: from a fresh Debian machine (as root) to a deployed llama.cpp
# server with its measured SLO capacity, in one terraform apply.
#
#   scripts/quickstart.sh apply     set up what is missing, deploy, measure, gate, print
#   scripts/quickstart.sh remeasure measure again (after a failed gate the result stays in
#                                   state and a plain apply fails at plan: -replace the benchmark)
#   scripts/quickstart.sh destroy   remove the container (and forget the result)
#
# TF_VAR_name and TF_VAR_host_port pick another container name or host port when another
# quickstart (or anything else) holds the defaults.
#
# The provider is installed through a dev override in a CLI config generated under .cache/,
# so the user's own Terraform configuration is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
action="${1:-apply}"
terraform="${TERRAFORM:-/usr/local/bin/terraform}"
export CHECKPOINT_DISABLE=1

step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)" >&2; }
start=$(date +%s)

step "host setup"
scripts/setup-host.sh

step "llama.cpp engine image"
image=$(scripts/build-llamacpp-image.sh)
step "tiny model"
model=$(scripts/build-model.sh)

step "provider (dev override)"
mkdir -p .cache/provider
# Static (CGO_ENABLED=0), as the release is, so the binary can also be the benchmark runner.
CGO_ENABLED=0 go build -o .cache/provider/terraform-provider-llmserve .
cat >.cache/quickstart.tfrc <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/llmserve/llmserve" = "$root/.cache/provider"
    "registry.opentofu.org/llmserve/llmserve" = "$root/.cache/provider"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$root/.cache/quickstart.tfrc"

cd examples/quickstart
vars=(-var "model_path=$model" -var "image=$image")
replace=()
case "$action" in
remeasure)
	replace=(-replace=llmserve_capacity_benchmark.tiny)
	;&
apply)
	step "terraform apply (deploy, wait until it generates, measure; follow it with: tail -f examples/quickstart/capacity.progress.log)"
	if ! "$terraform" apply -auto-approve -input=false "${vars[@]}" "${replace[@]}"; then
		cat >&2 <<MSG

quickstart: the apply failed (the messages above say why). What recovers:
  - the gate failed (the server held fewer users than minimum_capacity): measure again with
      scripts/quickstart.sh remeasure
    or lower the gate (TF_VAR_minimum_capacity=0 scripts/quickstart.sh apply);
  - the name or port is taken: TF_VAR_name=llmserve-quickstart-2 TF_VAR_host_port=8081 scripts/quickstart.sh apply;
  - to remove everything: make quickstart-destroy
MSG
		exit 1
	fi
	step "capacity per workload (p95 TTFT SLO)"
	"$terraform" output -json maximum_passing_concurrency
	"$terraform" output -raw report_markdown
	printf '\nquickstart: done in %ss; remove it with: make quickstart-destroy\n' "$(($(date +%s) - start))" >&2
	;;
destroy)
	step "terraform destroy"
	"$terraform" destroy -auto-approve -input=false "${vars[@]}"
	rm -f capacity.progress.jsonl capacity.progress.log
	;;
*)
	echo "usage: $0 apply|remeasure|destroy" >&2
	exit 2
	;;
esac
