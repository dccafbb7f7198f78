#!/usr/bin/env bash
# The first build of a user's crate: the README's quick start (a new crate, its dependencies
# and `src/main.rs` as the README writes them) against the same two tools written with bare
# rmcp and axum (bench/first-build/bare-rmcp). Each is built cold in an empty target directory
# of its own, one after the other, with the registry fetched beforehand, under the default dev
# profile a new crate has. Prints seconds and packages compiled for each, their ratio, and the
# packages only the quick start compiles.
# Run: bash scripts/first-build.sh (CI runs it before the quick start, which then reuses its
# build). FIRST_BUILD_ORDER=bare-first builds the bare crate first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Outside the repository, as a user's crate is (inside, cargo would take it for a member).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/abilities"
python3 "$root/scripts/readme_crate.py" "$root/README.md" "$work/hello-mcp"
rmcp_version=$(grep -A1 '^name = "rmcp"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p' | head -n1)
cp -r "$root/bench/first-build/bare-rmcp" "$work/bare-rmcp"
sed -i "s/RMCP_VERSION/$rmcp_version/" "$work/bare-rmcp/Cargo.toml"
for crate in hello-mcp bare-rmcp; do
  # The workspace's lock: the versions CI tests, where the two crates share dependencies.
  cp "$root/Cargo.lock" "$work/$crate/Cargo.lock"
  (cd "$work/$crate" && cargo fetch --quiet)
done

build() {
  local crate=$1 target=$2
  rm -rf "$target"
  local start end
  start=$(date +%s.%N)
  (cd "$work/$crate" && CARGO_TARGET_DIR="$target" cargo build --color never 2>"$work/$crate.log")
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.1f}')" >"$work/$crate.secs"
  grep -c '^ *Compiling ' "$work/$crate.log" >"$work/$crate.count"
  grep '^ *Compiling ' "$work/$crate.log" | awk '{print $2}' | sort -u >"$work/$crate.packages"
}

# The quick start builds into target/quickstart, which scripts/quickstart.sh then reuses.
order=(hello-mcp bare-rmcp)
[ "${FIRST_BUILD_ORDER:-}" = bare-first ] && order=(bare-rmcp hello-mcp)
for crate in "${order[@]}"; do
  case $crate in
    hello-mcp) build hello-mcp "$root/target/quickstart" ;;
    bare-rmcp) build bare-rmcp "$work/target-bare" ;;
  esac
done

q=$(cat "$work/hello-mcp.secs") b=$(cat "$work/bare-rmcp.secs")
echo "first build, cold (registry fetched), $(nproc) cores:"
printf '  %-28s %6s s  %4s packages\n' "quick start (abilities)" "$q" "$(cat "$work/hello-mcp.count")"
printf '  %-28s %6s s  %4s packages\n' "bare rmcp $rmcp_version + axum" "$b" "$(cat "$work/bare-rmcp.count")"
python3 -c "print(f'  ratio: {$q / $b:.2f}x')"
echo "  packages only the quick start compiles:"
comm -23 "$work/hello-mcp.packages" "$work/bare-rmcp.packages" | tr '\n' ' ' | fold -s -w 92 | sed 's/^/    /'
echo
