use abilities::ability;

/// Says hi.
#[ability(semantic = "READ", crate = "facade::abilities")]
fn hello() -> String {
    String::new()
}

fn main() {}
