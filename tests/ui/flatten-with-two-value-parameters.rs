use abilities::ability;

/// Adds.
#[ability(semantic = "READ", flatten)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
