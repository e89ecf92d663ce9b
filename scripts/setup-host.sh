#!/usr/bin/env bash
# Prepare a fresh Debian machine (as root) for the tests and the quickstart: install what
# is missing and start dockerd if no engine answers. Idempotent; progress goes to stderr.
set -euo pipefail

log() { printf 'setup-host: %s\n' "$*" >&2; }

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
# promtool checks the OpenMetrics rendering (check metrics, tsdb create-blocks-from).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" ca-certificates >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
	log "starting dockerd (log: /var/log/llmserve-dockerd.log)"
	# No systemd here: run it in the background, detached from this shell's session.
	setsid /usr/sbin/dockerd >/var/log/llmserve-dockerd.log 2>&1 < /dev/null &
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && break
		sleep 0.5
	done
	docker info >/dev/null 2>&1 || { tail -20 /var/log/llmserve-dockerd.log >&2; log "dockerd did not start"; exit 1; }
fi
log "docker engine API $(docker version --format '{{.Server.APIVersion}}')"
