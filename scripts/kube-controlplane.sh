#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for the Kubernetes acceptance tests:
# etcd (Debian trixie's etcd-server), kube-apiserver, kube-controller-manager and
# kube-scheduler built from k8s.io/kubernetes (test/kubernetes/controlplane), and kwok
# for nodes with fake GPUs. No kubelet and no container runtime: kwok marks pods Running
# and Ready and gives them IPs from the pod CIDR, so a test can start a real llama-server
# on the pod IP and the API server's pod proxy reaches it.
#
# Every address is on the loopback device: service CIDR, etcd and the API server in 127/8;
# the pod CIDR 10.244.0.0/24 is routed to lo as local (ip route ... table local, added by
# start and removed by stop), because the API server refuses to proxy to a 127/8 pod IP
# (pkg/registry/core/pod ResourceLocation: proxyutil.IsProxyableIP refuses loopback and
# link-local), and pod_access = "api_proxy" is the default users meet. Packets to a pod IP
# never leave the host: the local route delivers them on lo.
#
# Usage:
#   scripts/kube-controlplane.sh build        build/fetch the binaries (cached, idempotent)
#   scripts/kube-controlplane.sh start DIR    start everything; DIR holds data, logs, pids,
#                                             certificates and DIR/kubeconfig
#   scripts/kube-controlplane.sh stop DIR     stop what start started in DIR (by pid file)
#
# Environment:
#   KUBE_TOOLS_CACHE   where binaries are cached (default /var/cache/llmserve-tools)
#   KUBE_BUILD_PROCS   parallel compile jobs for the build (default: every CPU; 1 on a shared machine)
#   KUBE_PORT_BASE     first of the loopback ports used (default 16443; uses 10 ports)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wrapper="$repo_root/test/kubernetes/controlplane"

KUBE_VERSION="$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$wrapper/go.mod")"
KWOK_VERSION="v0.8.0"
ETCD_SUITE="trixie"
ETCD_MIRROR="${ETCD_MIRROR:-http://deb.debian.org/debian}"
cache="${KUBE_TOOLS_CACHE:-/var/cache/llmserve-tools}"
kube_bin="$cache/kubernetes-$KUBE_VERSION"
kwok_bin="$cache/kwok-$KWOK_VERSION"
etcd_root="$cache/etcd-$ETCD_SUITE"
procs="${KUBE_BUILD_PROCS:-$(nproc)}"
port_base="${KUBE_PORT_BASE:-16443}"

# On lo only (see the header). The service CIDR's first address is the kubernetes
# Service's cluster IP; the pod CIDR is what kwok hands to pods, routed locally to lo.
SERVICE_CIDR="127.0.96.0/24"
POD_CIDR="10.244.0.0/24"

