#!/usr/bin/env bash
# The cross-SDK benchmark, on this machine, in one run: the public benchmark's I/O workload
# ("shop": three tools over a real Redis and a local HTTP API, bench/shared/shop.rs) and the
# hello workload (one SQLite count), each served by abilities, by rmcp by hand, by FastMCP
# (Python, under uvicorn), by the TypeScript SDK v2 (Node) and, for hello, by the bare JSON-RPC
# floor. Every server first passes the correctness check (scripts/shop_check.py); then
# `loadgen --url` drives 50 clients per tool for a measured window (3 s), after a warm-up
# (1 s), the servers alternating round by round, over 2026-07-28 requests that need no session and over 2025-11-25 (in a session
# where the server keeps them). Reports calls/s, p50/p95/p99, server CPU per call and peak
# RSS (every process of the server), writes them to $OUT/results.jsonl and a table, and with
# --chart FILE an SVG chart (scripts/bench_report.py).
# Run: bash scripts/bench-peers.sh [--rounds N] [--seconds S] [--chart FILE]
#        [--workloads "shop hello"] [--protocols "2026 2025"]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
seconds=3
chart=""
workloads="shop hello"
protocols="2026 2025"
clients=50
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --chart) chart=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --protocols) protocols=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-cli node python3; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing (apt-get install -y redis-server nodejs npm python3-venv)" >&2
    exit 1
  }
done
step() { echo "==> $*"; }
started=$SECONDS
step "peers (pinned): bash bench/peers/install.sh"
bash "$root/bench/peers/install.sh"
step "release builds"
cargo build --release --quiet -p abilities-bench --example shop_api --example shop_site \
  --example shop_rmcp --example loadgen --example rmcp_site --example bare_site \
  -p abilities-examples --example site
