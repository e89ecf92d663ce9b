# Import a deployment created by this provider, by namespace/name. Its settings are read
# back from the Deployment's llmserve.dev/launch annotation; write-only secrets are not (set
# them again in the configuration).
terraform import llmserve_inference_deployment.qwen inference/qwen-vllm
