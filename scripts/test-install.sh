#!/usr/bin/env bash
# Installs a snapshot release the way users do and uses it: the zip GoReleaser made, from a
# filesystem_mirror named in a CLI config (no dev override, no network), `init`, `plan` and
# `providers lock`, with Terraform and with OpenTofu. It also checks the release layout: the
# zip holds only terraform-provider-llmserve_v<version> and llmserve-recompute, the binary
# carries that version, the SHA256SUMS cover the zip and the manifest, and their detached
# signature verifies; and that llmserve-recompute, as `init` unpacked it beside the provider,
# verifies a recorded result (-check exit 0) and refuses a forged capacity (exit 1).
#
# Only the host's linux/amd64 target is built (RELEASE_TARGET): every target is built by the
# same config, and the full matrix compiles the provider eight times, too long for CI.
#
#   TERRAFORM  Terraform CLI (default /usr/local/bin/terraform)
#   TOFU       OpenTofu CLI (default: scripts/build-opentofu.sh builds or reuses it)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
terraform="${TERRAFORM:-/usr/local/bin/terraform}"
tofu="${TOFU:-$(scripts/build-opentofu.sh)}"
export CHECKPOINT_DISABLE=1
unset TF_CLI_ARGS TF_PLUGIN_CACHE_DIR TF_CLI_CONFIG_FILE

fail() { echo "test-install: $*" >&2; exit 1; }

target=linux_amd64
# Signed with a throwaway key, so the signing step runs as in a release; the key and its
# agent live in a temporary GNUPGHOME that is removed at the end.
work=$(mktemp -d)
export GNUPGHOME="$work/gnupg"
mkdir -m 700 "$GNUPGHOME"
trap 'gpgconf --kill gpg-agent 2>/dev/null || true; rm -rf "$work"' EXIT
gpg --batch --quiet --passphrase '' --quick-gen-key 'llmserve install test <install-test@example.com>' ed25519 sign 1d 2>/dev/null
fingerprint=$(gpg --list-keys --with-colons | awk -F: '$1 == "fpr" { print $10; exit }')
RELEASE_TARGET=$target GPG_FINGERPRINT=$fingerprint scripts/release.sh snapshot >/dev/null
version=$(jq -r .version dist/metadata.json)
name=terraform-provider-llmserve
zip="dist/${name}_${version}_${target}.zip"
sums="dist/${name}_${version}_SHA256SUMS"
manifest="dist/${name}_${version}_manifest.json"

# The layout the registry and the mirror need.
[ -f "$zip" ] || fail "missing $zip; dist/ has: $(ls dist)"
[ "$(unzip -Z1 "$zip" | sort | tr '\n' ' ')" = "llmserve-recompute ${name}_v${version} " ] ||
	fail "$zip holds $(unzip -Z1 "$zip" | tr '\n' ' '), want only ${name}_v${version} and llmserve-recompute"
(cd dist && grep -E "  (${name}_${version}_${target}\.zip|${name}_${version}_manifest\.json)\$" "$(basename "$sums")" | sha256sum --quiet -c -) ||
	fail "$sums does not cover the zip and the manifest with their current digests"
[ "$(grep -c . "$sums")" = 2 ] || fail "$sums lists $(grep -c . "$sums") files, want the zip and the manifest"
[ "$(jq -c .metadata.protocol_versions "$manifest")" = '["6.0"]' ] || fail "$manifest does not declare protocol 6.0"
gpg --batch --quiet --verify "$sums.sig" "$sums" 2>/dev/null || fail "$sums.sig is missing or does not verify against $sums"
unzip -q "$zip" -d "$work/bin"
# -trimpath keeps -ldflags out of the build info, so look for the stamped string itself: the
# version exists nowhere else in the binary.
LC_ALL=C grep -aq -- "$version" "$work/bin/${name}_v${version}" ||
	fail "the binary does not carry version $version (main.version not stamped by -ldflags -X)"

# A packed filesystem mirror for both registries: OpenTofu resolves llmserve/llmserve to
# registry.opentofu.org, Terraform to registry.terraform.io.
for host in registry.terraform.io registry.opentofu.org; do
	mkdir -p "$work/mirror/$host/llmserve/llmserve"
	cp "$zip" "$work/mirror/$host/llmserve/llmserve/"
