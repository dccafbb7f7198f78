use abilities::ability;

/// Echoes.
#[ability(semantic = "READ")]
fn echo(text: &str) -> String {
    text.to_owned()
}

fn main() {}
