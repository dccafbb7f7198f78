#!/usr/bin/env bash
# The README's quick start as a newcomer follows it: a new crate beside the checkout, its
# `[dependencies]` and `src/main.rs` taken from README.md as written, built, then served over
# stdio and asked `initialize`, `tools/list` and `tools/call` by a client written here.
# Run: bash scripts/quickstart.sh (CI runs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/abilities"
python3 "$root/scripts/readme_crate.py" "$root/README.md" "$work/hello-mcp"
cp "$root/Cargo.lock" "$work/hello-mcp/Cargo.lock"
cd "$work/hello-mcp"
CARGO_TARGET_DIR="$root/target/quickstart" cargo build --quiet
# What it compiles: no SQLite (C), no `jsonschema` crate and no URL parser unless the crate
# asks for the features that need them.
for heavy in libsqlite3-sys jsonschema url; do
  if cargo tree --edges normal,build --prefix none | grep -q "^$heavy "; then
    echo "the quick start compiles $heavy, which it did not ask for:" >&2
    cargo tree --edges normal,build --invert "$heavy" >&2
    exit 1
  fi
done
bin="$root/target/quickstart/debug/hello-mcp"
python3 - "$bin" <<'PY'
import json, subprocess, sys
server = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
def send(message):
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()
def answer(id):
    while True:
        line = server.stdout.readline()
        assert line, "the server closed stdout: " + server.stderr.read()
        message = json.loads(line)
        if message.get("id") == id:
            return message
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "quickstart", "version": "0"}}})
assert answer(1)["result"]["serverInfo"]["name"] == "hello"
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
names = sorted(t["name"] for t in answer(2)["result"]["tools"])
assert names == ["divide", "greet"], names
send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
      "params": {"name": "greet", "arguments": {"input": "Ada"}}})
result = answer(3)["result"]
assert result["structuredContent"] == {"result": "Hello, Ada!"}, result
send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
      "params": {"name": "divide", "arguments": {"dividend": 1, "divisor": 0}}})
result = answer(4)["result"]
assert result["isError"] is True and "zero" in result["content"][0]["text"], result
server.stdin.close()
server.wait(timeout=10)
print("quick start: built from README.md (no SQLite, jsonschema or url), listed divide and greet, answered both")
PY
