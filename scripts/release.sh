#!/usr/bin/env bash
# Builds a release with GoReleaser (pinned in tools/goreleaser/go.mod) into dist/.
#
#   scripts/release.sh snapshot   make release-snapshot: offline, from any commit; signed only
#                                 when GPG_FINGERPRINT names a key in the local keyring
#   scripts/release.sh release    make release: from a v* tag, signed (GPG_FINGERPRINT
#                                 required) and published (GITHUB_TOKEN)
#
#   RELEASE_TARGET=linux_amd64    build that one target instead of every OS/arch (the install
#                                 test uses it: the full matrix compiles the provider 8 times)
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-snapshot}"
config=.goreleaser.yml
args=(release --clean)

if [ -n "${RELEASE_TARGET:-}" ]; then
	os="${RELEASE_TARGET%_*}" arch="${RELEASE_TARGET#*_}"
	mkdir -p build
	config=build/goreleaser-$RELEASE_TARGET.yml
	sed -e "s/^    goos: \[.*\]\$/    goos: [$os]/" -e "s/^    goarch: \[.*\]\$/    goarch: [$arch]/" .goreleaser.yml >"$config"
	# Every build (the provider, llmserve-recompute) has one goos and one goarch line.
	want=$(grep -c -e '^    goos: \[' -e '^    goarch: \[' .goreleaser.yml)
	if [ "$want" -lt 2 ] || [ "$(grep -c -e "^    goos: \[$os\]\$" -e "^    goarch: \[$arch\]\$" "$config")" != "$want" ]; then
		echo "release: could not narrow .goreleaser.yml's goos/goarch lines to $RELEASE_TARGET" >&2
		exit 1
	fi
fi
args+=(--config "$config")

case "$mode" in
snapshot)
	args+=(--snapshot)
	if [ -z "${GPG_FINGERPRINT:-}" ]; then
		echo "release: GPG_FINGERPRINT is not set, the SHA256SUMS stay unsigned" >&2
		args+=(--skip=sign)
	fi
	;;
release)
	if [ -z "${GPG_FINGERPRINT:-}" ]; then
		echo "release: set GPG_FINGERPRINT to the signing key the registry knows; the registry refuses unsigned checksums" >&2
		exit 1
	fi
	;;
*)
	echo "usage: $0 snapshot|release" >&2
	exit 2
	;;
esac

go tool -modfile=tools/goreleaser/go.mod goreleaser "${args[@]}"

# GoReleaser uploads the manifest only when it publishes; a snapshot gets the same file in
# dist/ under its release name, which the SHA256SUMS already list.
version=$(jq -r .version dist/metadata.json)
cp terraform-registry-manifest.json "dist/terraform-provider-llmserve_${version}_manifest.json"
echo "release: dist/ holds terraform-provider-llmserve $version" >&2
