use abilities::{Context, ability};

fn names(_: &Context, _: &str) -> Vec<String> {
    Vec::new()
}

fn wrong_shape(prefix: &str) -> Vec<String> {
    vec![prefix.to_owned()]
}

/// A tool gets no completion requests.
#[ability(semantic = "READ")]
fn tool(#[param(complete = names)] name: String) -> String {
    name
}

/// A completer of the wrong shape.
#[ability(semantic = "READ", prompt)]
fn prompt(#[param(complete = wrong_shape)] name: String) -> String {
    name
}

fn main() {}
