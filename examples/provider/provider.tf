# Local Docker Engine (the default; DOCKER_HOST, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY apply).
provider "llmserve" {}

# A remote engine over TCP with verified TLS:
# provider "llmserve" {
#   docker_host = "tcp://gpu-host.example.com:2376"
#   ca_pem      = file("~/.docker/gpu-host/ca.pem")
#   cert_pem    = file("~/.docker/gpu-host/cert.pem")
#   key_pem     = file("~/.docker/gpu-host/key.pem")
# }

# ... or over ssh (the host key must be in known_hosts):
# provider "llmserve" {
#   docker_host     = "ssh://deploy@gpu-host.example.com"
#   ssh_private_key = file("~/.ssh/id_ed25519")
# }

# Kubernetes for llmserve_inference_deployment (read only when such a resource is used):
# provider "llmserve" {
#   kubernetes {
#     config_path    = "~/.kube/config" # else KUBECONFIG, else ~/.kube/config
#     config_context = "inference"
#   }
# }
#
# ... or an API server with a token:
# provider "llmserve" {
#   kubernetes {
#     host                   = "https://k8s.example.com:6443"
#     token                  = var.kube_token
#     cluster_ca_certificate = file("~/.kube/example-ca.pem")
#   }
# }
