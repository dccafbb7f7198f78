use abilities::ability;

/// Says hi.
#[ability(flatten)]
fn hello(name: String) -> String {
    name
}

fn main() {}
