use abilities::ability;

/// Adds.
#[ability(semantic = "READ")]
fn add((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}
