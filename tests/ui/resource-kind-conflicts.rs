use abilities::ability;

/// Both at once.
#[ability(semantic = "READ", resource = "docs://a", prompt)]
fn both() -> String {
    String::new()
}

/// A MIME type for a tool.
#[ability(semantic = "READ", mime_type = "text/plain")]
fn tool() -> String {
    String::new()
}

/// A resource that writes.
#[ability(semantic = "DELETE", resource = "docs://b")]
fn writes() -> String {
    String::new()
}

/// A flattened resource.
#[ability(semantic = "READ", resource = "docs://{id}", flatten)]
fn flat(id: u64) -> u64 {
    id
}

fn main() {}
