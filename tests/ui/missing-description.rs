use abilities::ability;

#[ability(semantic = "READ")]
fn answer() -> u8 {
    42
}

fn main() {}
