#!/usr/bin/env bash
# Smoke test of the real llama.cpp engine with the generated model: starts
# llama-server (under chroot in the forky rootfs by default, or in the Docker
# image with --docker), then checks through its HTTP API that
#
#   - /health is ok and /tokenize, /apply-template, /metrics answer,
#   - streaming /v1/chat/completions and /v1/completions with max_tokens 32,
#     ignore_eos, temperature 0 and stream_options.include_usage return exactly
#     32 completion tokens of valid, printable UTF-8, finish_reason "length",
#     a usage chunk and llama.cpp's timings,
#   - the chat template adds a fixed number of tokens to prompt_tokens,
#
# and measures time to first token at about 256 and 1024 prompt tokens. Exits
# non-zero on any failed check. Builds the rootfs/image and the model when
# they are missing. Needs root (chroot, mounts), curl and python3.
#
# Usage: scripts/smoke-llamacpp.sh [--docker]
# Environment:
#   SMOKE_PORT     loopback port for the server (default: a free one)
#   SMOKE_MODEL    model file (default .cache/models/tiny-llama.gguf, generated
#                  with cmd/ggufgen defaults if missing)
#   SMOKE_THREADS  llama-server --threads (default: llama.cpp's choice, all CPUs)
#   SMOKE_TTFT_RUNS  TTFT requests per prompt length (default 3; 0 skips the
#                  measurement, for a quick functional check)
#   SMOKE_REPORT   also write the measurements as JSON to this file
set -euo pipefail

# shellcheck source=scripts/lib-llamacpp.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-llamacpp.sh"
cd "$LLAMACPP_REPO_ROOT"

mode=chroot
for arg in "$@"; do
	case "$arg" in
	--docker) mode=docker ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument $arg (see --help)" ;;
	esac
done

[[ "$(id -u)" == 0 ]] || die "run as root (chroot and bind mounts need it)"
command -v python3 >/dev/null || die "python3 is needed for the HTTP checks (apt-get install python3)"
command -v curl >/dev/null || die "curl is needed (apt-get install curl)"

model="${SMOKE_MODEL:-$LLAMACPP_REPO_ROOT/.cache/models/tiny-llama.gguf}"
if [[ ! -f "$model" ]]; then
	log "generating $model"
	go run ./cmd/ggufgen -out "$model"
fi
model="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
model_dir="$(dirname "$model")"
model_name="$(basename "$model")"

port="${SMOKE_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
# Two slots so a second request can run while one is in flight; 2 x 2048 of
# context covers the 1024-token TTFT prompt plus template and output.
server_args=(--host 127.0.0.1 --port "$port" --parallel 2 --ctx-size 4096 --metrics)
[[ -n "${SMOKE_THREADS:-}" ]] && server_args+=(--threads "$SMOKE_THREADS")

logfile="$(mktemp /tmp/llamacpp-smoke.XXXXXX.log)"
server_pid=""
container=""
cleanup() {
	local rc=$?
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -n "$container" ]]; then
		docker rm -f "$container" >/dev/null 2>&1 || true
	fi
	if [[ $rc != 0 ]]; then
		log "llama-server log (last 40 lines of $logfile):"
		tail -n 40 "$logfile" >&2 || true
	else
		rm -f "$logfile"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s.%N)
case "$mode" in
chroot)
	"$LLAMACPP_REPO_ROOT/scripts/build-llamacpp-image.sh" --rootfs-only >/dev/null
	# A private mount namespace holds the model bind mount and /proc: they
	# vanish with the server, so a killed run leaves nothing mounted on the host
	# and concurrent runs do not see each other's mounts. unshare, sh and chroot
	# all exec, so $! ends up being llama-server itself.
	unshare --mount --propagation private sh -c '
		set -e
		mount --bind "$1" "$2/models"
		mount -t proc proc "$2/proc"
		shift 2
		exec chroot "$@"
	' sh "$model_dir" "$LLAMACPP_ROOTFS" "$LLAMACPP_ROOTFS" "$LLAMACPP_SERVER_BIN" \
		-m "/models/$model_name" "${server_args[@]}" >"$logfile" 2>&1 &
	server_pid=$!
	;;
