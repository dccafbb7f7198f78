use abilities::ability;

/// `meta` is a list, not a string.
#[ability(semantic = "READ", meta = "owner")]
fn listed() -> u8 {
    1
}

/// A value that is not a literal, and a key given twice.
#[ability(semantic = "READ", meta(owner = ["a"], tier = 1, tier = 2))]
fn valued() -> u8 {
    1
}

/// A key that is a path.
#[ability(semantic = "READ", meta(team::owner = "a"))]
fn keyed() -> u8 {
    1
}

fn main() {}
