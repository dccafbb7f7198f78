use abilities::ability;

/// Says hi.
#[ability(semantic = "READ", crate = "my facade")]
fn hello() -> String {
    String::new()
}

fn main() {}
