//! Misuse of `#[ability]` is a compile error at the offending token; each case is pinned by
//! its reviewed `.stderr`. Hygiene cases must compile and run.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
    t.pass("ui-pass/*.rs");
}
