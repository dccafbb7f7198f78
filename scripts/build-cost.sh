#!/usr/bin/env bash
# Build cost of 100 abilities against the same 100 tools written with rmcp's macros: two
# generated crates (same parameters, same outputs) in one workspace under
# target/build-cost, dependencies built first. Prints the cold crate build (after
# `cargo clean -p`) and an incremental rebuild (one function body changed) of each, and the
# ratios. Run: bash scripts/build-cost.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/target/build-cost"
n=${BUILD_COST_N:-100}
rmcp_version=$(grep -A1 '^name = "rmcp"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p' | head -n1)
mkdir -p "$work/abilities100/src" "$work/rmcp100/src"

cat >"$work/Cargo.toml" <<TOML
[workspace]
members = ["abilities100", "rmcp100"]
resolver = "3"
TOML
cat >"$work/abilities100/Cargo.toml" <<TOML
[package]
name = "abilities100"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
abilities = { path = "$root" }
schemars = "1.2"
serde = { version = "1", features = ["derive"] }
TOML
cat >"$work/rmcp100/Cargo.toml" <<TOML
[package]
name = "rmcp100"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = { version = "=$rmcp_version", default-features = false, features = ["server", "macros"] }
schemars = "1.2"
serde = { version = "1", features = ["derive"] }
TOML

generate() {
  local marker=$1
  {
    echo 'use abilities::{AbilityError, ability};'
    echo 'use schemars::JsonSchema;'
    echo 'use serde::Serialize;'
    echo
    echo '#[derive(Serialize, JsonSchema)]'
    echo 'pub struct Out { pub id: u64, pub label: String }'
    for i in $(seq 1 "$n"); do
      cat <<RS

/// Operation $i.
#[ability(semantic = "READ")]
pub fn op_$i(#[param(description = "The id.")] id: u64, label: String, #[param(default = false)] verbose: bool) -> Result<Out, AbilityError> {
    let _ = verbose;
    Ok(Out { id, label: format!("{label}-$i$( [ "$i" = 50 ] && echo "$marker")") })
}
RS
    done
  } >"$work/abilities100/src/lib.rs"
  {
    echo 'use rmcp::handler::server::router::tool::ToolRouter;'
    echo 'use rmcp::handler::server::wrapper::{Json, Parameters};'
    echo 'use rmcp::model::{ServerCapabilities, ServerConfig};'
    echo 'use rmcp::{ServerHandler, tool, tool_handler, tool_router};'
    echo 'use schemars::JsonSchema;'
    echo 'use serde::{Deserialize, Serialize};'
    echo
    echo '#[derive(Serialize, JsonSchema)]'
    echo 'pub struct Out { pub id: u64, pub label: String }'
    for i in $(seq 1 "$n"); do
      cat <<RS

#[derive(Deserialize, JsonSchema)]
pub struct Args$i {
    /// The id.
    pub id: u64,
    pub label: String,
    #[serde(default)]
    pub verbose: bool,
}
RS
    done
    echo
    echo '#[derive(Clone)]'
    echo 'pub struct Tools { tool_router: ToolRouter<Self> }'
    echo
    echo '#[tool_router]'
    echo 'impl Tools {'
    echo '    pub fn new() -> Self { Self { tool_router: Self::tool_router() } }'
    for i in $(seq 1 "$n"); do
      cat <<RS

    /// Operation $i.
    #[tool]
    async fn op_$i(&self, Parameters(Args$i { id, label, verbose }): Parameters<Args$i>) -> Result<Json<Out>, String> {
        let _ = verbose;
        Ok(Json(Out { id, label: format!("{label}-$i$( [ "$i" = 50 ] && echo "$marker")") }))
    }
RS
    done
    echo '}'
    echo
    echo '#[tool_handler(router = self.tool_router)]'
    echo 'impl ServerHandler for Tools {'
    echo '    fn get_info(&self) -> ServerConfig { ServerConfig::new(ServerCapabilities::builder().enable_tools().build()) }'
    echo '}'
  } >"$work/rmcp100/src/lib.rs"
}

seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }' 
}

cd "$work"
generate ""
echo "building dependencies..."
cargo build --quiet --workspace
declare -A cold incr
for crate in abilities100 rmcp100; do
  cargo clean --quiet -p "$crate"
  cold[$crate]=$(seconds cargo build -p "$crate")
done
generate "-changed"
for crate in abilities100 rmcp100; do
  incr[$crate]=$(seconds cargo build -p "$crate")
done
generate ""
printf '| %s functions | abilities | rmcp macros | ratio |\n|---|---|---|---|\n' "$n"
for kind in cold incr; do
  declare -n times=$kind
  label=$([ "$kind" = cold ] && echo "cold crate build" || echo "incremental (one body changed)")
  awk -v l="$label" -v a="${times[abilities100]}" -v r="${times[rmcp100]}" \
    'BEGIN { printf "| %s | %.1f s | %.1f s | %.2fx |\n", l, a, r, a / r }' 
done