log() { printf '[%s] kube-controlplane: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

build_kubernetes() {
	local want=(kube-apiserver kube-controller-manager kube-scheduler)
	if [[ -f "$kube_bin/.complete" ]]; then
		return
	fi
	log "building ${want[*]} $KUBE_VERSION into $kube_bin (cold: many minutes on 2 cores)"
	local t0 tmp
	t0=$(date +%s)
	tmp="$kube_bin.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	local pkg=k8s.io/component-base/version
	local ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean"
	ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
	(
		cd "$wrapper"
		GOFLAGS=-mod=mod nice -n 10 go build -p "$procs" -trimpath -ldflags "$ldflags" -o "$tmp/" \
			k8s.io/kubernetes/cmd/kube-apiserver \
			k8s.io/kubernetes/cmd/kube-controller-manager \
			k8s.io/kubernetes/cmd/kube-scheduler
	)
	touch "$tmp/.complete"
	rm -rf "$kube_bin"
	mv "$tmp" "$kube_bin"
	log "built Kubernetes $KUBE_VERSION in $(($(date +%s) - t0)) s"
}

build_kwok() {
	if [[ -x "$kwok_bin/kwok" && -f "$kwok_bin/stages.yaml" ]]; then
		return
	fi
	log "building kwok $KWOK_VERSION into $kwok_bin"
	local t0
	t0=$(date +%s)
	mkdir -p "$kwok_bin.tmp.$$"
	GOBIN="$kwok_bin.tmp.$$" nice -n 10 go install -p "$procs" -trimpath -ldflags "-s -w" \
		"sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
	# kwok simulates nothing without stages; these are kwokctl's defaults (nodes become Ready
	# and keep a heartbeat, pods become Ready with an IP from --cidr, deleted pods go away).
	local src
	src="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
	for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		printf -- '---\n'
		cat "$src/$f"
	done >"$kwok_bin.tmp.$$/stages.yaml"
	rm -rf "$kwok_bin"
	mv "$kwok_bin.tmp.$$" "$kwok_bin"
	log "built kwok in $(($(date +%s) - t0)) s"
}

# Debian trixie's etcd-server (3.5+); bookworm's 3.4 is too old for the 1.34 API server's
# client. Fetched with apt from a private trixie source list, so the host's apt sources and
# installed packages stay as they are, and unpacked (not installed) into the cache.
fetch_etcd() {
	if [[ -x "$etcd_root/usr/bin/etcd" ]]; then
		return
	fi
	log "fetching etcd-server from Debian $ETCD_SUITE into $etcd_root"
	local apt_dir="$cache/apt-$ETCD_SUITE"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
	printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
		"$ETCD_MIRROR" "$ETCD_SUITE" >"$apt_dir/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=-"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
		-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Architecture=amd64")
	apt-get "${opts[@]}" -qq update
	local tmp
	tmp="$(mktemp -d)"
	(cd "$tmp" && apt-get "${opts[@]}" -qq download etcd-server)
	rm -rf "$etcd_root.tmp"
	mkdir -p "$etcd_root.tmp"
	dpkg-deb -x "$tmp"/etcd-server_*.deb "$etcd_root.tmp"
	rm -rf "$tmp" "$etcd_root"
	mv "$etcd_root.tmp" "$etcd_root"
	# sed, not head: head exits after one line and etcd, still writing, dies of SIGPIPE (141 under pipefail)
	"$etcd_root/usr/bin/etcd" --version | sed -n 1p >&2
}

build() {
	mkdir -p "$cache"
	fetch_etcd
	build_kwok
	build_kubernetes
}

# port N of the loopback ports this cluster uses.
port() { echo $((port_base + $1)); }

# start_bg NAME CMD...: runs CMD detached, logs to $dir/NAME.log, pid in $dir/NAME.pid.
start_bg() {
	local name=$1
	shift
	setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/$name.pid"
}

wait_for() {
	local what=$1 tries=$2
	shift 2
	for _ in $(seq 1 "$tries"); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	log "$what did not come up; last log lines:"
	tail -n 30 "$dir/$what.log" >&2 || true
	return 1
}

certs() {
	local pki="$dir/pki"
	mkdir -p "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=llmserve-test-ca" \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
		-keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,IP:127.0.96.1,DNS:localhost,DNS:kubernetes.default.svc\n' >"$pki/san.ext"
	openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 2 -extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	# One static admin token (group system:masters) for every component and the tests.
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$pki/token"
	printf '%s,admin,admin,system:masters\n' "$(cat "$pki/token")" >"$pki/tokens.csv"
	cat >"$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: llmserve-test
  cluster:
    server: https://127.0.0.1:$(port 0)
    certificate-authority: $pki/ca.crt
users:
- name: admin
  user:
    token: $(cat "$pki/token")
contexts:
- name: llmserve-test
  context: {cluster: llmserve-test, user: admin}
current-context: llmserve-test
KUBECONFIG
}

api() {
	curl -sf --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $(cat "$dir/pki/token")" \
		-H 'Content-Type: application/json' "$@"
}

# A fake GPU node: kwok owns it (annotation), the scheduler sees 2 cpus worth of capacity
# and 4 accelerators of each kind the tests request.
create_node() {
	api -X POST "https://127.0.0.1:$(port 0)/api/v1/nodes" -d @- >/dev/null <<NODE
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "$1", "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
   "labels": {"kubernetes.io/hostname": "$1", "kubernetes.io/os": "linux", "type": "kwok", "llmserve.dev/accelerator": "fake-gpu"}},
 "status": {
   "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4", "gpu.intel.com/i915": "4"},
   "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4", "gpu.intel.com/i915": "4"}}}
