#!/usr/bin/env bash
# Issue 37's last measurement, the boundary restored on the test cluster: a simulated server
# whose p95 time to first token holds up to exactly 11 concurrent requests (11 slots; a 12th
# waits a whole generation) is benchmarked through the real Terraform CLI from runner pods
# (runner.kubernetes) on the loopback control plane (scripts/kube-controlplane.sh), in a
# namespace whose LimitRange gives containers a default CPU limit too small for one pod to
# carry the load up to that boundary. The API server's LimitRanger puts the limit on the
# runner pods; the stand-in kubelet runs each pod's runner in a cgroup with that CPU quota, as
# a kubelet does. With runner.kubernetes.pods = 1 the result must say client-bound and give no
# capacity; with pods = N (each pod a share of every trial) the same limit must find 11.
#
# The same search runs three times: one runner pod without a limit first (the reference: the
# server's boundary as an unstarved client finds it), then pods = 1 and pods = N under the
# limit. The limit is calibrated to the machine from the reference: the CPU time a request
# cost its pod (the median over its trials at 8 in flight or more), and the limit is BURST
# requests' worth per 100 ms quota period (a closed loop against this server moves in
# lockstep: its requests end together and the next are sent together, so the quota must hold
# a burst of one request's worth per request in flight). One pod then carries about BURST
# requests in flight, PODS pods about BURST x PODS. A machine twice as slow gets a limit twice
# as large, and the same conclusion. The window is narrow at a load this small: a runner's own
# work throttles it by 3-10 % under such a limit whatever its share (the client-bound limit is
# 10 %), so a limit a little low flags the fleet too, one a little high lets one pod carry 11.
#
#   scripts/restored-boundary.sh                  calibrate, then pods = 1 and pods = $PODS
#   PODS=6 BURST=4 LIMIT=<millicores> OUT=<dir>   pods of the last run, the requests' worth
#                                                 a quota period holds, or the limit itself,
#                                                 where the results go
#   WARMUP=0                                      trial.warmup_requests (default 0: a fleet's
#                                                 pods each run their own warmup phase, and a
#                                                 pod given none starts measuring while others
#                                                 still warm up, holding fewer requests in
#                                                 flight than the trial's concurrency)
#
# It runs TestAccKubeRestoredBoundary (internal/provider/kube_runner_limits_test.go) and prints
# both runs as a user sees them: capacity, client_bound, each trial's client figures, the
# apply's warnings, with the CPU limit and the machine's load beside them. Needs root (cgroups,
# the pod CIDR route), Terraform at $TERRAFORM (/usr/local/bin/terraform), Go and jq. Run it
# alone on the machine: it is a measurement (flock /tmp/heavy.lock scripts/restored-boundary.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CHECKPOINT_DISABLE=1 TF_ACC=1
export TF_ACC_TERRAFORM_PATH="${TERRAFORM:-/usr/local/bin/terraform}"
unset TF_CLI_CONFIG_FILE
pods="${PODS:-6}"
burst="${BURST:-4}"
limit="${LIMIT:-}"
warmup="${WARMUP:-0}"
out="${OUT:-$root/.cache/restored-boundary}"

say() { printf '== %s (%s)\n' "$*" "$(date +%T)" >&2; }
for tool in jq go; do
	command -v "$tool" >/dev/null || { echo "restored-boundary: $tool is needed" >&2; exit 1; }
done

