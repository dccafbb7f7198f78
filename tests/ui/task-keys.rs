use abilities::ability;

/// An unknown task support.
#[ability(semantic = "EXECUTE", task = "sometimes")]
fn export() -> u8 {
    1
}

/// A resource cannot be a task.
#[ability(semantic = "READ", resource = "docs://a", task = "optional")]
fn doc() -> String {
    String::new()
}

/// Nor can a prompt.
#[ability(semantic = "READ", prompt, task = "required")]
fn greeting() -> abilities::prompt::Prompt {
    abilities::prompt::Prompt::new()
}

fn main() {}