done
cat >"$work/cli.tfrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["registry.terraform.io/llmserve/*", "registry.opentofu.org/llmserve/*"]
  }
}
RC

run_cli() { # label cli
	local label=$1 cli=$2 dir="$work/$1" out
	mkdir -p "$dir"
	cat >"$dir/main.tf" <<TF
terraform {
  required_providers {
    llmserve = {
      source  = "llmserve/llmserve"
      version = "$version"
    }
  }
}

data "llmserve_capacity_report" "reference" {
  path = "$root/internal/results/testdata/reference.json"
}

output "max_users" {
  value = data.llmserve_capacity_report.reference.maximum_passing_concurrency
}

output "csv_header" {
  value = split("\n", provider::llmserve::report_csv(file("$root/internal/results/testdata/reference.json")))[0]
}
TF
	cd "$dir"
	export TF_CLI_CONFIG_FILE="$work/cli.tfrc"
	out=$("$cli" init -input=false -no-color 2>&1) || { echo "$out"; fail "$label init failed"; }
	grep -q "Installed llmserve/llmserve v$version" <<<"$out" || { echo "$out"; fail "$label init did not install v$version from the mirror"; }
	if grep -qi "dev_overrides\|development overrides" <<<"$out"; then fail "$label used a dev override"; fi
	# The recompute program, where init unpacked it: users of the registry have no checkout.
	local host=registry.terraform.io
	[ "$label" = opentofu ] && host=registry.opentofu.org
	local recompute=".terraform/providers/$host/llmserve/llmserve/$version/$target/llmserve-recompute"
	[ -x "$recompute" ] || fail "$label init did not unpack an executable $recompute: $(ls -R .terraform/providers)"
	local recorded="$root/internal/results/testdata/recorded"
	"$recompute" -results "$recorded/result.json" -records "$recorded/records" -check >/dev/null 2>"$dir/recompute.err" ||
		{ cat "$dir/recompute.err"; fail "$label: llmserve-recompute -check failed on the recorded result"; }
	sed 's/"maximum_passing_concurrency": 4/"maximum_passing_concurrency": 6/' "$recorded/result.json" >"$dir/forged.json"
	if "$recompute" -results "$dir/forged.json" -records "$recorded/records" -check >/dev/null 2>"$dir/recompute.err"; then
		fail "$label: llmserve-recompute -check accepted a capacity forged from 4 to 6"
	fi
	grep -q 'maximum_passing_concurrency states 6, but its trials give 4' "$dir/recompute.err" ||
		{ cat "$dir/recompute.err"; fail "$label: llmserve-recompute did not say why the forged capacity is refused"; }

	local h1
	h1=$(grep -o '"h1:[^"]*"' .terraform.lock.hcl | sed -n 1p)
	[ -n "$h1" ] || fail "$label init wrote no h1 hash to .terraform.lock.hcl"

	out=$("$cli" plan -input=false -no-color -out=tfplan 2>&1) || { echo "$out"; fail "$label plan failed"; }
	"$cli" show -json tfplan >plan.json
	jq -e '.planned_values.outputs.max_users.value | length > 0' plan.json >/dev/null ||
		fail "$label plan: the data source read no maximum_passing_concurrency"
	jq -e '.planned_values.outputs.csv_header.value | startswith("workload")' plan.json >/dev/null ||
		fail "$label plan: report_csv gave $(jq -c .planned_values.outputs.csv_header.value plan.json)"

	# providers lock reads the registries unless told otherwise, as a user pointing at a mirror does.
	rm .terraform.lock.hcl
	out=$("$cli" providers lock -no-color -fs-mirror="$work/mirror" -platform=$target 2>&1) || { echo "$out"; fail "$label providers lock failed"; }
	grep -q "$h1" .terraform.lock.hcl || { cat .terraform.lock.hcl; fail "$label providers lock recorded another hash than init ($h1)"; }
	out=$("$cli" init -input=false -no-color 2>&1) || { echo "$out"; fail "$label init with the lock file failed"; }
	cd "$root"
	echo "test-install: $label installed and planned llmserve/llmserve v$version from the mirror; lock hash $h1" >&2
}

run_cli terraform "$terraform"
run_cli opentofu "$tofu"
echo "test-install: ok (terraform $("$terraform" version -json | jq -r .terraform_version), $("$tofu" version | sed -n 1p))"