docker)
	image="$("$LLAMACPP_REPO_ROOT/scripts/build-llamacpp-image.sh")"
	container="llmserve-smoke-$$"
	# Host networking keeps the server on the host's loopback only (--host
	# 127.0.0.1), which a -p mapping onto a bridge address would not.
	docker run -d --rm --name "$container" --network host \
		-v "$model_dir:/models:ro" "$image" \
		-m "/models/$model_name" "${server_args[@]}" >/dev/null
	docker logs -f "$container" >"$logfile" 2>&1 &
	server_pid=$!
	;;
esac

log "waiting for llama-server ($mode) on 127.0.0.1:$port"
ready=0
for _ in $(seq 1 240); do
	if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
		ready=1
		break
	fi
	if [[ "$mode" == chroot ]] && ! kill -0 "$server_pid" 2>/dev/null; then
		die "llama-server exited during startup"
	fi
	if [[ "$mode" == docker ]] && [[ "$(docker inspect -f '{{.State.Running}}' "$container" 2>/dev/null)" != true ]]; then
		die "llama-server container stopped during startup"
	fi
	sleep 0.25
done
[[ $ready == 1 ]] || die "llama-server not healthy after 60 s"
log "ready in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

python3 - "http://127.0.0.1:$port" "${SMOKE_REPORT:-}" "${SMOKE_TTFT_RUNS:-3}" <<'PY'
import http.client, json, random, statistics, sys, time, urllib.parse

base, report_path, ttft_runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
url = urllib.parse.urlparse(base)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def call(method, path, body=None):
    # A fresh connection per request: reusing keep-alive connections races the
    # server closing idle ones, which would show up as spurious errors.
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def post(path, body):
    status, data = call("POST", path, body)
    if status != 200:
        raise SystemExit(f"POST {path}: HTTP {status}: {data[:300]!r}")
    return json.loads(data)


def stream(path, body):
    """Streams one request; returns TTFT, text, chunks and the final usage/timings."""
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    start = time.perf_counter()
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise SystemExit(f"POST {path}: HTTP {r.status}: {r.read()[:300]!r}")
    ttft, raw, chunks, usage, timings, finish, done = None, b"", 0, None, None, None, False
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            done = True
            break
        ev = json.loads(payload)
        for ch in ev.get("choices") or []:
            piece = ch.get("text")
            if piece is None:
                piece = (ch.get("delta") or {}).get("content")
            if piece:
                if ttft is None:
                    ttft = time.perf_counter() - start
                raw += piece.encode("utf-8", "surrogatepass")
                chunks += 1
            if ch.get("finish_reason"):
                finish = ch["finish_reason"]
        if ev.get("usage"):
            usage = ev["usage"]
        if ev.get("timings"):
            timings = ev["timings"]
    c.close()
    return dict(ttft=ttft, raw=raw, chunks=chunks, usage=usage, timings=timings, finish=finish, done=done)


# --- health, tokenize, template ------------------------------------------------
status, data = call("GET", "/health")
check(status == 200 and json.loads(data).get("status") == "ok", f"/health ok ({data.decode()[:60]})")

toks = post("/tokenize", {"content": "hello tiny model"})["tokens"]
check(len(toks) > 0 and all(isinstance(t, int) for t in toks), f"/tokenize returns token ids ({toks})")

props = json.loads(call("GET", "/props")[1])
template = props.get("chat_template", "")
rendered = post("/apply-template", {"messages": [{"role": "user", "content": "hello tiny model"}]}).get("prompt")
print(f"     chat template: {template}")
print(f"     rendered:      {rendered!r}")

status, data = call("GET", "/metrics")
check(status == 200 and b"llamacpp:" in data, "/metrics serves Prometheus text")

