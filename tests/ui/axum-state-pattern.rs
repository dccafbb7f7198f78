use abilities::{State, ability};

struct Store;

/// Counts, destructuring the state as an axum handler would.
#[ability(semantic = "READ")]
fn count(State(store): State<Store>) -> u64 {
    let _ = store;
    0
}

fn main() {}
