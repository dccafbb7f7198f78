use abilities::ability;

struct Opaque;

/// Makes something that cannot be serialized.
#[ability(semantic = "READ")]
fn make() -> Opaque {
    Opaque
}

fn main() {}
