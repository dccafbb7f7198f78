use abilities::ability;

/// Answers.
#[ability(semantic = "READ")]
const fn answer() -> u8 {
    42
}

fn main() {}
