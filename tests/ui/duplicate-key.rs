use abilities::ability;

/// Says hi.
#[ability(semantic = "READ", name = "a/hello", name = "b/hello")]
fn hello() -> String {
    String::new()
}

fn main() {}
