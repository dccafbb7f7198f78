use abilities::ability;

/// A header name with a space.
#[ability(semantic = "READ")]
fn region(#[param(header = "My Region")] region: String) -> String {
    region
}

/// A flattened value has no name to mirror.
#[ability(semantic = "READ", flatten)]
fn echo(#[param(header = "Echo")] value: String) -> String {
    value
}

fn main() {}
