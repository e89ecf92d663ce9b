#!/usr/bin/env bash
# On a lent GPU machine (run from the .dev/ that scripts/device/pack-vulkan.sh fills): llama.cpp
# (Debian forky build, Vulkan backend) on the GPU through the vendor's Vulkan driver, measured
# by the provider binary's runner mode (capacity.Resume against 127.0.0.1), then the same server
# on the machine's CPUs (-ngl 0) for the same workload. Everything it wrote: $OUT/gpucheck.tgz.
# Checked on this repo's CI machine kind with lavapipe (ICD=<lvp_icd.json> GGML_VK_VISIBLE_DEVICES=0
# EXTRA_LIBS=<Mesa libs>); never yet on a GPU: no device machine was lent when it was written.
set -u
FINAL=${OUT:-/tmp/out}; mkdir -p "$FINAL"
D=$(cd "$(dirname "$0")" && pwd)
W=/tmp/gpucheck; rm -rf $W; mkdir -p $W
OUT=$W/out; mkdir -p $OUT
trap 'tar -czf $FINAL/gpucheck.tgz -C $W out; pkill -f "$W/vk/llama-server"' EXIT
tar -xJf $D/vk.tar.xz -C $W; L=$W/vk
xz -dc $D/terraform-provider-llmserve.xz > $W/provider; chmod +x $W/provider
mkdir -p /usr/lib/x86_64-linux-gnu/ggml/backends0 && cp $L/libggml-vulkan.so $L/libggml-cpu-*.so /usr/lib/x86_64-linux-gnu/ggml/backends0/
ICD=${ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
[[ -f $ICD ]] && export VK_DRIVER_FILES=$ICD
echo "ICD: ${VK_DRIVER_FILES:-none}"; [[ -f $ICD ]] && cat $ICD
LP=$L:${EXTRA_LIBS:-/usr/local/nvidia/lib64:/usr/local/nvidia/lib}
srv() { $L/ld-linux-x86-64.so.2 --library-path $LP $L/llama-server "$@"; }
(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv 2>&1 || true) | tee $OUT/gpu.txt
srv --list-devices 2>&1 | tee $OUT/devices.txt
$D/ggufgen -out $W/tiny.gguf 2>&1 | tail -1
thr=${THRESH:-250}; meas=${MEASURED:-32}
one() { # name, extra server args...
  local name=$1; shift
  ( exec $L/ld-linux-x86-64.so.2 --library-path $LP $L/llama-server -m $W/tiny.gguf --host 127.0.0.1 --port 8080 --parallel ${SLOTS:-16} --ctx-size ${CTX:-16384} --metrics --alias tiny-llama "$@" > $OUT/server-$name.log 2>&1 ) &
  local pid=$!
  for i in $(seq 1 120); do python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8080/health',timeout=2)" >/dev/null 2>&1 && break; sleep 0.5; done
  mkdir -p $W/$name/records
  sed -e "s#THRESH#$thr#; s#MEASURED#$meas#; s#RECDIR#$W/$name/records#" $D/spec-template.json > $W/$name/spec.json
  local t0=$(date +%s.%N)
  timeout ${RUN_LIMIT:-240} $W/provider runner $W/$name/spec.json > $OUT/events-$name.jsonl 2> $OUT/runner-$name.err
  echo "$name: runner rc=$? in $(python3 -c "print(round($(date +%s.%N) - $t0,1))") s"
  cp $W/$name/result.json $OUT/result-$name.json 2>/dev/null
  grep -h '"line"' $OUT/events-$name.jsonl | tail -n ${SHOW:-14} | cut -c1-260
  kill $pid; wait $pid 2>/dev/null
  grep -h -i 'offload\|Vulkan0\|buffer size\|ggml_vulkan' $OUT/server-$name.log | head -8
}
one gpu -ngl 99 --device Vulkan0
one cpu -ngl 0 --device none
