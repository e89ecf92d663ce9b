#!/usr/bin/env bash
# On a lent GPU machine (run from the .dev/ that scripts/device/pack-vulkan.sh fills): a model
# of a real model's shape, measured by the seed's protocol scaled to the device's time.
#
#   1. cmd/ggufgen writes a random-weight GGUF of the shape (SHAPE, below): the weights mean
#      nothing, the compute is the real model's (every matmul, the KV cache, the vocabulary).
#   2. The packed llama.cpp serves it on the GPU through the vendor's Vulkan driver: every
#      layer offloaded, SLOTS slots, each with room for the longest workload.
#   3. For each workload (WORKLOADS: the seed's input lengths 2K, 8K and 16K with shorter
#      outputs) cmd/searchvsgrid runs, against that one server: the adaptive search, the
#      exhaustive grid (every concurrency from 1, all confirmation trials, up to the first
#      failing level), and the search again. Every one of them: p95 TTFT < TTFT_MS, K
#      confirmation trials, the cache flushed before each trial (llama.cpp: cache_prompt
#      false), the engine warm-up (ENGINE_WARMUP requests at 1, 2, 4, … slots).
#   4. A table on stdout and in $OUT/realsize.txt: per workload, each run's boundary (maximum
#      passing / first failing concurrency), its wall-clock (the time the GPU was held for it:
#      nothing else runs on the server), its trials, and the grid's time over the search's.
#
# Everything it wrote: $OUT/realsize.tgz (the server's log, the devices, each run's trials).
# Ready for a device; checked on lavapipe (Mesa's Vulkan on the CPU) with SHAPE=tiny inside
# the llmserve/llamacpp-vulkan image:
#
#   scripts/device/pack-vulkan.sh
#   docker run --rm --network none -v "$PWD/.dev:/pack:ro" -v /tmp/out:/out -e OUT=/out \
#     -e LLAMA_SERVER=/usr/bin/llama-server -e GGML_VK_VISIBLE_DEVICES=0 \
#     -e SHAPE=tiny -e WORKLOADS="64/4 128/4 256/4" -e SLOTS=2 -e TTFT_MS=... \
#     --entrypoint bash llmserve/llamacpp-vulkan:latest /pack/realsize-vulkan.sh
#
# Environment (defaults for a real-size run on one H100 or H200 in about ten minutes):
#   SHAPE          qwen3-4b (default), qwen3-8b, or tiny (ggufgen's defaults); SHAPE_ARGS
#                  adds or overrides ggufgen flags
#   WORKLOADS      "IN/OUT ..." (default "2048/32 8192/32 16384/32")
#   TTFT_MS        p95 TTFT objective (default 10000, the seed's)
#   K              confirmation trials (default 2; the seed's 3 costs half again)
#   MEASURED       measured requests a trial (default 16), WARMUPS per trial (default 2)
#   MAX_C          highest concurrency searched (default SLOTS)
#   SLOTS          llama-server --parallel (default 16)
#   ENGINE_WARMUP  trial.engine_warmup_requests (default 16, the provider's on Vulkan)
#   SEQUENCE       what runs per workload (default search,grid,search)
#   WORKLOAD_LIMIT seconds one workload's runs may take before they are cut (default 600)
#   LOAD_LIMIT     seconds the server may take to load the model (default 900)
set -u
FINAL=${OUT:-/tmp/out}; mkdir -p "$FINAL"
D=$(cd "$(dirname "$0")" && pwd)
W=${WORK:-/tmp/realsize}; rm -rf "$W"; mkdir -p "$W/out"
OUT=$W/out
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; tar -czf "$FINAL/realsize.tgz" -C "$W" out' EXIT
. "$D/vulkan-env.sh"

