use abilities::ability;

/// Says hi.
#[ability(semantic = "READ", flatten = true)]
fn hello(name: String) -> String {
    name
}

fn main() {}
