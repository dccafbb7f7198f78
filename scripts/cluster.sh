#!/usr/bin/env bash
# A real cluster on this machine: PostgreSQL (scripts/pg.sh), three replicas of the `todo`
# example sharing it and one key, and nginx round-robin in front, all on 127.0.0.1. With
# CLUSTER_STORE=redis the server's records (sessions, tasks, tokens, idempotency keys) are in
# Redis instead (scripts/redis.sh, REDIS_PORT default 63791, emptied at start) and the todos
# stay in PostgreSQL.
#
#   scripts/cluster.sh start   # build, start everything, print the URL (http://127.0.0.1:PORT/mcp)
#   scripts/cluster.sh stop    # stop the replicas and nginx (PostgreSQL stays; pg.sh stop ends it)
#   scripts/cluster.sh restart N   # SIGTERM replica N (it drains), wait for it to exit, start it
#                                  # again on its address, and wait until it is ready
#
# Every replica serves every surface (--mode all: /mcp, /mcp/standard, /mcp/meta, /mcp/aql) and
# names itself in an `x-replica` response header. State lives in CLUSTER_DIR (default
# /tmp/abilities-cluster-UID, which nginx's workers can enter): each
# replica's pid (replica-N.pid), address (replica-N.addr) and log, nginx's configuration and
# logs. REPLICAS (default 3), PG_PORT (default 54330) and ABILITIES_STATE_KEY (default: a fresh
# random key, written to CLUSTER_DIR/state-key) change the set-up; TODO_BIN names a todo
# binary to use instead of building one (a build with the `postgres` feature, and `redis` for
# CLUSTER_STORE=redis: `cargo build -p abilities-examples --example todo --features
# postgres,redis`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${CLUSTER_DIR:-/tmp/abilities-cluster-$(id -u)}
cmd=${1:-start}
replicas=${REPLICAS:-3}
pg_port=${PG_PORT:-54330}
records=${CLUSTER_STORE:-postgres}
redis_port=${REDIS_PORT:-63791}

