//! JSON as an MCP-AQL request: operations, parameters and collection queries.
#![no_main]

#[path = "../../tests/suite/fuzzing.rs"]
mod fuzzing;

thread_local! {
    static HARNESS: fuzzing::Harness = fuzzing::Harness::new();
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    HARNESS.with(|harness| harness.aql(&request));
});
