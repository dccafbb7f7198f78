//! Extractors: what an ability takes from its call besides its arguments.
//!
//! Implement [`FromContext`] (or [`FromContextRef`]) to give abilities a parameter filled from the
//! request instead of the arguments, as [`State`](crate::State) and [`Caller`](crate::Caller) are.

pub use abilities_runtime::{FromContext, FromContextRef, Requirement, StateMap};