stop() {
  [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
  for pid in "$dir"/replica-*.pid; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
  done
  rm -f "$dir"/replica-*.pid "$dir"/replica-*.addr "$dir/nginx.pid" "$dir/url"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until the replica at ADDR answers its readiness probe (as a platform's would).
ready() {
  python3 - "$1" <<'PY'
import sys, time, urllib.request
for _ in range(200):
    try:
        if urllib.request.urlopen(f"http://{sys.argv[1]}/readyz", timeout=2).status == 200:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit(1)
PY
}

restart() {
  local n=$1 addr pid
  addr=$(cat "$dir/replica-$n.addr")
  pid=$(cat "$dir/replica-$n.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 800); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then echo "cluster.sh: replica $n did not stop within 40 s" >&2; exit 1; fi
  # shellcheck disable=SC2046 # the store's arguments, one per line
  ABILITIES_STATE_KEY=$(cat "$dir/state-key") "$(cat "$dir/bin")" --mode all $(cat "$dir/store-args") \
    --http "$addr" --replica "replica-$n" >"$dir/replica-$n.url" 2>>"$dir/replica-$n.log" &
  echo $! >"$dir/replica-$n.pid"
  ready "$addr" || { tail -n 20 "$dir/replica-$n.log" >&2; echo "cluster.sh: replica $n never got ready again" >&2; exit 1; }
}

case $cmd in
  stop)
    stop
    exit 0
    ;;
  restart)
    restart "${2:?usage: scripts/cluster.sh restart N}"
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: scripts/cluster.sh start|stop|restart N" >&2
    exit 2
    ;;
esac

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "cluster.sh: nginx is missing: apt-get install nginx-light" >&2; exit 1; }
nginx=$(command -v nginx || echo /usr/sbin/nginx)
stop
mkdir -p "$dir/nginx"

store=$("$root/scripts/pg.sh" start "$pg_port")
# A fresh database for this cluster, so its rows are its own.
PGOPTIONS=--client-min-messages=warning psql "postgres://postgres@127.0.0.1:$pg_port/postgres" -qtAc "DROP DATABASE IF EXISTS cluster WITH (FORCE)" >/dev/null
psql "postgres://postgres@127.0.0.1:$pg_port/postgres" -qtAc "CREATE DATABASE cluster" >/dev/null
store=${store%/*}/cluster
echo "$store" >"$dir/store"
echo "$records" >"$dir/records"
case $records in
  postgres) printf '%s\n' --store "$store" >"$dir/store-args" ;;
  redis)
    redis=$("$root/scripts/redis.sh" start "$redis_port")
    redis-cli -p "$redis_port" flushall >/dev/null
    printf '%s\n' --store "$redis" --data "$store" >"$dir/store-args"
    ;;
  *) echo "cluster.sh: CLUSTER_STORE is postgres or redis, not '$records'" >&2; exit 2 ;;
esac

if [ -z "${ABILITIES_STATE_KEY:-}" ]; then
  ABILITIES_STATE_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')
fi
export ABILITIES_STATE_KEY
printf '%s\n' "$ABILITIES_STATE_KEY" >"$dir/state-key"
chmod 600 "$dir/state-key"

bin=${TODO_BIN:-}
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --quiet -p abilities-examples --features postgres,redis --example todo)
  bin="$root/target/debug/examples/todo"
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
echo "$bin" >"$dir/bin"

upstreams=""
for n in $(seq 1 "$replicas"); do
  # shellcheck disable=SC2046 # the store's arguments, one per line
  "$bin" --mode all $(cat "$dir/store-args") --http 127.0.0.1:0 --replica "replica-$n" \
    >"$dir/replica-$n.url" 2>"$dir/replica-$n.log" &
  echo $! >"$dir/replica-$n.pid"
done
for n in $(seq 1 "$replicas"); do
  # A debug build starting three replicas on two busy cores may take a while.
  for _ in $(seq 1 600); do
    [ -s "$dir/replica-$n.url" ] && break
    kill -0 "$(cat "$dir/replica-$n.pid")" 2>/dev/null || { cat "$dir/replica-$n.log" >&2; echo "cluster.sh: replica $n died" >&2; exit 1; }
    sleep 0.05
  done
  addr=$(head -n 1 "$dir/replica-$n.url" | sed -e 's|^http://||' -e 's|/mcp$||')
  [ -n "$addr" ] || { tail -n 30 "$dir/replica-$n.log" >&2; echo "cluster.sh: replica $n printed no address within 30 s" >&2; exit 1; }
  echo "$addr" >"$dir/replica-$n.addr"
  # In rotation once ready, as a platform's readiness probe would have it.
  ready "$addr" || { cat "$dir/replica-$n.log" >&2; echo "cluster.sh: replica $n never got ready" >&2; exit 1; }
  upstreams+="        server $addr max_fails=1 fail_timeout=1s;"$'\n'
done

port=${NGINX_PORT:-$(free_port)}
cat >"$dir/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon on;
pid $dir/nginx.pid;
error_log $dir/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/nginx/body;
    proxy_temp_path $dir/nginx/proxy;
    fastcgi_temp_path $dir/nginx/fastcgi;
    uwsgi_temp_path $dir/nginx/uwsgi;
    scgi_temp_path $dir/nginx/scgi;
    upstream todo {
$upstreams        keepalive 64;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://todo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            # Server-sent events (subscriptions/listen) flow as they come.
            proxy_buffering off;
            proxy_read_timeout 300s;
            # A replica that refuses the connection is skipped; a request it may have
            # started is never sent twice (POST is not idempotent): the client retries, with
            # an idempotency key when the write must not happen twice.
            proxy_next_upstream error timeout;
        }
    }
}
EOF
"$nginx" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log"
for _ in $(seq 1 100); do
  [ -s "$dir/nginx.pid" ] && break
  sleep 0.05
done
url="http://127.0.0.1:$port/mcp"
echo "$url" >"$dir/url"
echo "$url"
