use abilities::ability;

/// Lists.
#[ability(semantic = "READ")]
fn list(#[param(default = "ten")] limit: u8) -> u8 {
    limit
}

fn main() {}
