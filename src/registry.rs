//! What a registry and a running server hold.
//!
//! [`Registry`](crate::Registry) and [`Server`](crate::Server) live at the crate root; here are
//! the types they hand out: the iterator over a registry, the abilities of a running server
//! ([`ServedAbilities`], to add and remove them live) and the error of a registry that cannot be
//! built.

pub use abilities_runtime::{Iter, RegistryError, ServedAbilities};
