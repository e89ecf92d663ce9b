#!/usr/bin/env bash
# Generate the tiny random-weight llama GGUF the real-engine tests and the quickstart load.
# Generation is deterministic and takes about a second, so it always runs: a model left by an
# older generator is replaced. Prints the model's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${LLMSERVE_MODEL:-$PWD/.cache/models/tiny-llama.gguf}"
mkdir -p "$(dirname "$model")"
go run ./cmd/ggufgen -out "$model.tmp" >&2
if cmp -s "$model.tmp" "$model"; then rm "$model.tmp"; else mv "$model.tmp" "$model"; fi
echo "$model"
