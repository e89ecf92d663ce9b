#!/usr/bin/env bash
# Packs what scripts/device/check-vulkan.sh and realsize-vulkan.sh need on a lent GPU machine
# (no Docker, no network there) into .dev/ (git-ignored; carry it): llama-server and the
# libraries it loads from the llmserve/llamacpp-vulkan image (the forky loader, glibc and
# libggml-vulkan, about 15 MB as xz; Mesa's drivers are left out: the machine brings its
# vendor's Vulkan driver), the provider binary (its runner mode measures), searchvsgrid (the
# search against the grid) and ggufgen (the models are generated there, not carried). Run
# here, as root, with dockerd up:
#   scripts/build-llamacpp-image.sh --vulkan && scripts/device/pack-vulkan.sh
# then, on the device: cd .dev && ./check-vulkan.sh   (results in $OUT/gpucheck.tgz)
#                   or: cd .dev && ./realsize-vulkan.sh (results in $OUT/realsize.tgz)
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${1:-$(scripts/build-llamacpp-image.sh --vulkan)}
rm -rf .dev && mkdir -p .dev
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
cid=$(docker create "$image" /bin/true); docker export "$cid" | tar -x -C "$root"; docker rm "$cid" >/dev/null
lib=$root/usr/lib/x86_64-linux-gnu
mkdir -p "$root/pack/vk"
cp -L "$root/usr/bin/llama-server" "$root/pack/vk/"
for f in llama/libllama-server-impl.so libstdc++.so.6 libgcc_s.so.1 libc.so.6 libllama-common.so.0 libmtmd.so.0 \
	libllama.so.0 libggml.so.0 libggml-base.so.0 libssl.so.3 libcrypto.so.3 libm.so.6 libgomp.so.1 libz.so.1 \
	libzstd.so.1 libvulkan.so.1 ld-linux-x86-64.so.2; do
	cp -L "$lib/$f" "$root/pack/vk/"
done
cp "$lib"/ggml/backends0/libggml-vulkan.so "$lib"/ggml/backends0/libggml-cpu-{x64,haswell,icelake,sapphirerapids,zen4}.so "$root/pack/vk/"
tar -cJf .dev/vk.tar.xz -C "$root/pack" vk
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$root/provider" . && xz -T2 -6 -c "$root/provider" >.dev/terraform-provider-llmserve.xz
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o .dev/ggufgen ./cmd/ggufgen
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o .dev/searchvsgrid ./cmd/searchvsgrid
cp scripts/device/check-vulkan.sh scripts/device/realsize-vulkan.sh scripts/device/vulkan-env.sh scripts/device/spec-template.json .dev/
du -sh .dev
