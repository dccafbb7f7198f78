#!/usr/bin/env bash
# Seconds from a clean clone (empty target/, registry cache warm) to the first answer of the
# README's first command: clone, build the site example, `cargo run --example site -- --http`,
# then `initialize` over HTTP until it answers; prints the total and each phase.
# Run: bash scripts/first-answer.sh [PORT] [REV] (REV: the commit to clone, default HEAD, so
# that two commits can be timed in turn on one machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
port=${1:-18089}
rev=${2:-HEAD}
dir=$(mktemp -d)
pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
start=$(date +%s.%N)
git clone -q "$root" "$dir/abilities"
cd "$dir/abilities"
git checkout -q "$rev"
cargo build --quiet --example site
built=$(date +%s.%N)
cargo run --quiet --example site -- --http "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
pid=$!
body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"first-answer","version":"0"}}}'
until answer=$(curl -sf -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -d "$body" "http://127.0.0.1:$port/mcp" 2>/dev/null) && [[ $answer == *'"result"'* ]]; do
  kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log"; echo "the server exited" >&2; exit 1; }
  sleep 0.2
done
end=$(date +%s.%N)
units=$(find target/debug/deps -name '*.rlib' | wc -l)
awk -v a="$start" -v m="$built" -v b="$end" -v u="$units" \
  'BEGIN { printf "first answer %.1f s after the clone began: clone and build %.1f s (%d libraries), start and answer %.1f s\n", b - a, m - a, u, b - m }'
