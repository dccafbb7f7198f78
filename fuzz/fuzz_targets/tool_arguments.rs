//! JSON as every tool's arguments, native and standard: the normalizer, validation and the
//! lenient coercion.
#![no_main]

#[path = "../../tests/suite/fuzzing.rs"]
mod fuzzing;

thread_local! {
    static HARNESS: fuzzing::Harness = fuzzing::Harness::new();
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(args) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    HARNESS.with(|harness| harness.tool_arguments(&args));
});
