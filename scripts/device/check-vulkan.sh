#!/usr/bin/env bash
# On a lent GPU machine (run from the .dev/ that scripts/device/pack-vulkan.sh fills): llama.cpp
# (Debian forky build, Vulkan backend) on the GPU through the vendor's Vulkan driver, measured
# by the provider binary's runner mode (capacity.Resume against 127.0.0.1), then the same server
# on the machine's CPUs (-ngl 0) for the same workload. Everything it wrote: $OUT/gpucheck.tgz.
# Checked on this repo's CI machine kind with lavapipe (ICD=<lvp_icd.json> GGML_VK_VISIBLE_DEVICES=0
# EXTRA_LIBS=<Mesa libs>), and on a lent NVIDIA H200 (driver 580.159.04) through its EGL ICD.
set -u
FINAL=${OUT:-/tmp/out}; mkdir -p "$FINAL"
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/gpucheck; rm -rf $W; mkdir -p $W
OUT=$W/out; mkdir -p $OUT
trap 'tar -czf $FINAL/gpucheck.tgz -C $W out; pkill -f "$W/vk/llama-server"' EXIT
xz -dc $D/terraform-provider-llmserve.xz > $W/provider; chmod +x $W/provider
. $D/vulkan-env.sh
(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv 2>&1 || true) | tee $OUT/gpu.txt
"${SRV[@]}" --list-devices 2>&1 | tee $OUT/devices.txt
$D/ggufgen -out $W/tiny.gguf 2>&1 | tail -1
thr=${THRESH:-250}; meas=${MEASURED:-32}
one() { # name, extra server args...
  local name=$1; shift
  ( exec "${SRV[@]}" -m $W/tiny.gguf --host 127.0.0.1 --port 8080 --parallel ${SLOTS:-16} --ctx-size ${CTX:-16384} --metrics --alias tiny-llama "$@" > $OUT/server-$name.log 2>&1 ) &
  local pid=$!
  for i in $(seq 1 120); do python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8080/health',timeout=2)" >/dev/null 2>&1 && break; sleep 0.5; done
  # ENGINE_WARMUP=N sets trial.engine_warmup_requests. REPEAT=2 measures the same server again: the second run finds the engine warm (pipelines
  # compiled on first use, which the first trial after a Vulkan start pays for).
  for run in $(seq 1 ${REPEAT:-1}); do
    local tag=$name; [[ $run -gt 1 ]] && tag=$name-run$run
    mkdir -p $W/$tag/records
    sed -e "s#THRESH#$thr#; s#MEASURED#$meas#; s#EWARM#${ENGINE_WARMUP:-0}#; s#RECDIR#$W/$tag/records#" $D/spec-template.json > $W/$tag/spec.json
    local t0=$(date +%s.%N)
    timeout ${RUN_LIMIT:-240} $W/provider runner $W/$tag/spec.json > $OUT/events-$tag.jsonl 2> $OUT/runner-$tag.err
    echo "$tag: runner rc=$? in $(python3 -c "print(round($(date +%s.%N) - $t0,1))") s"
    cp $W/$tag/result.json $OUT/result-$tag.json 2>/dev/null
    grep -h '"line"' $OUT/events-$tag.jsonl | tail -n ${SHOW:-14} | cut -c1-260
  done
  kill $pid; wait $pid 2>/dev/null
  grep -h -i 'offload\|Vulkan0\|buffer size\|ggml_vulkan' $OUT/server-$name.log | head -8
}
for which in ${WHICH:-gpu cpu}; do # WHICH=gpu skips the CPU comparison
  case $which in
  gpu) one gpu -ngl 99 --device Vulkan0 ;;
  cpu) one cpu -ngl 0 --device none ;;
  esac
done
