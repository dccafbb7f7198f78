//! `#[ability(crate = "...")]`: generated code finds the framework through a re-export.

mod facade {
    pub use abilities;
}

use facade::abilities::ability;

/// Says hi.
#[ability(semantic = "READ", crate = "facade::abilities")]
fn hello() -> String {
    "hi".to_owned()
}

fn main() {
    let registry = facade::abilities::Registry::collect().expect("the registry builds");
    assert_eq!(registry.get("hello").map(|a| a.name()), Some("hello"));
}
