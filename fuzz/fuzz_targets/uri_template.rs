//! URI templates and URIs: parsing, matching and the values a made URI gives back.
#![no_main]

#[path = "../../tests/suite/fuzzing.rs"]
mod fuzzing;

libfuzzer_sys::fuzz_target!(|input: (String, String, Vec<String>)| {
    let (template, uri, values) = input;
    fuzzing::uri_template(&template, &uri, &values);
});