NODE
}

start() {
	dir=$1
	[[ -n "$dir" ]] || die "start needs a directory"
	local tool
	for tool in curl openssl python3 ip; do
		command -v "$tool" >/dev/null || die "$tool is needed (apt-get install $tool, or run scripts/setup-host.sh)"
	done
	build
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	[[ ! -e "$dir/apiserver.pid" ]] || die "$dir already holds a cluster; stop it first"
	local t0
	t0=$(date +%s.%N)
	certs
	# Each start is a fresh cluster: a stopped one's etcd data would hold its nodes and pods,
	# and creating the nodes again would conflict.
	rm -rf "$dir/etcd"
	start_bg etcd "$etcd_root/usr/bin/etcd" --name default --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$(port 1)" --advertise-client-urls "http://127.0.0.1:$(port 1)" \
		--listen-peer-urls "http://127.0.0.1:$(port 2)" --initial-advertise-peer-urls "http://127.0.0.1:$(port 2)" \
		--initial-cluster "default=http://127.0.0.1:$(port 2)" --unsafe-no-fsync --log-level warn
	wait_for etcd 60 curl -sf "http://127.0.0.1:$(port 1)/health"
	local pki="$dir/pki"
	# The endpoint reconciler would write the loopback advertise address into the kubernetes
	# Service's endpoints, which validation refuses; nothing here needs them. LimitRanger is
	# on by default; it is named so a change of default cannot take away the namespace CPU
	# limits the runner tests put their pods under (a LimitRange's default limits.cpu).
	start_bg apiserver "$kube_bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$(port 1)" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$(port 0)" \
		--service-cluster-ip-range "$SERVICE_CIDR" --endpoint-reconciler-type none \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" --enable-priority-and-fairness=false \
		--runtime-config resource.k8s.io/v1=true --enable-admission-plugins LimitRanger
	wait_for apiserver 240 api "https://127.0.0.1:$(port 0)/readyz"
	# Dynamic Resource Allocation (GA in 1.34, served by default; named so a change of
	# default cannot take it away): the scheduler allocates ResourceClaims from the
	# ResourceSlices a test publishes, the controller manager makes pods' claims.
	api "https://127.0.0.1:$(port 0)/apis/resource.k8s.io/v1" >/dev/null || die "the API server does not serve resource.k8s.io/v1"
	start_bg controller-manager "$kube_bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
		--leader-elect=false --bind-address 127.0.0.1 --secure-port "$(port 3)" \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
		--service-cluster-ip-range "$SERVICE_CIDR" --concurrent-deployment-syncs 2
	start_bg scheduler "$kube_bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" \
		--leader-elect=false --bind-address 127.0.0.1 --secure-port "$(port 4)"
	# A Job's pod runs until its process ends: the tests, playing the kubelet, start the
	# benchmark runner's real program on its pod IP and report its end; kwok's pod-complete
	# stage would mark it Succeeded the moment it runs, so it is left out.
	#
	# A deleted pod holding ResourceClaims (Dynamic Resource Allocation) goes as under a
	# kubelet: first a terminal phase, then away. The resourceclaim controller releases a
	# pod's claims only once the pod is terminal, and a pod deleted in the foreground (as a
	# Deployment's are) waits for its claims, its dependents: kwok's plain delete would leave
	# both waiting for each other. Pods without claims are deleted as kwok always did.
	python3 - "$kwok_bin/stages.yaml" >"$dir/stages.yaml" <<'PY'
import sys
docs = open(sys.argv[1]).read().split("\n---\n")
docs = [d for d in docs if "name: pod-complete" not in d]
claims = """    - key: '.spec.resourceClaims'
      operator: '{op}'
"""
out = []
for d in docs:
    if "name: pod-delete" not in d:
        out.append(d)
        continue
    sel = "      operator: 'Exists'\n"
    plain = d.replace(sel, sel + claims.format(op="DoesNotExist"), 1)
    out.append(plain)
    out.append(d.replace("name: pod-delete", "name: pod-delete-claims").replace(sel, sel + claims.format(op="Exists") +
        """    - key: '.status.phase'
      operator: 'NotIn'
      values: ['Pending', 'Running']
""", 1))
    out.append("""apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-terminate-claims
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
""" + claims.format(op="Exists") + """    - key: '.status.phase'
      operator: 'In'
      values: ['Pending', 'Running']
  next:
    statusTemplate: |
      phase: Failed
  immediateNextStage: true""")
print("\n---\n".join(out))
PY
	# Pod IPs are addresses of this host on lo: the engines and runners the tests start bind
	# them, and the API server's pod proxy dials them.
	ip route replace local "$POD_CIDR" dev lo table local || die "routing the pod CIDR $POD_CIDR to lo needs root (CAP_NET_ADMIN)"
	start_bg kwok "$kwok_bin/kwok" --kubeconfig "$dir/kubeconfig" -c "$dir/stages.yaml" \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--cidr "$POD_CIDR" --node-ip 127.0.0.1
	for n in kwok-gpu-0 kwok-gpu-1; do
		create_node "$n" || die "creating node $n failed"
	done
	wait_for kwok 120 nodes_ready
	# The default ServiceAccount must exist before pods can be created in the namespace.
	wait_for controller-manager 120 api "https://127.0.0.1:$(port 0)/api/v1/namespaces/default/serviceaccounts/default"
	ready_first_pod
	log "cluster up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: KUBECONFIG=$dir/kubeconfig"
}

