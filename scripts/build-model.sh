#!/usr/bin/env bash
# Generate the tiny random-weight llama GGUF the real-engine tests and the quickstart load,
# unless it already exists. Prints the model's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${LLMSERVE_MODEL:-$PWD/.cache/models/tiny-llama.gguf}"
if [ ! -s "$model" ]; then
	mkdir -p "$(dirname "$model")"
	go run ./tools/ggufgen -out "$model.tmp" >&2
	mv "$model.tmp" "$model"
fi
echo "$model"
