use abilities::ability;

/// Echoes.
#[ability(semantic = "READ")]
fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