# --- prompts of an exact token length ------------------------------------------
rng = random.Random(20240601)


def words(n):
    cons, vow = "bcdfghjklmnprstvwz", "aeiou"
    return " ".join("".join(rng.choice(cons) + rng.choice(vow) for _ in range(rng.randint(1, 3))) for _ in range(n))


def prompt_of(n_tokens):
    """Unique text that tokenizes to exactly n_tokens (without BOS)."""
    text = words(n_tokens)  # each word is >= 1 token: enough material
    ids = post("/tokenize", {"content": text})["tokens"][:n_tokens]
    text = post("/detokenize", {"tokens": ids})["content"].strip()
    got = len(post("/tokenize", {"content": text})["tokens"])
    if got != n_tokens:
        raise SystemExit(f"could not build a {n_tokens}-token prompt (got {got})")
    return text


def body(api, prompt, max_tokens):
    b = {"max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
         "stream_options": {"include_usage": True}, "cache_prompt": False}
    if api == "chat":
        b["messages"] = [{"role": "user", "content": prompt}]
    else:
        b["prompt"] = prompt
    return b


paths = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
overhead = {}
for api in ("chat", "completions"):
    prompt = prompt_of(64)
    res = stream(paths[api], body(api, prompt, 32))
    u = res["usage"] or {}
    try:
        text = res["raw"].decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        text, utf8 = "", False
    printable = utf8 and all(ch.isprintable() for ch in text)
    check(res["done"], f"{api}: stream ends with [DONE]")
    check(res["usage"] is not None, f"{api}: usage chunk present ({u})")
    check(u.get("completion_tokens") == 32, f"{api}: completion_tokens == 32 (got {u.get('completion_tokens')})")
    check(res["finish"] == "length", f"{api}: finish_reason length (got {res['finish']})")
    check(utf8 and printable and len(text) > 0, f"{api}: output is valid printable UTF-8 ({len(res['raw'])} bytes, {res['chunks']} chunks): {text[:60]!r}")
    check(res["timings"] is not None and "prompt_ms" in res["timings"], f"{api}: timings present")
    overhead[api] = u.get("prompt_tokens", 0) - 64
    print(f"     {api}: prompt_tokens {u.get('prompt_tokens')} for a 64-token prompt: template adds {overhead[api]}")
check(overhead["chat"] == 4, f"chat template adds 4 tokens: BOS <|user|> <|end|> <|assistant|> (got {overhead['chat']})")
check(overhead["completions"] == 1, f"completions add only BOS (got {overhead['completions']})")

# --- TTFT against prompt length ------------------------------------------------
ttft = {}
for n in ((256, 1024) if ttft_runs > 0 else ()):
    runs = []
    for _ in range(ttft_runs):
        res = stream(paths["chat"], body("chat", prompt_of(n), 4))
        runs.append((res["ttft"], res["timings"]["prompt_ms"] / 1000, res["usage"]["prompt_tokens"]))
    med = statistics.median(r[0] for r in runs)
    med_prompt = statistics.median(r[1] for r in runs)
    ttft[n] = dict(ttft_s=[round(r[0], 4) for r in runs], median_ttft_s=round(med, 4),
                   median_prompt_s=round(med_prompt, 4), prompt_tokens=runs[0][2])
    print(f"     TTFT {n:>4} prompt tokens (server counts {runs[0][2]}): median {med*1000:.0f} ms "
          f"(runs {', '.join(f'{r[0]*1000:.0f}' for r in runs)} ms; server prompt_ms median {med_prompt*1000:.0f})")
if ttft:
    check(ttft[1024]["median_ttft_s"] > ttft[256]["median_ttft_s"], "TTFT grows with prompt length")

if report_path:
    with open(report_path, "w") as f:
        json.dump(dict(chat_template=template, rendered_example=rendered, template_overhead=overhead,
                       ttft=ttft), f, indent=2)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
PY
