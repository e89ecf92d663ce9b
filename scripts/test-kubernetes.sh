#!/usr/bin/env bash
# The Kubernetes acceptance tests against a real control plane: builds (cached) and starts
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback
# (scripts/kube-controlplane.sh), runs TestAccInferenceDeployment* with the real Terraform
# CLI and real llama-server engines on the pod IPs kwok assigns, and stops everything it
# started, also on failure or interrupt. Needs root (chroot for the engines, the pod CIDR
# route). KUBE_TEST_RUN narrows the tests (a go test -run pattern).
set -euo pipefail
cd "$(dirname "$0")/.."

export CHECKPOINT_DISABLE=1
export TF_ACC=1
export TF_ACC_TERRAFORM_PATH="${TF_ACC_TERRAFORM_PATH:-/usr/local/bin/terraform}"
unset TF_CLI_CONFIG_FILE

step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

step "llama.cpp rootfs and model"
scripts/build-llamacpp-image.sh --rootfs-only >/dev/null
scripts/build-model.sh >/dev/null

step "control plane binaries (cached in ${KUBE_TOOLS_CACHE:-/var/cache/llmserve-tools})"
t0=$(date +%s)
scripts/kube-controlplane.sh build
echo "binaries ready after $(($(date +%s) - t0)) s"

dir="$(mktemp -d /tmp/llmserve-kube.XXXXXX)"
cleanup() {
	local rc=$?
	scripts/kube-controlplane.sh stop "$dir" || true
	if [[ $rc != 0 ]]; then
		for f in "$dir"/*.log; do
			[[ -f "$f" ]] || continue
			echo "--- last lines of $f" >&2
			tail -n 15 "$f" >&2
		done
	fi
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "start the control plane"
scripts/kube-controlplane.sh start "$dir"
export LLMSERVE_TEST_KUBECONFIG="$dir/kubeconfig"

step "Kubernetes acceptance tests"
log="$dir/go-test.log"
go test -count=1 -p 1 -timeout 30m -run "${KUBE_TEST_RUN:-TestAccInferenceDeployment}" -v ./internal/provider/ 2>&1 | tee "$log"
# A test that skipped here proved nothing: the cluster was supposed to be there.
if grep -q -- '--- SKIP' "$log"; then
	echo "Kubernetes acceptance tests skipped although a cluster was started" >&2
	exit 1
fi
