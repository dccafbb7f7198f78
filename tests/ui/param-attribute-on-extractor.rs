use abilities::{State, ability};

/// Reads state.
#[ability(semantic = "READ")]
fn read(#[param(description = "The store.")] store: State<u8>) -> u8 {
    *store
}

fn main() {}
