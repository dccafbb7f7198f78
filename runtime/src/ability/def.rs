//! The const form of an ability that `#[ability]` registers through `inventory`: string
//! slices and function pointers. The registry turns each into an owned [`Ability`](super::Ability).

use std::fmt;

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use super::{AbilityKind, Annotations, CallFuture, Completer, Danger, Semantic, TaskSupport};
use crate::{Context, Requirement};

/// How an ability takes its input.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub enum InputDef {
    /// No value parameters: arguments are accepted and ignored.
    None,
    /// Named parameters, each a property of the input object.
    Object {
        /// One property per value parameter, in signature order.
        properties: &'static [PropertyDef],
    },
    /// `flatten`: one value parameter whose own schema is the input.
    Flattened {
        /// Generates the value's schema.
        schema: fn() -> Schema,
        /// The parameter's default, from `#[param(default = ...)]`.
        default: Option<fn() -> Value>,
        /// The parameter's description, from `#[param(description = ...)]`.
        description: Option<&'static str>,
        /// From `#[param(complete = ...)]`.
        complete: Option<Completer>,
        /// From `#[param(sensitive)]`: the whole input is.
        sensitive: bool,
    },
}

/// One named parameter of an object input.
#[doc(hidden)]
pub struct PropertyDef {
    /// The property name: the parameter's name.
    pub name: &'static str,
    /// Generates the parameter type's schema (sharing one generator across properties);
    /// `None` for an extractor, which is no property.
    pub schema: fn(&mut SchemaGenerator) -> Option<Schema>,
    /// From `#[param(description = ...)]`.
    pub description: Option<&'static str>,
    /// From `#[param(header = ...)]`: the property's `x-mcp-header`.
    pub header: Option<&'static str>,
    /// From `#[param(default = ...)]`.
    pub default: Option<fn() -> Value>,
    /// From `#[param(complete = ...)]`.
    pub complete: Option<Completer>,
    /// From `#[param(sensitive)]`.
    pub sensitive: bool,
}

/// Everything `#[ability]` knows about a function at compile time: string slices and function
/// pointers, so it is built in a `const` and registered through `inventory`. Schemas and
/// validators are derived from it once, when the [`Registry`](crate::Registry) is built.
#[doc(hidden)]
pub struct AbilityDef {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    pub category: Option<&'static str>,
    pub semantic: Semantic,
    pub permission: Option<&'static str>,
    pub public: bool,
    pub site: bool,
    pub annotations: Annotations,
    pub kind: AbilityKind,
    pub family: Option<&'static str>,
    /// From `meta(...)`: the text of a JSON object, checked by the macro.
    pub meta: Option<&'static str>,
    pub danger: Option<Danger>,
    /// From `confirm` (`Some(true)`) or `confirm = false`: whether a call must be confirmed
    /// by the user; `None` takes the danger level's answer.
    pub confirm: Option<bool>,
    /// From `task = "..."`.
    pub task: TaskSupport,
    /// From `rate = "10/min"`, checked by the macro: (calls, period in seconds).
    pub rate: Option<(u32, u64)>,
    /// The note of the function's `#[deprecated]`, if it has one (`""` for none).
    pub deprecated: Option<&'static str>,
    pub input: InputDef,
    /// What each owned parameter needs from the server.
    pub requires: &'static [fn() -> Option<Requirement>],
    pub output: fn() -> Option<Schema>,
    pub call: fn(Context, Value) -> CallFuture,
    pub rust_path: &'static str,
    pub file: &'static str,
    pub line: u32,
}

impl AbilityDef {
    /// `file:line` of the definition.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

impl fmt::Debug for AbilityDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbilityDef")
            .field("name", &self.name)
            .field("semantic", &self.semantic)
            .field("rust_path", &self.rust_path)
            .field("file", &self.file)
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

inventory::collect!(AbilityDef);
