//! Benchmarks, the load generator, the token report and the compile-fail tests of
//! `#[ability]`: the workspace's tooling, kept out of the `abilities` package so a first build
//! of its examples compiles none of it. See `benches/`, `examples/` and `tests/`.
