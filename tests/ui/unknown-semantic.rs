use abilities::ability;

/// Says hi.
#[ability(semantic = "FETCH")]
fn hello() -> String {
    String::new()
}

fn main() {}
