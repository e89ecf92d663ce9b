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
