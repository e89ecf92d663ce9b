#!/usr/bin/env bash
# The starved client of issue 37, through the real CLI: a simulated server whose p95 time to
# first token holds up to exactly 11 concurrent requests (11 slots; a 12th waits a whole
# generation) is benchmarked by `terraform apply` running in a cgroup with a CPU quota of 3 %
# of one core, once with the provider BEFORE the load generator measured itself and once with
# this tree's. It prints, for each, the capacity found, whether the result says client-bound,
# each trial's client figures and the apply's warnings.
#
#   scripts/starved-client.sh                    before and after
#   WHICH=after scripts/starved-client.sh        one of them
#   BEFORE=<git ref> QUOTA_PCT=3 SIM_PORT=30911  what is compared, the quota (0: none), the server's port
#
# Needs root (a cgroup), Terraform at $TERRAFORM (/usr/local/bin/terraform) and Go. The server
# runs outside the cgroup: only the load generator (Terraform and the provider it starts) is
# starved. Run it alone on the machine: it is a measurement (flock /tmp/heavy.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
terraform="${TERRAFORM:-/usr/local/bin/terraform}"
before="${BEFORE:-db32b13}" # the last main whose load generator did not measure itself
quota_pct="${QUOTA_PCT:-3}"
port="${SIM_PORT:-30911}"
which="${WHICH:-before after}"
work="$root/.cache/starved-client"
export CHECKPOINT_DISABLE=1
unset TF_CLI_CONFIG_FILE

say() { printf '== %s\n' "$*" >&2; }
mkdir -p "$work"

# The cgroup: v2 where the cpu controller is on the unified hierarchy and writable (cpu.max
# "quota period"), else v1's cpu controller (cpu.cfs_quota_us and cpu.cfs_period_us).
cgroup=""
make_cgroup() {
	local period=100000 quota=$((quota_pct * 1000)) v2 v1
	v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
	if [[ -n "$v2" ]] && grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null &&
		{ grep -qw cpu "$v2/cgroup.subtree_control" || echo +cpu >"$v2/cgroup.subtree_control"; } 2>/dev/null &&
		mkdir "$v2/llmserve-starved-$$" 2>/dev/null; then
		cgroup="$v2/llmserve-starved-$$"
		echo "$quota $period" >"$cgroup/cpu.max"
		say "cgroup v2 $cgroup: cpu.max $(cat "$cgroup/cpu.max")"
		return
	fi
	v1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
	if [[ -n "$v1" ]] && mkdir "$v1/llmserve-starved-$$" 2>/dev/null; then
		cgroup="$v1/llmserve-starved-$$"
		echo "$period" >"$cgroup/cpu.cfs_period_us"
		echo "$quota" >"$cgroup/cpu.cfs_quota_us"
		say "cgroup v1 $cgroup: cpu.cfs_quota_us $(cat "$cgroup/cpu.cfs_quota_us") per cpu.cfs_period_us $period" \
			"(cgroup2 ${v2:-not mounted}$([[ -n "$v2" ]] && printf ' without the cpu controller'))"
		return
	fi
	echo "starved-client: no writable cgroup with the cpu controller (cgroup2: ${v2:-not mounted}; v1 cpu: ${v1:-not mounted}); run as root on Linux" >&2
	exit 1
}

sim_pid=""
cleanup() {
	if [[ -n "$sim_pid" ]]; then kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; fi
	if [[ -n "$cgroup" ]]; then rmdir "$cgroup" 2>/dev/null || true; fi
	if [[ -d "$work/before-src" ]]; then git worktree remove --force "$work/before-src" 2>/dev/null || true; fi
}
trap cleanup EXIT

say "building the simulated engine and the providers"
go build -o "$work/simengine" ./cmd/simengine
for w in $which; do
	mkdir -p "$work/$w/provider"
	case "$w" in
	after) go build -o "$work/$w/provider/terraform-provider-llmserve" . ;;
	before)
		rm -rf "$work/before-src"
		git worktree prune
		git worktree add --detach "$work/before-src" "$before" >/dev/null 2>&1
		(cd "$work/before-src" && go build -o "$work/$w/provider/terraform-provider-llmserve" .)
		;;
	*) echo "starved-client: WHICH lists before and/or after, not $w" >&2; exit 2 ;;
	esac
done

