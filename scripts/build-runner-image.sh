#!/usr/bin/env bash
# The benchmark runner's image (runner = { kubernetes = { image = ... } }, or runner.docker.image
# where the engine host's architecture differs): the provider's Linux binary, FROM scratch, as
# its entrypoint; a runner Job starts it as `runner serve ...`. No registry is contacted.
#
#   scripts/build-runner-image.sh BINARY TAG [PLATFORM]   e.g. dist/provider_linux_arm64_v8.0/... \
#                                                         ghcr.io/llmserve/llmserve-runner:0.1.0-arm64 linux/arm64
#
# scripts/release.sh calls it for every Linux binary of a release.
set -euo pipefail

bin=${1:?usage: $0 BINARY TAG [PLATFORM]}
tag=${2:?usage: $0 BINARY TAG [PLATFORM]}
platform=${3:-}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/llmserve-runner"
chmod 0555 "$ctx/llmserve-runner"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY llmserve-runner /llmserve-runner
USER 65532:65532
ENTRYPOINT ["/llmserve-runner"]
DOCKERFILE
args=(build -q -t "$tag" --label "org.opencontainers.image.source=https://github.com/llmserve/terraform-provider-llmserve")
if [[ -n "$platform" ]]; then
	args+=(--platform "$platform")
fi
docker "${args[@]}" "$ctx" >/dev/null
echo "$tag"
