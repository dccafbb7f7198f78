use abilities::ability;

/// Answers.
#[ability(semantic = "READ")]
extern "C" fn answer() -> u8 {
    42
}

fn main() {}
