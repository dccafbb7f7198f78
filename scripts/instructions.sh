#!/usr/bin/env bash
# Instructions per call of the in-process call paths (bench/examples/call_instructions.rs),
# counted by valgrind's callgrind: run at two counts, the difference divided by the extra
# calls, so start-up and set-up cancel out. Same binary and input, same count, on any load.
# Then the budget (the handler at most rmcp's) and the sizes of the call's futures.
#   scripts/instructions.sh [target-dir]    (default: target)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-$root/target}
command -v valgrind >/dev/null || { echo "instructions: valgrind is required" >&2; exit 1; }
(cd "$root" && CARGO_TARGET_DIR="$target" cargo build --quiet --release -p abilities-bench --example call_instructions)
bin="$target/release/examples/call_instructions"
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
declare -A per
for path in flattened object handler rmcp; do
  low=$(count "$path" 200)
  high=$(count "$path" 1200)
  per[$path]=$(( (high - low) / 1000 ))
  echo "$path: ${per[$path]} instructions per call"
done
# The budget (docs/src/performance.md): the handler, validating, at most rmcp's #[tool] handler.
verdict=$([ "${per[handler]}" -le "${per[rmcp]}" ] && echo met || echo "not met")
echo "handler / rmcp: $(awk -v a="${per[handler]}" -v b="${per[rmcp]}" 'BEGIN { printf "%.2f", a / b }')x (budget: at most 1.00x, $verdict)"
"$bin" sizes
