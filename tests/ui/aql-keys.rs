use abilities::ability;

/// A family that is not snake_case.
#[ability(semantic = "READ", family = "Observe")]
fn observe() -> u8 {
    1
}

/// An unknown danger level.
#[ability(semantic = "DELETE", danger = "risky")]
fn purge() -> u8 {
    1
}

/// A resource cannot be an operation.
#[ability(semantic = "READ", resource = "docs://a", family = "docs")]
fn doc() -> String {
    String::new()
}

fn main() {}
