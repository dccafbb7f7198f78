//! Generated code must not depend on the user's prelude: every name it uses is absolute.
#![allow(dead_code, non_camel_case_types)]

type Result = ();
type Option = ();
type Box = ();
type Vec = ();
type String = ();
struct Ok;
struct Err;
struct Some;
struct None;
mod core {}
mod std {}
mod serde {}
mod serde_json {}
mod schemars {}
mod inventory {}

use abilities::{AbilityError, Context, State, ability};

/// Object input, result output.
#[ability(semantic = "READ")]
fn object(a: u8, #[param(default = 3)] b: u8, c: ::core::option::Option<u8>) -> ::core::result::Result<u8, AbilityError> {
    ::core::result::Result::Ok(a + b + c.unwrap_or(0))
}

/// Flattened with a default, extractors, async.
#[ability(semantic = "READ", flatten)]
async fn flat(ctx: &Context, state: State<u8>, #[param(default = 2)] n: u8) -> u8 {
    let _ = ctx;
    n + *state
}

/// Two defaults whose parameter names could make one helper name.
#[ability(semantic = "READ")]
fn defaults(#[param(default = 1)] x: u8, #[param(default = 2)] json_x: u8) -> u8 {
    x + json_x
}

/// Unit return.
#[ability(semantic = "EXECUTE")]
fn unit() {}

/// Unit result.
#[ability(semantic = "DELETE")]
fn unit_result() -> ::core::result::Result<(), AbilityError> {
    ::core::result::Result::Ok(())
}

fn words(_: &abilities::Context, typed: &str) -> ::std::vec::Vec<::std::string::String> {
    ::std::vec![typed.to_owned()]
}

/// A resource template.
#[ability(semantic = "READ", resource = "docs://{slug}", mime_type = "text/plain")]
fn doc(slug: ::std::string::String) -> ::std::string::String {
    slug
}

/// A prompt with a completer.
#[ability(semantic = "READ", prompt)]
fn ask(#[param(complete = words)] word: ::std::string::String) -> abilities::prompt::Prompt {
    abilities::prompt::Prompt::new().user(word)
}

/// A parameter named like its function (which it would shadow in a plain call).
#[ability(semantic = "READ")]
fn find(find: u8) -> u8 {
    find
}

fn main() {
    let registry = abilities::Registry::collect();
    assert!(registry.is_ok());
    assert_eq!(registry.map(|r| r.len()).unwrap_or_default(), 8);
}