say "control plane binaries"
scripts/kube-controlplane.sh build
dir="$(mktemp -d /tmp/llmserve-boundary.XXXXXX)"
cleanup() {
	local rc=$?
	scripts/kube-controlplane.sh stop "$dir" || true
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say "start the control plane"
scripts/kube-controlplane.sh start "$dir"

rm -rf "$out" && mkdir -p "$out"
say "one pod without a limit, then pods = 1 and pods = $pods under it (go test -run TestAccKubeRestoredBoundary; log in $out/go-test.log)"
rc=0
LLMSERVE_TEST_KUBECONFIG="$dir/kubeconfig" LLMSERVE_RESTORED_BOUNDARY_OUT="$out" \
	LLMSERVE_RESTORED_BOUNDARY_PODS="$pods" LLMSERVE_RESTORED_BOUNDARY_BURST="$burst" LLMSERVE_RESTORED_BOUNDARY_LIMIT="$limit" \
	LLMSERVE_RESTORED_BOUNDARY_WARMUP="$warmup" \
	go test -count=1 -timeout 40m -run '^TestAccKubeRestoredBoundary$' -v ./internal/provider/ >"$out/go-test.log" 2>&1 || rc=$?
if grep -q -- '--- SKIP' "$out/go-test.log"; then
	grep -A2 -- '--- SKIP' "$out/go-test.log" >&2
	echo "restored-boundary: the measurement skipped" >&2
	exit 1
fi

echo
echo "machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)), $(uname -r); runners' cgroups: $(awk '$3 == "cgroup2" {v2 = 1} $3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {v1 = 1} END {print (v1 ? "v1 cpu controller" : "") (v1 && v2 ? " (cgroup2 mounted beside it)" : v2 ? "v2" : "")}' /proc/mounts)"
grep -o 'calibration: .*' "$out/go-test.log" | sed 's/^/  /' || true
[[ -f "$out/runs.json" ]] || { tail -n 40 "$out/go-test.log" >&2; exit 1; }
for name in $(jq -r '.[].name' "$out/runs.json"); do
	[[ -f "$out/$name.json" ]] || continue
	echo
	jq -r --arg n "$name" '.[] | select(.name == $n) |
		"---- runner.kubernetes.pods = \(.pods), " +
		(if .limit_millicpu > 0 then "namespace LimitRange default limits.cpu \(.limit_millicpu)m (cgroup quota per pod, µs per period: \(.cgroups | fromjson | [.[]] | unique | join(", ")))"
		 else "no CPU limit" end) + ", apply \(.seconds | round) s, " +
		"load average \(.load_before) before, \(.load_after) after"' "$out/runs.json"
	grep -h "limits every container" "$out/$name.progress.log" | sed 's/^/  progress_log: /' | head -n1 || true
	jq -r '.workloads[] | "workload \(.label): maximum_passing_concurrency \(.maximum_passing_concurrency // "null"), first_failing_concurrency \(.first_failing_concurrency // "null"), client_bound \(.client_bound // false)"' "$out/$name.json"
	jq -r 'def r1: . * 10 | round / 10; def r3: . * 1000 | round / 1000;
		.workloads[].trials[] | "  c=\(.concurrency) \(.kind) \(.trial): \(.verdict)  p95 TTFT \(.ttft_ms.p95 | r1) ms" +
		(if .client then "  client: bound_by [\((.client.bound_by // []) | join(", "))], send delay mean \(.client.send_delay_mean_ms | r1) ms, read lag mean \((.client.read_lag_mean_ms // -1) | r1) ms" +
			(if .client.cpu then ", cpu \(.client.cpu.used_cpus | r3) of \(.client.cpu.available_cpus | r3) CPUs (\(.client.cpu.source))" else "" end) +
			(if .client.cpu.throttling then ", throttled \(.client.cpu.throttling.throttled_percent | r1) %" else "" end)
		else "" end) +
		(if .host then "  host load \(.host.load_avg_1m_start)" else "" end)' "$out/$name.json"
	if grep -v "development overrides" "$out/$name.apply.log" | grep -q "Warning:"; then
		echo "warnings:"
		awk '/^Apply complete!/{p=0} /Warning:/{p = $0 !~ /development overrides/} p{print "  " $0}' "$out/$name.apply.log"
	else
		echo "warnings: none"
	fi
done
echo
grep -E -- '^(--- |ok |FAIL)|kube_runner_limits_test.go' "$out/go-test.log" | sed 's/^/  /' || true
exit "$rc"
