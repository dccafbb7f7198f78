use abilities::ability;
use abilities::http::axum::extract::State;

struct Store;

/// Counts, with axum's `State` imported by mistake.
#[ability(semantic = "READ")]
fn count(store: State<Store>) -> u64 {
    let _ = store;
    0
}

fn main() {}
