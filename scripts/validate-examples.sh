#!/usr/bin/env bash
# terraform validate every example that needs only this provider (the function examples also
# use hashicorp/local, which cannot be installed offline), against a freshly built provider
# installed through a dev override.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
terraform="${TERRAFORM:-/usr/local/bin/terraform}"
mkdir -p .cache/provider
go build -o .cache/provider/terraform-provider-llmserve .
rc=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$rc" "$work"' EXIT
cat >"$rc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/llmserve/llmserve"  = "$root/.cache/provider"
    "registry.terraform.io/hashicorp/llmserve" = "$root/.cache/provider"
  }
  direct {}
}
RC
for dir in examples/provider examples/resources/* examples/data-sources/* examples/quickstart; do
	rm -rf "$work/ex" && cp -r "$dir" "$work/ex"
	if ! out=$(cd "$work/ex" && TF_CLI_CONFIG_FILE="$rc" CHECKPOINT_DISABLE=1 "$terraform" validate -no-color 2>&1); then
		printf '%s: terraform validate failed:\n%s\n' "$dir" "$out" >&2
		exit 1
	fi
	echo "valid: $dir"
done
