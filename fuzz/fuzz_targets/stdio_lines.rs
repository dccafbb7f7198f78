//! Raw bytes as stdio input: the line framing, the JSON-RPC message checks and batches.
#![no_main]

#[path = "../../tests/suite/fuzzing.rs"]
mod fuzzing;

thread_local! {
    static HARNESS: fuzzing::Harness = fuzzing::Harness::new();
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    HARNESS.with(|harness| {
        harness.stdio(data);
    });
});
