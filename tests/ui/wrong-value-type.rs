use abilities::ability;

/// Says hi.
#[ability(semantic = READ, public = "yes", title = 3)]
fn hello() -> String {
    String::new()
}

fn main() {}
