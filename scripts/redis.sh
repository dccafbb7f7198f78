#!/usr/bin/env bash
# A private Redis server for the tests and the cluster script, from Debian's package
# (redis-server; `.ci/run` installs it when missing): `scripts/redis.sh start [PORT]` starts
# one on 127.0.0.1:PORT (default 63790) with its files under /tmp/abilities-redis-UID-PORT,
# configured as a deployment of the store should be (an append-only file, so a restart keeps
# every record; no eviction), and prints its URL; `scripts/redis.sh stop [PORT]`
# stops it. Nothing listens beyond 127.0.0.1.
set -euo pipefail
cmd=${1:-start}
port=${2:-63790}
dir=${ABILITIES_REDIS_DIR:-/tmp/abilities-redis-$(id -u)-$port}
command -v redis-server >/dev/null || { echo "redis.sh: redis-server is missing: apt-get install redis-server" >&2; exit 1; }

running() { redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; }

case $cmd in
  start)
    if ! running; then
      mkdir -p "$dir"
      redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' --appendonly yes --appendfsync everysec \
        --maxmemory-policy noeviction \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/server.log"
      for _ in $(seq 1 100); do running && break; sleep 0.05; done
      running || { cat "$dir/server.log" >&2; exit 1; }
    fi
    echo "redis://127.0.0.1:$port"
    ;;
  stop)
    redis-cli -h 127.0.0.1 -p "$port" shutdown >/dev/null 2>&1 || true
    for _ in $(seq 1 100); do running || break; sleep 0.05; done
    ;;
  *)
    echo "usage: scripts/redis.sh start|stop [PORT]" >&2
    exit 2
    ;;
esac