# 11 slots decode together; a 12th request waits for a slot to free, a whole generation of
# 8 tokens at 200 ms a step (1.6 s), against a 500 ms p95 TTFT objective.
"$work/simengine" -host 127.0.0.1 -port "$port" -model sim -slots 11 -decode-step 200ms -decode-per-seq 0 \
	-prefill-per-token 20us -prefill-overhead 2ms -request-noise 0 >"$work/simengine.log" 2>&1 &
sim_pid=$!
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break; sleep 0.1; done

if ((quota_pct > 0)); then make_cgroup; fi

for w in $which; do
	dir="$work/$w"
	rm -rf "$dir/tf" && mkdir -p "$dir/tf"
	cat >"$dir/cli.tfrc" <<RC
provider_installation {
  dev_overrides { "registry.terraform.io/llmserve/llmserve" = "$dir/provider" }
  direct {}
}
RC
	cat >"$dir/tf/main.tf" <<TF
terraform {
  required_providers {
    llmserve = { source = "registry.terraform.io/llmserve/llmserve" }
  }
}

resource "llmserve_capacity_benchmark" "starved" {
  endpoint  = "http://127.0.0.1:$port"
  model     = "sim"
  api       = "chat"
  workloads = [{ label = "64 / 8", input_tokens = 64, output_tokens = 8 }]
  slos      = [{ metric = "time_to_first_token", percentile = 95, threshold_ms = 500 }]
  search    = { min_concurrency = 1, max_concurrency = 16 }
  trial     = { warmup_requests = 2, measured_requests = 16, confirmation_trials = 2 }
  progress_log = "\${path.module}/progress.log"
}

output "maximum_passing_concurrency" { value = llmserve_capacity_benchmark.starved.maximum_passing_concurrency }
output "results_json" { value = llmserve_capacity_benchmark.starved.results_json }
TF
	say "$w: terraform apply in ${cgroup:-no cgroup, no quota} (load $(cut -d' ' -f1-3 /proc/loadavg))"
	start=$(date +%s)
	# The shell moves itself into the cgroup and becomes terraform: Terraform and the
	# provider plugin it starts run under the quota, the server does not.
	TF_CLI_CONFIG_FILE="$dir/cli.tfrc" sh -c '{ [ -z "$1" ] || echo $$ >"$1/cgroup.procs"; } && cd "$2" && exec "$3" apply -auto-approve -input=false -no-color' \
		sh "$cgroup" "$dir/tf" "$terraform" >"$dir/apply.log" 2>&1 || { cat "$dir/apply.log" >&2; exit 1; }
	elapsed=$(($(date +%s) - start))
	(cd "$dir/tf" && TF_CLI_CONFIG_FILE="$dir/cli.tfrc" "$terraform" output -raw results_json) >"$dir/result.json"
	echo
	quota="under a ${quota_pct} % CPU quota"
	((quota_pct > 0)) || quota="with no CPU quota"
	echo "---- $w ($( [[ $w == before ]] && echo "$before" || git rev-parse --short HEAD)), terraform apply $quota, ${elapsed}s, load $(cut -d' ' -f1-3 /proc/loadavg)"
	jq -r '.workloads[] | "workload \(.label): maximum_passing_concurrency \(.maximum_passing_concurrency // "null"), first_failing_concurrency \(.first_failing_concurrency // "null"), client_bound \(.client_bound // false)"' "$dir/result.json"
	jq -r '.workloads[].trials[] | "  c=\(.concurrency) \(.kind) \(.trial): \(.verdict)  p95 TTFT \(.ttft_ms.p95 | . * 10 | round / 10) ms" +
		(if .client then "  client: send p99 \(.client.send_delay_p99_ms | . * 10 | round / 10) ms, read lag p99 \((.client.read_lag_p99_ms // -1) | . * 10 | round / 10) ms, cpu \(.client.cpu.source) used \(.client.cpu.used_cpus | . * 1000 | round / 1000) of \(.client.cpu.available_cpus) CPUs" +
			(if .client.cpu.throttling then ", throttled \(.client.cpu.throttling.throttled_percent | . * 10 | round / 10) % of the load" else "" end) +
			(if .client.bound then "  BOUND BY \(.client.bound_by | join(", "))" else "" end)
		else "" end)' "$dir/result.json"
	if grep -v "development overrides" "$dir/apply.log" | grep -q "Warning:"; then
		echo "warnings:"
		awk '/^Apply complete!/{p=0} /Warning:/{p = $0 !~ /development overrides/} p{print "  " $0}' "$dir/apply.log"
	else
		echo "warnings: none"
	fi
done
