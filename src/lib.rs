//! Turn plain Rust functions into Model Context Protocol tools with one attribute.
#![doc = include_str!("../README.md")]

pub use abilities_macros::ability;
pub use abilities_runtime::*;
