use abilities::{State, ability};

/// Reads state.
#[ability(semantic = "READ", flatten)]
fn read(store: State<u8>) -> u8 {
    *store
}

fn main() {}
