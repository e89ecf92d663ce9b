#!/usr/bin/env bash
# Every test of the project on a fresh machine (as root): installs and starts what the
# tests need (docker.io + dockerd, debootstrap), builds the llama.cpp engine image and the
# tiny model when missing, checks formatting, vet and that docs/ is generated from the
# current schemas, installs a release snapshot as users do, then runs unit and acceptance
# tests against the real Terraform CLI and OpenTofu.
set -euo pipefail
cd "$(dirname "$0")/.."

export CHECKPOINT_DISABLE=1
export TF_ACC=1
export TF_ACC_TERRAFORM_PATH="${TF_ACC_TERRAFORM_PATH:-/usr/local/bin/terraform}"
export PATH="$(dirname "$TF_ACC_TERRAFORM_PATH"):$PATH"
# The machine image points TF_CLI_CONFIG_FILE at a missing file; the tests write their own.
unset TF_CLI_CONFIG_FILE

step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

step "host setup"
scripts/setup-host.sh

# The Go tools compile from the module proxy on a fresh machine (several CPU-minutes, mostly
# OpenTofu); the engine image build below mostly waits on the network and disk, so they overlap.
step "Go tools in the background: OpenTofu, golangci-lint, GoReleaser"
tools_log=$(mktemp)
(
	set -e
	scripts/build-opentofu.sh
	go tool -modfile=tools/golangci-lint/go.mod golangci-lint version
	go tool -modfile=tools/goreleaser/go.mod goreleaser --version
) >"$tools_log" 2>&1 &
tools_pid=$!
trap 'kill "$tools_pid" 2>/dev/null || true' EXIT

step "llama.cpp engine images (CPU, Vulkan) and model"
scripts/build-llamacpp-image.sh >/dev/null
# The Vulkan variant shares the .deb cache; about 4 minutes more on 2 cores (Mesa's LLVM).
scripts/build-llamacpp-image.sh --vulkan >/dev/null
scripts/build-model.sh >/dev/null

step "waiting for the Go tools"
if ! wait "$tools_pid"; then
	cat "$tools_log" >&2
	echo "building the Go tools failed" >&2
	exit 1
fi
grep -h 'built OpenTofu' "$tools_log" || true

step "format, vet, generated docs"
make lint
make generate >/dev/null
if ! git diff --quiet -- docs/ || [ -n "$(git status --porcelain -- docs/)" ]; then
	git status --short -- docs/
	echo "docs/ is stale: run 'make generate' and commit the result" >&2
	exit 1
fi

step "examples validate against the built provider"
scripts/validate-examples.sh

tofu=$(scripts/build-opentofu.sh) # built above, cached in /var/cache/llmserve-tools

step "install test: a snapshot release zip from a filesystem mirror, Terraform and OpenTofu"
TOFU="$tofu" scripts/test-install.sh

step "unit and acceptance tests"
go test -count=1 -timeout 60m -p 2 -skip 'TestAccQuickstart|TestAccInferenceServer_llamaCppVulkanLavapipe' ./...

# Seeded from the fault corpus (malformed, truncated and oversized streams, impossible
# documents, cut and foreign journal lines); a few seconds each keeps CI short while every
# run explores a little further.
step "fuzz: SSE parser, results decoder, progress journal reader"
for target in FuzzSSEParse:./internal/load FuzzParse:./internal/results FuzzJournalRead:./internal/capacity; do
	go test -run '^$' -fuzz "^${target%%:*}\$" -fuzztime "${FUZZTIME:-5s}" "${target#*:}"
done

step "acceptance tests on OpenTofu"
TOFU="$tofu" scripts/testacc-opentofu.sh

# The real-engine chain runs alone: its SLO is set for a machine not also running other tests.
step "end to end: quickstart on llama.cpp in Docker"
go test -count=1 -timeout 20m -run 'TestAccQuickstart' -v ./internal/provider/

# The GPU path on a real Vulkan driver (lavapipe), alone for the same reason.
step "end to end: llama.cpp on Vulkan (lavapipe) in Docker"
go test -count=1 -timeout 20m -run 'TestAccInferenceServer_llamaCppVulkanLavapipe' -v ./internal/provider/

# Needs no Docker: a real control plane with kwok nodes, and llama-server on the pod IPs.
step "Kubernetes: llmserve_inference_deployment against a real API server"
scripts/test-kubernetes.sh
