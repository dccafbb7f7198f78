use abilities::ability;

/// Echoes.
#[ability(semantic = "READ")]
fn echo(__ability_args: String) -> String {
    __ability_args
}

fn main() {}
