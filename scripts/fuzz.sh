#!/usr/bin/env bash
# The `cargo fuzz` targets in fuzz/: build them, then run each for SECONDS (default 5: the CI
# smoke; 600 for a real session) on a copy of its committed seeds, and print libFuzzer's last
# status line. `scripts/fuzz.sh 600 stdio_lines` runs one target. cargo-fuzz is installed
# (pinned) when missing; the nightly toolchain is used when present, else stable with
# RUSTC_BOOTSTRAP=1 (cargo fuzz passes nightly flags). No sanitizer: the project forbids
# `unsafe`; what the targets look for is a panic, a hang, or an answer of the wrong shape.
# `--dev` first builds the targets without optimizations: a build several times shorter, for a
# smoke run (CI: `scripts/fuzz.sh --dev 5`), at a fraction of the executions per second.
set -euo pipefail
profile=()
if [ "${1:-}" = --dev ]; then
  profile=(--dev)
  shift
fi
seconds=${1:-5}
shift || true
cd "$(dirname "$0")/../fuzz"
command -v cargo-fuzz >/dev/null || cargo install --quiet --locked cargo-fuzz --version 0.13.2
toolchain=()
if rustup run nightly rustc --version >/dev/null 2>&1; then
  toolchain=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
cargo "${toolchain[@]}" fuzz build "${profile[@]}" --sanitizer none
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo "${toolchain[@]}" fuzz list)
for target in "${targets[@]}"; do
  work=$(mktemp -d)
  cp corpus/"$target"/seed-* "$work"/
  echo "== $target: ${seconds}s"
  cargo "${toolchain[@]}" fuzz run "${profile[@]}" --sanitizer none "$target" "$work" -- \
    -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 2>&1 \
    | grep -E '^(#[0-9]+.*(DONE|pulse)|stat::|INFO: (Loaded|seed)|==[0-9]+==|thread .* panicked|SUMMARY)' | tail -12
  rm -rf "$work"
done
