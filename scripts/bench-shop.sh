#!/usr/bin/env bash
# The I/O workload of the public cross-SDK MCP benchmark, here (bench/shared/shop.rs): three
# tools over a real Redis (Debian's redis-server, started here on 127.0.0.1:6390 with nothing
# saved) and a local HTTP API (the shop_api example, 100,000 products), served by abilities
# (shop_site) and by rmcp by hand (shop_rmcp) over streamable HTTP. Each server first passes a
# correctness check (every tool's answer as expected); then `loadgen --url` drives 50 clients
# with 2026-07-28 requests that need no session, one tool at a time, the servers alternating
# round by round. Prints calls/s, p50 and p99 per tool and server, and the ratios.
# Run: bash scripts/bench-shop.sh [ROUNDS] [CALLS_PER_CLIENT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
calls=${2:-200}
clients=50
command -v redis-server >/dev/null || {
  echo "redis-server is missing: apt-get install -y redis-server" >&2
  exit 1
}
cargo build --release --quiet -p abilities-bench \
  --example shop_api --example shop_site --example shop_rmcp --example loadgen
bin="$root/target/release/examples"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

redis-server --port 6390 --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do redis-cli -p 6390 ping >/dev/null 2>&1 && break; sleep 0.1; done
"$bin/shop_api" --addr 127.0.0.1:8100 --seed redis://127.0.0.1:6390 >"$work/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^http://' "$work/api.log" && break; sleep 0.1; done
"$bin/shop_site" --http 127.0.0.1:8101 >"$work/site.log" 2>&1 &
pids+=($!)
"$bin/shop_rmcp" --http 127.0.0.1:8102 >"$work/rmcp.log" 2>&1 &
pids+=($!)
for port in 8101 8102; do
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
done

# Every tool's answer, from each server, before anything is timed.
python3 "$root/scripts/shop_check.py" abilities=http://127.0.0.1:8101/mcp rmcp=http://127.0.0.1:8102/mcp

declare -A args=(
  [search_products]='{}'
  [get_user_cart]='{"user_id": "user-00007"}'
  [checkout]='{"user_id": "user-00007", "items": [{"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]}'
)
echo "shop workload: $clients clients x $calls calls, 2026-07-28 stateless requests, $rounds rounds (medians)"
for tool in search_products get_user_cart checkout; do
  : >"$work/$tool.abilities" && : >"$work/$tool.rmcp"
  # A warm-up call of each, then the rounds, alternating which server goes first.
  for round in $(seq "$rounds"); do
    order=(abilities rmcp)
    [ $((round % 2)) -eq 0 ] && order=(rmcp abilities)
    for server in "${order[@]}"; do
      port=8101 && [ "$server" = rmcp ] && port=8102
      "$bin/loadgen" --url "http://127.0.0.1:$port/mcp" --tool "$tool" --arguments "${args[$tool]}" \
        --clients "$clients" --calls "$calls" --rounds 1 >>"$work/$tool.$server"
    done
  done
  python3 - "$tool" "$work/$tool.abilities" "$work/$tool.rmcp" <<'PY'
import re, statistics, sys
tool, files = sys.argv[1], sys.argv[2:]
def runs(path):
    text = open(path).read()
    rates = [float(x) for x in re.findall(r"([\d.]+) calls/s", text)]
    p50 = [float(x) for x in re.findall(r"p50 ([\d.]+) ms", text)]
    p99 = [float(x) for x in re.findall(r"p99 ([\d.]+) ms", text)]
    return statistics.median(rates), statistics.median(p50), statistics.median(p99)
a, r = runs(files[0]), runs(files[1])
print(f"  {tool:16} abilities {a[0]:8.0f} calls/s p50 {a[1]:6.2f} ms p99 {a[2]:6.2f} ms | "
      f"rmcp {r[0]:8.0f} calls/s p50 {r[1]:6.2f} ms p99 {r[2]:6.2f} ms | ratio {a[0] / r[0]:.2f}x")
PY
done
