#!/usr/bin/env bash
# The system packages the interop tests start, from Debian's packages, installed when missing:
# PostgreSQL (the store suite, the cluster), Redis (the store suite, the cluster on Redis),
# nginx (the cluster's balancer), Prometheus with promtool (the metrics tests) and Chromium
# (the live view, in headless mode). As root, or through sudo; on a system without apt-get it
# names what to install and fails.
set -euo pipefail
missing=()
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
command -v psql >/dev/null || missing+=(postgresql-client)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v prometheus >/dev/null || missing+=(prometheus)
command -v chromium >/dev/null || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
command -v apt-get >/dev/null || {
  echo "system-packages.sh: the interop tests need ${missing[*]} (Debian's package names); install them and run again" >&2
  exit 1
}
as_root=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || {
    echo "system-packages.sh: installing ${missing[*]} needs root: run as root, or install sudo" >&2
    exit 1
  }
  as_root=(sudo)
fi
echo "installing ${missing[*]} (Debian's packages)"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
