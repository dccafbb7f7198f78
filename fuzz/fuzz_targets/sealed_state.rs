//! Text as a sealed `requestState` and as an MCP-AQL confirmation token: always refused.
#![no_main]

#[path = "../../tests/suite/fuzzing.rs"]
mod fuzzing;

thread_local! {
    static HARNESS: fuzzing::Harness = fuzzing::Harness::new();
}

libfuzzer_sys::fuzz_target!(|text: &str| {
    HARNESS.with(|harness| harness.sealed(text));
});
