use abilities::ability;

/// A confirmation spelled as a word.
#[ability(semantic = "DELETE", confirm = "yes")]
fn spelled(id: u64) -> u64 {
    id
}

/// A resource asked to be confirmed.
#[ability(semantic = "READ", resource = "notes://all", confirm)]
fn listed() -> String {
    String::new()
}

/// Confirmation with arguments.
#[ability(semantic = "DELETE", confirm(always))]
fn called(id: u64) -> u64 {
    id
}

fn main() {}
