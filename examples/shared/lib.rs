//! What the examples share, as a library: the abilities of the `site` and `todo` examples and
//! the data they work on, the `--mode` and `--store` flags, and a large generated catalog. The benches and the integration tests use
//! them too.
//!
//! Each example serves only its own abilities ([`site::registry`], [`todo::registry`]): a
//! program that links this library links both sets.

pub mod catalog;
pub mod mode;
mod pushdown;
pub mod site;
pub mod stores;
pub mod todo;
