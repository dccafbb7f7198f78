use abilities::ability;

/// Not a function.
#[ability(semantic = "READ")]
struct Answer;

fn main() {}
