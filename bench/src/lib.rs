//! Benchmarks, the load generator, the soak test and the token report: the workspace's
//! tooling, kept out of the `abilities` package so a first build of its examples compiles none
//! of it. See `benches/` and `examples/`; the tests are the `tests/` package.
