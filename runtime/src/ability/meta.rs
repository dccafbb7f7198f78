//! What an ability is, whoever made it: its semantic, danger, annotations and kind.

use std::borrow::Cow;

use crate::Context;

pub use abilities_core::{Danger, Semantic, TaskSupport};

/// MCP tool annotations: hints for clients, never a grant of anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool again with the same arguments has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to the world outside the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// The defaults for a semantic: READ is read-only and idempotent; UPDATE is idempotent;
    /// DELETE is destructive and idempotent; CREATE and EXECUTE are neither. No ability is
    /// open-world unless it says so.
    pub const fn for_semantic(semantic: Semantic) -> Self {
        let (read_only, destructive, idempotent) = match semantic {
            Semantic::Read => (true, false, true),
            Semantic::Create => (false, false, false),
            Semantic::Update => (false, false, true),
            Semantic::Delete => (false, true, true),
            Semantic::Execute => (false, false, false),
        };
        Self {
            read_only_hint: Some(read_only),
            destructive_hint: Some(destructive),
            idempotent_hint: Some(idempotent),
            open_world_hint: Some(false),
        }
    }

    /// These annotations with every `Some` of `overrides` taking precedence.
    pub const fn overridden_by(self, overrides: Annotations) -> Self {
        const fn pick(over: Option<bool>, base: Option<bool>) -> Option<bool> {
            match over {
                Some(v) => Some(v),
                None => base,
            }
        }
        Self {
            read_only_hint: pick(overrides.read_only_hint, self.read_only_hint),
            destructive_hint: pick(overrides.destructive_hint, self.destructive_hint),
            idempotent_hint: pick(overrides.idempotent_hint, self.idempotent_hint),
            open_world_hint: pick(overrides.open_world_hint, self.open_world_hint),
        }
    }
}

/// How an ability is served: as a tool (the default), a resource or a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbilityKind {
    /// An MCP tool.
    Tool,
    /// An MCP resource (`resource = "..."`): a fixed URI, or a URI template whose
    /// `{variables}` are the ability's parameters.
    Resource {
        /// The URI or URI template.
        uri: Cow<'static, str>,
        /// The MIME type of its contents, from `mime_type = "..."`.
        mime_type: Option<Cow<'static, str>>,
    },
    /// An MCP prompt (`prompt`): its parameters are the prompt's arguments.
    Prompt,
}

/// Completes an argument's value from what the user typed so far.
pub type Completer = fn(&Context, &str) -> Vec<String>;
