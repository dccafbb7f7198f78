//! Resources: abilities served as MCP resources, and their updates.
//!
//! An ability that declares `uri = "..."` is a resource; it returns [`Contents`] (or text), may
//! embed resources in tool results ([`EmbeddedResource`]) and tells subscribers about changes with
//! [`ResourceNotifier`].

pub use abilities_runtime::{Contents, EmbeddedResource, ResourceNotifier};
