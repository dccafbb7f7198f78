"""Make the README's quick start a crate: `python3 scripts/readme_crate.py README.md DIR` writes
DIR/Cargo.toml (package `hello-mcp`, the quick start's `[dependencies]`) and DIR/src/main.rs
(its `src/main.rs`), as a newcomer would copy them. Used by quickstart.sh and first-build.sh."""
import os
import re
import sys

readme, out = sys.argv[1], sys.argv[2]
text = open(readme).read()
section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
rust = re.search(r"```rust[^\n]*\n(.*?)```", section, re.S).group(1)
assert "[dependencies]" in toml and "fn main" in rust, "the quick start lost its blocks"
os.makedirs(f"{out}/src", exist_ok=True)
open(f"{out}/Cargo.toml", "w").write(
    '[package]\nname = "hello-mcp"\nversion = "0.1.0"\nedition = "2024"\n\n' + toml)
open(f"{out}/src/main.rs", "w").write(rust)
