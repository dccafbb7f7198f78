//! `#[param(default = "text")]` on owned string parameters: the literal is converted.

use std::borrow::Cow;

use abilities::ability;

/// Greets.
#[ability(semantic = "READ")]
fn greet(
    #[param(default = "world")] name: String,
    #[param(default = "Hello")] greeting: Cow<'static, str>,
) -> String {
    format!("{greeting}, {name}!")
}

fn main() {
    let registry = abilities::Registry::collect().expect("the registry builds");
    let greet = registry.get("greet").expect("registered");
    let schema = serde_json::Value::Object((**greet.input_schema()).clone());
    assert_eq!(schema["properties"]["name"]["default"], "world");
    assert_eq!(schema["properties"]["greeting"]["default"], "Hello");
}
