use abilities::ability;

/// Says hi.
#[ability(semantic = "READ", readonly = true)]
fn hello() -> String {
    String::new()
}

fn main() {}
