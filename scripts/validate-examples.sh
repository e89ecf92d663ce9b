#!/usr/bin/env bash
# Check every example the docs show, each on its own (copied alone into an empty directory, as
# a user would copy it), against a freshly built provider installed through a dev override:
#   - terraform validate, for every example;
#   - terraform plan, for those that need no inference server (data sources, functions and
#     guides marked plan-only): their outputs are computed at plan, so this runs the
#     functions on the shipped results document, and a failed check block fails the script.
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
    "registry.opentofu.org/llmserve/llmserve"  = "$root/.cache/provider"
    "registry.opentofu.org/hashicorp/llmserve" = "$root/.cache/provider"
  }
  direct {}
}
RC
tf() { TF_CLI_CONFIG_FILE="$rc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 "$terraform" "$@"; }

plan_only() {
	case "$1" in
	examples/data-sources/* | examples/functions/*) return 0 ;;
	examples/guides/*) [[ -e "$1/.plan-only" ]] ;;
	*) return 1 ;;
	esac
}

n=0
for dir in examples/provider examples/resources/* examples/data-sources/* examples/functions/* examples/guides/* examples/quickstart; do
	[[ -d "$dir" ]] || continue
	rm -rf "$work/ex" && cp -rL "$dir" "$work/ex" # -L: shared files are symlinks in the repository
	if ! out=$(cd "$work/ex" && tf validate -no-color 2>&1); then
		printf '%s: terraform validate failed:\n%s\n' "$dir" "$out" >&2
		exit 1
	fi
	what=valid
	if plan_only "$dir"; then
		if ! out=$(cd "$work/ex" && tf plan -input=false -no-color 2>&1); then
			printf '%s: terraform plan failed:\n%s\n' "$dir" "$out" >&2
			exit 1
		fi
		# A check block that fails is only a warning to Terraform; an example must pass its own.
		if grep -q 'Warning: Check block assertion failed' <<<"$out"; then
			printf '%s: a check block failed at plan:\n%s\n' "$dir" "$out" >&2
			exit 1
		fi
		what="valid, planned"
	fi
	echo "$what: $dir"
	n=$((n + 1))
done
echo "validate-examples: $n examples checked"
