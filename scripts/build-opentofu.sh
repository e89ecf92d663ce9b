#!/usr/bin/env bash
# Builds the OpenTofu CLI that CI runs the acceptance tests and the install test with, from
# the Go module proxy through the wrapper module in tools/opentofu (CI reaches no download
# site), and caches the binary outside the repository keyed by version, so a fresh clone on a
# machine that built it once reuses it. Prints the binary's path.
#   LLMSERVE_TOOLS_CACHE  cache root (default /var/cache/llmserve-tools)
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(cd tools/opentofu && go list -m -f '{{.Version}}' github.com/opentofu/opentofu)
version=${version#v}
dir="${LLMSERVE_TOOLS_CACHE:-/var/cache/llmserve-tools}/opentofu-$version"
bin="$dir/tofu"

if [ -x "$bin" ] && env -u TF_CLI_CONFIG_FILE "$bin" version 2>/dev/null | sed -n 1p | grep -qx "OpenTofu v$version"; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
start=$(date +%s)
# version.dev=no drops the "-dev" suffix a plain `go build` gives, as OpenTofu's release build does.
(cd tools/opentofu && CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
	-o "$bin.tmp" github.com/opentofu/opentofu/cmd/tofu)
mv "$bin.tmp" "$bin"
env -u TF_CLI_CONFIG_FILE "$bin" version | sed -n 1p | grep -qx "OpenTofu v$version" || { echo "build-opentofu: $bin does not report v$version" >&2; exit 1; }
echo "build-opentofu: built OpenTofu v$version in $(( $(date +%s) - start ))s" >&2
echo "$bin"