SHAPE=${SHAPE:-qwen3-4b}
# ggufgen writes llama's layout: head size is embd / heads, so Qwen3's 128-wide heads over a
# narrower hidden size (4B: 2560) become 80 wide there, and Qwen3's q/k norms are left out;
# layers, widths, grouped KV heads, vocabulary and context are the model's (config.json).
case $SHAPE in
qwen3-8b) shape=(-embd 4096 -layers 36 -ff 12288 -heads 32 -heads-kv 8 -vocab 151936 -ctx 40960) ;;
qwen3-4b) shape=(-embd 2560 -layers 36 -ff 9728 -heads 32 -heads-kv 8 -vocab 151936 -ctx 40960) ;;
tiny) shape=() ;;
*) echo "SHAPE must be qwen3-8b, qwen3-4b or tiny, got $SHAPE" >&2; exit 2 ;;
esac
read -r -a extra <<<"${SHAPE_ARGS:-}"
WORKLOADS=${WORKLOADS:-2048/32 8192/32 16384/32}
SLOTS=${SLOTS:-16}
longest=0
for w in $WORKLOADS; do
  [[ $w =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] || { echo "WORKLOADS: $w is not IN/OUT" >&2; exit 2; }
  n=$((BASH_REMATCH[1] + BASH_REMATCH[2]))
  ((n > longest)) && longest=$n
done
# Each slot holds the longest prompt and its output, with room for the chat template.
per_slot=$((longest + 256))

(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || true) | tee "$OUT/gpu.txt"
"${SRV[@]}" --list-devices 2>&1 | tee "$OUT/devices.txt"
t0=$(date +%s)
"$D/ggufgen" "${shape[@]}" "${extra[@]}" -out "$W/model.gguf" 2>&1 | tail -1 | tee "$OUT/model.txt"
echo "model written in $(($(date +%s) - t0)) s" | tee -a "$OUT/model.txt"

( exec "${SRV[@]}" -m "$W/model.gguf" --host 127.0.0.1 --port 8080 --parallel "$SLOTS" --ctx-size $((SLOTS * per_slot)) \
  --metrics --alias realsize -ngl 999 --device Vulkan0 >"$OUT/server.log" 2>&1 ) &
pid=$!
# Up when /health answers 200 (bash's /dev/tcp: the device may have no curl); a server that
# exits (a model too large for the device) ends the run at once with its last lines.
healthy() {
  exec 3<>/dev/tcp/127.0.0.1/8080 2>/dev/null || return 1
  printf 'GET /health HTTP/1.0\r\n\r\n' >&3
  local status; read -r _ status _ <&3; exec 3<&-
  [[ $status == 200 ]]
}
t0=$(date +%s)
until healthy; do
  kill -0 $pid 2>/dev/null || { echo "llama-server exited while loading:"; tail -n 20 "$OUT/server.log"; exit 1; }
  (($(date +%s) - t0 > ${LOAD_LIMIT:-900})) && { echo "llama-server not up after ${LOAD_LIMIT:-900} s"; tail -n 20 "$OUT/server.log"; exit 1; }
  sleep 1
done
echo "server up in $(($(date +%s) - t0)) s" | tee "$OUT/load.txt"
grep -h -i 'offloaded\|model buffer size\|KV buffer size' "$OUT/server.log" | head -4 | tee -a "$OUT/load.txt"

: >"$OUT/runs.tsv"
for w in $WORKLOADS; do
  in=${w%/*} out=${w#*/}
  echo "== $w ($(date +%T))"
  timeout "${WORKLOAD_LIMIT:-600}" "$D/searchvsgrid" -endpoint http://127.0.0.1:8080 -model realsize -wait 1m \
    -input "$in" -output "$out" -ttft-ms "${TTFT_MS:-10000}" -k "${K:-2}" -measured "${MEASURED:-16}" -warmups "${WARMUPS:-2}" \
    -min 1 -max "${MAX_C:-$SLOTS}" -engine-warmup "${ENGINE_WARMUP:-16}" -sequence "${SEQUENCE:-search,grid,search}" \
    -tsv "$OUT/runs.tsv" 2>"$OUT/trials-$in-$out.log" | tee "$OUT/searchvsgrid-$in-$out.txt"
  rc=${PIPESTATUS[0]}
  [[ $rc -eq 0 ]] || echo "$w: searchvsgrid rc=$rc (124: cut at WORKLOAD_LIMIT); the table shows what finished"
done
{
  echo "shape $SHAPE (ggufgen ${shape[*]} ${extra[*]}): $(cat "$OUT/model.txt" | head -1)"
  echo "device: $(grep -m1 -v '^Available' "$OUT/devices.txt" | sed 's/^ *//')"
  echo "server: $SLOTS slots, --ctx-size $((SLOTS * per_slot)); p95 TTFT < ${TTFT_MS:-10000} ms, ${K:-2} confirmation trials, ${WARMUPS:-2} + ${MEASURED:-16} requests a trial, engine warm-up ${ENGINE_WARMUP:-16}, concurrency 1..${MAX_C:-$SLOTS}"
  echo
  printf '| workload | step | what | boundary (max passing / first failing) | wall-clock (GPU held) | trials |\n|---|---|---|---|---|---|\n'
  awk -F'\t' '{ printf "| %s | %s | %s | %s / %s | %.1f s | %s |\n", $1, $2, $3, $7, $8, $4, $5 }' "$OUT/runs.tsv"
  echo
  awk -F'\t' '
    !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
    $3 == "search" && !($1 in s) { s[$1] = $4; sb[$1] = $7 "/" $8; next }
    $3 == "search" { s2[$1] = $7 "/" $8; next }
    $3 == "grid" { g[$1] = $4; gb[$1] = $7 "/" $8 }
    END {
      for (i = 1; i <= n; i++) if ((w = order[i]) in g && w in s) {
        agree = (sb[w] == gb[w]) ? "agree" : "differ"
        again = (w in s2) ? ((s2[w] == sb[w]) ? ", the second search agrees" : ", the second search found " s2[w]) : ""
        printf "%s: search %s in %.1f s, grid %s in %.1f s (grid/search %.2f): boundaries %s%s\n", w, sb[w], s[w], gb[w], g[w], g[w] / s[w], agree, again
      }
    }' "$OUT/runs.tsv"
} | tee "$OUT/realsize.txt"
