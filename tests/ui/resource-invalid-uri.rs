use abilities::ability;

/// No scheme.
#[ability(semantic = "READ", resource = "readme")]
fn readme() -> String {
    String::new()
}

/// An unclosed variable.
#[ability(semantic = "READ", resource = "posts://{id")]
fn post(id: u64) -> u64 {
    id
}

/// Two variables in a row.
#[ability(semantic = "READ", resource = "db://{table}{id}")]
fn row(table: String, id: u64) -> String {
    format!("{table}{id}")
}

fn main() {}
