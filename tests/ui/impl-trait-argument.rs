use abilities::ability;

/// Echoes.
#[ability(semantic = "READ")]
fn echo(value: impl Into<String>) -> String {
    value.into()
}

fn main() {}
