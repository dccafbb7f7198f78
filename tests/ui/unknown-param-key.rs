use abilities::ability;

/// Echoes.
#[ability(semantic = "READ")]
fn echo(#[param(rename = "t")] text: String) -> String {
    text
}

fn main() {}
