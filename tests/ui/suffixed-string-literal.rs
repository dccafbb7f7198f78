use abilities::ability;

/// Answers.
#[ability(semantic = "READ"suffix)]
fn answer() -> u8 {
    42
}

fn main() {}