bin="$root/target/release/examples"
py="$root/bench/peers/.venv/bin/python"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
: >"$out/results.jsonl"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Every pid of a process and its descendants.
tree() {
  local pid=$1
  echo "$pid"
  for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do tree "$child"; done
}
# CPU nanoseconds every thread of a process tree has run.
cpu_ns() {
  local total=0 ns
  for pid in $(tree "$1"); do
    for stat in /proc/"$pid"/task/*/schedstat; do
      read -r ns _ <"$stat" 2>/dev/null || continue
      total=$((total + ns))
    done
  done
  echo "$total"
}
# Peak resident memory of a process tree, KiB (the sum of each process's high-water mark).
peak_kib() {
  local total=0 kib
  for pid in $(tree "$1"); do
    kib=$(awk '/^VmHWM:/ {print $2}' /proc/"$pid"/status 2>/dev/null || echo 0)
    total=$((total + ${kib:-0}))
  done
  echo "$total"
}
wait_port() {
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}
declare -A pid_of url_of

start() { # name port command...
  local name=$1 port=$2
  shift 2
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  pid_of[$name]=$!
  url_of[$name]="http://127.0.0.1:$port/mcp"
  wait_port "$port"
}

step "redis-server on 127.0.0.1:6390, the shop API on :8100 (100,000 products)"
redis-server --port 6390 --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do redis-cli -p 6390 ping >/dev/null 2>&1 && break; sleep 0.1; done
"$bin/shop_api" --addr 127.0.0.1:8100 --seed redis://127.0.0.1:6390 >"$work/api.log" 2>&1 &
pids+=($!)
wait_port 8100

# One measured run: append its JSON line to results.jsonl.
measure() { # workload tool protocol server args
  local workload=$1 tool=$2 protocol=$3 server=$4 args=$5 before after line
  local pid=${pid_of[$workload-$server]} url=${url_of[$workload-$server]}
  before=$(cpu_ns "$pid")
  line=$("$bin/loadgen" --url "$url" --tool "$tool" --arguments "$args" --protocol "$protocol" \
    --clients "$clients" --seconds "$seconds" --rounds 1 | tail -1)
  after=$(cpu_ns "$pid")
  python3 - "$workload" "$tool" "$protocol" "$server" "$line" "$((after - before))" \
    "$(peak_kib "$pid")" >>"$out/results.jsonl" <<'PY'
import json, re, sys
workload, tool, protocol, server, line, cpu_ns, peak_kib = sys.argv[1:]
number = lambda pattern: float(re.search(pattern, line).group(1))
calls = int(number(r"\((\d+) calls\)"))
print(json.dumps({
    "workload": workload, "tool": tool, "protocol": protocol, "server": server,
    "rate": number(r"([\d.]+) calls/s"), "p50_ms": number(r"p50 ([\d.]+) ms"),
    "p95_ms": number(r"p95 ([\d.]+) ms"), "p99_ms": number(r"p99 ([\d.]+) ms"),
    "calls": calls, "cpu_us_per_call": int(cpu_ns) / 1000 / calls,
    "peak_rss_kib": int(peak_kib)}))
PY
}

run_workload() { # workload "servers" "tool=args;..."
  local workload=$1 servers=$2 tools=$3 protocol tool args round order server
  for protocol in $protocols; do
    IFS=';' read -ra entries <<<"$tools"
    for entry in "${entries[@]}"; do
      tool=${entry%%=*}
      args=${entry#*=}
      # Warm-up: a second per server, not recorded.
      for server in $servers; do
        "$bin/loadgen" --url "${url_of[$workload-$server]}" --tool "$tool" --arguments "$args" \
          --protocol "$protocol" --clients "$clients" --seconds 1 --rounds 1 >/dev/null
      done
      for round in $(seq "$rounds"); do
        # Each round starts with the next server: none always goes first.
        read -ra order <<<"$servers"
        local n=${#order[@]} shift=$(((round - 1) % ${#order[@]}))
        for i in $(seq 0 $((n - 1))); do
          server=${order[$(((i + shift) % n))]}
          measure "$workload" "$tool" "$protocol" "$server" "$args"
        done
      done
      echo "  $workload $tool $protocol: done ($((SECONDS - started)) s)"
    done
  done
}

for workload in $workloads; do
  case "$workload" in
    shop)
      step "shop servers: abilities :8101, rmcp :8102 (defaults) and :8105 (json_response), FastMCP :8103, TypeScript SDK :8104"
      start shop-abilities 8101 "$bin/shop_site" --http 127.0.0.1:8101
      start shop-rmcp 8102 "$bin/shop_rmcp" --http 127.0.0.1:8102
      start shop-rmcp-json 8105 "$bin/shop_rmcp" --http 127.0.0.1:8105 --json-response
      start shop-fastmcp 8103 "$py" "$root/bench/peers/python/serve.py" --workload shop --port 8103
      start shop-ts-sdk 8104 node "$root/bench/peers/node/shop.mjs" --port 8104
      python3 "$root/scripts/shop_check.py" abilities="${url_of[shop-abilities]}" \
        rmcp="${url_of[shop-rmcp]}" rmcp-json="${url_of[shop-rmcp-json]}" \
        fastmcp="${url_of[shop-fastmcp]}" ts-sdk="${url_of[shop-ts-sdk]}"
      run_workload shop "abilities rmcp-json rmcp fastmcp ts-sdk" \
        'search_products={};get_user_cart={"user_id": "user-00007"};checkout={"user_id": "user-00007", "items": [{"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]}'
      for server in abilities rmcp rmcp-json fastmcp ts-sdk; do kill "${pid_of[shop-$server]}"; done
      ;;
    hello)
      step "hello servers: abilities :8111, rmcp :8112 (defaults) and :8116 (json_response), FastMCP :8113, TypeScript SDK :8114, bare :8115"
      start hello-abilities 8111 "$bin/site" --http 127.0.0.1:8111 --db "$work/site.db"
      start hello-rmcp 8112 "$bin/rmcp_site" --http 127.0.0.1:8112 --db "$work/site.db"
      start hello-rmcp-json 8116 "$bin/rmcp_site" --http 127.0.0.1:8116 --db "$work/site.db" --json-response
      start hello-fastmcp 8113 "$py" "$root/bench/peers/python/serve.py" --workload hello \
        --port 8113 --db "$work/site.db"
      start hello-ts-sdk 8114 node "$root/bench/peers/node/hello.mjs" --port 8114 --db "$work/site.db"
      start hello-bare 8115 "$bin/bare_site" --http 127.0.0.1:8115 --db "$work/site.db"
      python3 "$root/scripts/shop_check.py" --workload hello abilities="${url_of[hello-abilities]}" \
        rmcp="${url_of[hello-rmcp]}" rmcp-json="${url_of[hello-rmcp-json]}" \
        fastmcp="${url_of[hello-fastmcp]}" ts-sdk="${url_of[hello-ts-sdk]}"
      run_workload hello "abilities rmcp-json rmcp fastmcp ts-sdk bare" 'my-plugin-count-posts={"input": "post"}'
      for server in abilities rmcp rmcp-json fastmcp ts-sdk bare; do kill "${pid_of[hello-$server]}"; done
      ;;
    *) echo "unknown workload: $workload" >&2; exit 2 ;;
  esac
done

step "report ($out/results.jsonl)"
python3 "$root/scripts/bench_report.py" "$out/results.jsonl" ${chart:+--chart "$chart"} \
  --caption "bash scripts/bench-peers.sh --rounds $rounds --seconds $seconds: $clients clients, $(nproc) cores, medians of $rounds rounds"
echo "total: $((SECONDS - started)) s"
