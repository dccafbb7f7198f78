use abilities::ability;

/// Answers.
#[ability(semantic = "READ")]
unsafe fn answer() -> u8 {
    42
}

fn main() {}
