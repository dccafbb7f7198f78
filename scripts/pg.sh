#!/usr/bin/env bash
# A private PostgreSQL server for the tests and the cluster script, from Debian's package
# (postgresql-15; `.ci/run` installs it when missing): `scripts/pg.sh start [PORT]` creates a
# cluster under /tmp/abilities-pg-UID-PORT (once; outside the checkout, which the server's
# own user may not be able to enter), starts it on 127.0.0.1:PORT (default 54329) with trust
# authentication for local connections, creates the database `abilities` and prints its URL;
# `scripts/pg.sh stop [PORT]` stops it. Nothing listens beyond 127.0.0.1.
set -euo pipefail
cmd=${1:-start}
port=${2:-54329}
dir=${ABILITIES_PG_DIR:-/tmp/abilities-pg-$(id -u)-$port}

bin=""
for candidate in /usr/lib/postgresql/*/bin; do
  [ -x "$candidate/initdb" ] && bin=$candidate
done
[ -n "$bin" ] || { echo "pg.sh: PostgreSQL's server (initdb, pg_ctl) is missing: apt-get install postgresql" >&2; exit 1; }

# The server refuses to run as root: as root, run it as the package's `postgres` user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "pg.sh: no 'postgres' user to run the server as" >&2; exit 1; }
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case $cmd in
  start)
    if [ ! -s "$dir/data/PG_VERSION" ]; then
      mkdir -p "$dir/data"
      [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
      as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    if ! as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      # Many replicas and pools connect in the cluster test; fsync off: test data only.
      as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off -c synchronous_commit=off" \
        start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    fi
    as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'abilities'" | grep -q 1 \
      || as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres abilities
    echo "postgres://postgres@127.0.0.1:$port/abilities"
    ;;
  stop)
    [ -d "$dir/data" ] && as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    ;;
  *)
    echo "usage: scripts/pg.sh start|stop [PORT]" >&2
    exit 2
    ;;
esac
