use abilities::ability;

/// Answers.
#[ability(semantic = "READ", name = "my plugin/the answer")]
fn answer() -> u8 {
    42
}

fn main() {}
