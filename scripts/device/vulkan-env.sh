# Sourced by the device scripts (check-vulkan.sh, realsize-vulkan.sh): how llama-server starts
# on the machine's Vulkan driver. Needs D (the .dev/ directory scripts/device/pack-vulkan.sh
# filled) and W (a work directory); sets SRV (the command that runs llama-server with its
# libraries: "${SRV[@]}" args, or exec it in a background subshell so $! is the server) and
# exports VK_DRIVER_FILES when a driver manifest is found.
#
#   LLAMA_SERVER  an installed llama-server to run instead of the packed one (inside the
#                 llmserve/llamacpp-vulkan image, to check a script on lavapipe)
#   ICD           the Vulkan driver manifest (lavapipe: /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
#   EXTRA_LIBS    library directories the driver needs beside the packed ones
if [[ -n ${LLAMA_SERVER:-} ]]; then
  SRV=("$LLAMA_SERVER")
else
  tar -xJf "$D/vk.tar.xz" -C "$W"; L=$W/vk
  mkdir -p /usr/lib/x86_64-linux-gnu/ggml/backends0 && cp "$L"/libggml-vulkan.so "$L"/libggml-cpu-*.so /usr/lib/x86_64-linux-gnu/ggml/backends0/
  # NVIDIA: the driver's own manifest names libGLX_nvidia.so.0, whose vkCreateInstance fails
  # in a headless container (no X display: "Could not get 'vkCreateInstance' via
  # 'vk_icdGetInstanceProcAddr'"); libEGL_nvidia.so.0 carries the same Vulkan ICD and works
  # (checked on an H200, driver 580.159.04, 2026-12-04), so a manifest naming it comes first.
  if [[ -z ${ICD:-} ]] && egl=$(find /usr/lib /usr/lib64 /usr/local/nvidia -name libEGL_nvidia.so.0 2>/dev/null | head -1) && [[ -n $egl ]]; then
    ICD=$W/nvidia_egl_icd.json
    printf '{"file_format_version":"1.0.1","ICD":{"library_path":"%s","api_version":"1.3.0"}}\n' "$egl" > "$ICD"
    EXTRA_LIBS=${EXTRA_LIBS:-$(dirname "$egl"):/usr/local/nvidia/lib64:/usr/lib/x86_64-linux-gnu}
  fi
  ICD=${ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
  LP=$L:${EXTRA_LIBS:-/usr/local/nvidia/lib64:/usr/local/nvidia/lib}
  SRV=("$L/ld-linux-x86-64.so.2" --library-path "$LP" "$L/llama-server")
fi
if [[ -n ${ICD:-} && -f $ICD ]]; then
  export VK_DRIVER_FILES=$ICD
fi
echo "ICD: ${VK_DRIVER_FILES:-none, the loader default}"; [[ -n ${VK_DRIVER_FILES:-} ]] && cat "$VK_DRIVER_FILES"
