#!/usr/bin/env bash
# The benchmark measuring against its baseline on a real engine: the quickstart's llama.cpp
# server (the project's image and tiny model, 2 slots, 2 threads) measured in pairs by
# BenchmarkSequentialEndpoint (internal/compare): a baseline run, then the same server
# restarted and measured against it, then the same model on half the threads (1) measured
# against it. Each run starts from a fresh container. The load average is printed beside
# every pair: the tiny model on a shared CPU moves with it. Run it alone:
#
#   flock /tmp/heavy.lock scripts/sequential-llamacpp.sh [pairs, default 10]
#
# "scripts/sequential-llamacpp.sh start N" (re)starts the server with N threads; the
# benchmark calls it between runs. SEQUENTIAL_PORT (default 18082) is its host port,
# SEQUENTIAL_IMAGE the llama.cpp image (default llmserve/llamacpp:latest, which
# scripts/build-llamacpp-image.sh builds).
set -euo pipefail
cd "$(dirname "$0")/.."
port="${SEQUENTIAL_PORT:-18082}"
name="llmserve-sequential-$port"
start() {
	local threads="$1" image="${SEQUENTIAL_IMAGE:-llmserve/llamacpp:latest}" model="${SEQUENTIAL_MODEL:-$PWD/.cache/models/tiny-llama.gguf}"
	docker rm -f "$name" >/dev/null 2>&1 || true
	docker run -d --rm --name "$name" -p "127.0.0.1:$port:8080" -v "$model:/models/tiny-llama.gguf:ro" \
		"$image" --model /models/tiny-llama.gguf --alias tiny --ctx-size 4096 --parallel 2 --threads "$threads" --metrics \
		--host 0.0.0.0 --port 8080 >/dev/null
	for _ in $(seq 1 120); do
		curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	echo "llama-server did not become healthy on port $port" >&2
	docker logs "$name" >&2 || true
	return 1
}
if [[ "${1:-}" == "start" ]]; then
	start "$2"
	exit
fi
pairs="${1:-10}"
scripts/setup-host.sh >/dev/null
# The image scripts/build-llamacpp-image.sh builds (llmserve/llamacpp:latest unless
# SEQUENTIAL_IMAGE names another) and the tiny model.
SEQUENTIAL_MODEL=$(scripts/build-model.sh)
export SEQUENTIAL_MODEL
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
COMPARE_ENDPOINT="http://127.0.0.1:$port" COMPARE_PAIRS="$pairs" \
	COMPARE_RESTART="$PWD/scripts/sequential-llamacpp.sh start 2" COMPARE_SLOWER="$PWD/scripts/sequential-llamacpp.sh start 1" \
	go test -run '^$' -bench 'BenchmarkSequentialEndpoint$' -benchtime 1x -timeout 600m ./internal/compare/
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
