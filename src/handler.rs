//! Abilities built at run time, and handlers below the attribute.
//!
//! `#[ability]` covers most needs. Come here to build an [`Ability`](crate::Ability) from data
//! with [`AbilityBuilder`], to implement a [`Handler`] yourself, or to mount the server's rmcp
//! handler ([`McpHandler`]) in your own rmcp service.

pub use abilities_runtime::{
    AbilityBuilder, AbilityKind, Annotations, CallFuture, CallOutput, Completer, Handler,
    McpHandler, Output,
};
