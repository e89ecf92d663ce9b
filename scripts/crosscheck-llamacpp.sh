#!/usr/bin/env bash
# Start llama-server (the project's image and tiny model) in Docker on a loopback port, run
# cmd/crosscheck against it (client TTFT/ITL vs llama.cpp's own timings), remove it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-host.sh
image=$(scripts/build-llamacpp-image.sh)
model=$(scripts/build-model.sh)
port="${CROSSCHECK_PORT:-18080}"
name="llmserve-crosscheck-$$"
docker run -d --rm --name "$name" -p "127.0.0.1:$port:8080" -v "$model:/models/tiny-llama.gguf:ro" \
	"$image" --model /models/tiny-llama.gguf --alias tiny --ctx-size 4096 --parallel 1 --host 0.0.0.0 --port 8080 >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 120); do
	curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
	sleep 0.5
done
go run ./cmd/crosscheck -endpoint "http://127.0.0.1:$port" -model tiny "$@"
