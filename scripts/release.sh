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
#   RUNNER_IMAGE=repo             the benchmark runner's image (default ghcr.io/llmserve/llmserve-runner):
#                                 one per Linux binary, <repo>:<version>-<arch>, built with
#                                 scripts/build-runner-image.sh (a snapshot builds them when Docker
#                                 is there and says so when not; a release builds them, pushes them
#                                 and the multi-arch <repo>:<version>)
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

# The runner image of every Linux binary (runner = { kubernetes = { image = ... } }).
repo="${RUNNER_IMAGE:-ghcr.io/llmserve/llmserve-runner}"
if ! docker info >/dev/null 2>&1; then
	if [ "$mode" = release ]; then
		echo "release: the release builds the runner image: Docker Engine needed" >&2
		exit 1
	fi
	echo "release: no Docker Engine here, the runner image is not built" >&2
	exit 0
fi
images=()
for bin in dist/provider_linux_*/terraform-provider-llmserve_v*; do
	[ -f "$bin" ] || continue
	dir=$(basename "$(dirname "$bin")")
	arch=$(echo "$dir" | cut -d_ -f3)
	images+=("$(scripts/build-runner-image.sh "$bin" "$repo:$version-$arch" "linux/$arch")")
done
echo "release: runner images ${images[*]:-none}" >&2
if [ "$mode" = release ] && [ ${#images[@]} -gt 0 ]; then
	for img in "${images[@]}"; do docker push -q "$img"; done
	docker manifest create "$repo:$version" "${images[@]}"
	docker manifest push "$repo:$version"
fi
