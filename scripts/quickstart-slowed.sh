#!/usr/bin/env bash
# The quickstart on a machine twice as slow, emulated: the llama.cpp container gets half of
# this machine's CPUs (docker update --cpus, a CFS quota) the moment it exists, before the
# server is ready, so every request the demo measures runs at half speed. Prints the SLO the
# demo used and the capacity it found per workload, for
#
#   scripts/quickstart-slowed.sh              the SLO set from the machine's pace (the default)
#   TTFT_P95_MS=1500 scripts/quickstart-slowed.sh   a fixed SLO, as the quickstart had before
#   SLOW=1 scripts/quickstart-slowed.sh       full speed, for comparison
#   EXAMPLE=old.tf scripts/quickstart-slowed.sh   another version of examples/quickstart/main.tf
#                                             (git show <rev>:examples/quickstart/main.tf >old.tf)
#
# It deploys under its own name and port and destroys what it deployed. Run it alone on the
# machine: it is a measurement (flock /tmp/heavy.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
terraform="${TERRAFORM:-/usr/local/bin/terraform}"
slow="${SLOW:-2}"
name=llmserve-quickstart-slowed
export CHECKPOINT_DISABLE=1

scripts/setup-host.sh >&2
image=$(scripts/build-llamacpp-image.sh)
model=$(scripts/build-model.sh)
mkdir -p .cache/provider .cache/quickstart-slowed
CGO_ENABLED=0 go build -o .cache/provider/terraform-provider-llmserve .
cat >.cache/quickstart-slowed.tfrc <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/llmserve/llmserve" = "$root/.cache/provider"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$root/.cache/quickstart-slowed.tfrc"
work=.cache/quickstart-slowed
cp "${EXAMPLE:-examples/quickstart/main.tf}" "$work/main.tf"
rm -f "$work"/terraform.tfstate* "$work"/capacity.progress.*
vars=(-var "model_path=$model" -var "image=$image" -var "name=$name")
[[ -n "${TTFT_P95_MS:-}" ]] && vars+=(-var "ttft_p95_ms=$TTFT_P95_MS")

cpus=$(nproc)
quota=$(awk -v c="$cpus" -v s="$slow" 'BEGIN { printf "%.2f", c / s }')
watcher=""
if [[ "$slow" != 1 ]]; then
	(
		for _ in $(seq 1 600); do
			if docker update --cpus "$quota" "$name" >/dev/null 2>&1; then
				echo "quickstart-slowed: $name limited to $quota of $cpus CPUs" >&2
				exit 0
			fi
			sleep 0.2
		done
	) &
	watcher=$!
fi
cleanup() {
	[[ -n "$watcher" ]] && kill "$watcher" 2>/dev/null || true
	(cd "$work" && "$terraform" destroy -auto-approve -input=false "${vars[@]}" >/dev/null 2>&1) || true
}
trap cleanup EXIT

printf 'load before: %s\n' "$(cat /proc/loadavg)"
rc=0
(cd "$work" && "$terraform" apply -auto-approve -input=false -no-color "${vars[@]}") >"$work/apply.log" 2>&1 || rc=$?
printf 'load after: %s\n' "$(cat /proc/loadavg)"
grep -E '^(Error|Warning):|condition|holds p95|answered no request' "$work/apply.log" || true
if [[ $rc -eq 0 ]]; then
	(cd "$work" && { "$terraform" output -json ttft_p95_ms 2>/dev/null || echo "(no ttft_p95_ms output: a fixed SLO)"; } && "$terraform" output -json maximum_passing_concurrency && "$terraform" output -json first_failing_concurrency)
fi
echo "quickstart-slowed: apply exit $rc (server at 1/$slow of the machine; log $work/apply.log)"
