#!/usr/bin/env bash
# The acceptance tests on OpenTofu (built and cached by scripts/build-opentofu.sh), beside the
# Terraform run of scripts/test-all.sh. Needs what those tests need: dockerd and the test
# image's toolchain (scripts/setup-host.sh).
#
# Every acceptance test runs except three, which exercise nothing the CLI does differently and
# are the slowest: TestAccInferenceServer_remoteTLS and _remoteSSH test the provider's own
# Docker transports (a second dockerd, an sshd), and TestAccQuickstart runs the real llama.cpp
# chain alone with an SLO set for an otherwise idle machine (so does
# TestAccInferenceServer_llamaCppVulkanLavapipe, on lavapipe). Terraform runs all of them.
# TestAccInferenceServer_inPlaceChangeThenImport is skipped too, for a harness limit: its
# import-block step (ImportBlockWithID) writes a configuration without the provider's
# namespace, which OpenTofu resolves as hashicorp/llmserve in its registry (offline: "no such
# host"). Its other steps are the lifecycle test's, which runs here; Terraform runs it whole.
#
# TF_ACC_PROVIDER_NAMESPACE=llmserve: the test harness then registers the in-process provider
# as registry.terraform.io/llmserve/llmserve only; its default adds the legacy "-" namespace,
# which OpenTofu refuses to parse.
set -euo pipefail
cd "$(dirname "$0")/.."

tofu="${TOFU:-$(scripts/build-opentofu.sh)}"
# The machine image points TF_CLI_CONFIG_FILE at a missing file; no dev override may leak in.
unset TF_CLI_CONFIG_FILE TF_CLI_ARGS
export TF_ACC=1 CHECKPOINT_DISABLE=1 TF_ACC_TERRAFORM_PATH="$tofu" TF_ACC_PROVIDER_NAMESPACE=llmserve
"$tofu" version | sed -n 1p # sed reads it all: head would close the pipe early and pipefail would see SIGPIPE (exit 141)
go test -count=1 -timeout 40m -p 1 -run 'TestAcc' \
	-skip 'TestAccInferenceServer_remoteTLS|TestAccInferenceServer_remoteSSH|TestAccQuickstart|TestAccInferenceServer_llamaCppVulkanLavapipe|TestAccInferenceServer_inPlaceChangeThenImport' \
	./internal/provider/
