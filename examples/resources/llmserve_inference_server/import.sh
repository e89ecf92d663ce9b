# Import an inference server container created by this provider, by name or id. Its launch
# settings are read back from the container's dev.llmserve.spec label; write-only secrets
# are not (set them again in the configuration).
terraform import llmserve_inference_server.qwen qwen-sglang