# ready_first_pod has kwok give one throwaway pod an IP before any test runs. kwok v0.8.0
# makes its pod IP pool on first use without a lock (PodController.ipPool: Load, then
# Store), so the first pods it readies at once (two replicas of a Deployment) can each get
# a pool of their own and the same address: the second engine then fails to bind the first's
# IP. One pod readied alone makes the pool every later pod shares.
ready_first_pod() {
	local pods="https://127.0.0.1:$(port 0)/api/v1/namespaces/default/pods"
	api -X POST "$pods" -d @- >/dev/null <<'POD' || die "creating the throwaway pod failed"
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "kwok-ip-pool"},
 "spec": {"nodeSelector": {"type": "kwok"}, "containers": [{"name": "pause", "image": "pause"}]}}
POD
	local ip=""
	for _ in $(seq 1 120); do
		ip=$(api "$pods/kwok-ip-pool" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("status", {}).get("podIP", ""))') || true
		[[ -n "$ip" ]] && break
		sleep 0.5
	done
	[[ -n "$ip" ]] || die "kwok gave the throwaway pod no IP"
	api -X DELETE "$pods/kwok-ip-pool?gracePeriodSeconds=0" >/dev/null || die "deleting the throwaway pod failed"
	for _ in $(seq 1 120); do
		api "$pods/kwok-ip-pool" >/dev/null 2>&1 || return 0
		sleep 0.5
	done
	die "the throwaway pod did not go"
}

nodes_ready() {
	api "https://127.0.0.1:$(port 0)/api/v1/nodes" | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["items"]
ok = [n for n in nodes if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))]
sys.exit(0 if len(ok) == len(nodes) and nodes else 1)'
}

stop() {
	dir=$1
	[[ -n "$dir" && -d "$dir" ]] || return 0
	local name pid
	# Reverse start order: clients before the API server, the API server before etcd.
	for name in kwok scheduler controller-manager apiserver etcd; do
		[[ -f "$dir/$name.pid" ]] || continue
		pid=$(cat "$dir/$name.pid")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 40); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.25
			done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$dir/$name.pid"
	done
	ip route del local "$POD_CIDR" dev lo table local 2>/dev/null || true
	log "stopped the cluster in $dir"
}

case "${1:-}" in
build) build ;;
start) start "${2:-}" ;;
stop) stop "${2:-}" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
