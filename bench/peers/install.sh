#!/usr/bin/env bash
# Install the benchmark's peer servers at their pinned versions: FastMCP and its stack into
# bench/peers/.venv (python/requirements.txt), the TypeScript SDK v2 and its stack into
# bench/peers/node/node_modules (`npm ci` from node/package-lock.json; better-sqlite3 is built
# from source against the system's Node headers, which takes a minute or two once).
# Idempotent: does nothing when what the pins name is already installed.
# Run: bash bench/peers/install.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# Python: a venv, reinstalled only when requirements.txt changed since the last install.
venv="$here/.venv"
want=$(sha256sum "$here/python/requirements.txt" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" = "$want" ]; then
  echo "python peer: up to date ($venv)"
else
  command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 1; }
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/python/requirements.txt"
  echo "$want" >"$venv/.requirements.sha256"
  echo "python peer: installed fastmcp $("$venv/bin/python" -c "import fastmcp; print(fastmcp.__version__)") ($venv)"
fi

# Node: `npm ci` only when the lock file changed since the last install, or the native
# SQLite binding is missing.
node="$here/node"
want=$(cat "$node/package.json" "$node/package-lock.json" | sha256sum | cut -d' ' -f1)
binding="$node/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
if [ -f "$binding" ] && [ "$(cat "$node/node_modules/.install.sha256" 2>/dev/null)" = "$want" ]; then
  echo "node peer: up to date ($node/node_modules)"
else
  command -v npm >/dev/null || { echo "node and npm are missing: apt-get install -y nodejs npm" >&2; exit 1; }
  # No prebuilt binary can be downloaded here: node-gyp builds against the installed headers.
  if [ -z "${npm_config_nodedir:-}" ] && [ -d /usr/include/node ]; then
    export npm_config_nodedir=/usr
  fi
  (cd "$node" && npm ci --no-audit --no-fund --loglevel=error)
  [ -f "$binding" ] || { echo "better-sqlite3 was not built ($binding)" >&2; exit 1; }
  echo "$want" >"$node/node_modules/.install.sha256"
  echo "node peer: installed @modelcontextprotocol/server $(node -p "require('$node/node_modules/@modelcontextprotocol/server/package.json').version") ($node/node_modules)"
fi
