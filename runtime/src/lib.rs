//! Runtime of the [`abilities`](https://docs.rs/abilities) crate: the registry, schema
//! transformation, argument normalizer and call pipeline behind `#[ability]`.
//!
//! Depend on `abilities`, which re-exports everything here with the attribute.

mod ability;
mod context;
mod error;
mod name;
mod normalize;
mod pipeline;
mod registry;
mod schema;
mod validate;

#[doc(hidden)]
pub mod __private;

pub use ability::{Annotations, Semantic};
pub use context::{Caller, Context, FromContext, State, StateMap};
pub use error::{AbilityError, ErrorCode, RegistryError};
pub use name::{MAX_TOOL_NAME, tool_name};
pub use registry::{Ability, Registry};
