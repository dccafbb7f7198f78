//! What an ability is, whoever made it: its semantic, danger, annotations and kind.

use std::borrow::Cow;
use std::fmt;

use crate::Context;

/// What an ability does to the world. It drives default annotations, the MCP-AQL endpoint
/// family and danger defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Semantic {
    /// Creates something new.
    Create,
    /// Reads without changing anything.
    Read,
    /// Changes something that exists.
    Update,
    /// Removes something.
    Delete,
    /// Runs an action that fits none of the above.
    Execute,
}

impl Semantic {
    /// The upper-case form used in `#[ability(semantic = "...")]`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Read => "READ",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Execute => "EXECUTE",
        }
    }
}

impl fmt::Display for Semantic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much harm an operation can do (MCP-AQL danger levels). Operations at
/// [`Destructive`](Danger::Destructive) or above need confirmation on the MCP-AQL surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Danger {
    /// Reads only.
    Safe,
    /// Changes that can be undone.
    Reversible,
    /// Changes that lose data.
    Destructive,
    /// Wide or irreversible changes.
    Dangerous,
    /// Never without explicit human approval.
    Forbidden,
}

impl Danger {
    /// The lower-case form used in `#[ability(danger = "...")]` and on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Reversible => "reversible",
            Self::Destructive => "destructive",
            Self::Dangerous => "dangerous",
            Self::Forbidden => "forbidden",
        }
    }

    /// The default for a semantic: READ safe, DELETE destructive, the others reversible.
    pub const fn for_semantic(semantic: Semantic) -> Self {
        match semantic {
            Semantic::Read => Self::Safe,
            Semantic::Delete => Self::Destructive,
            Semantic::Create | Semantic::Update | Semantic::Execute => Self::Reversible,
        }
    }

    /// Whether an operation at this level needs confirmation.
    pub const fn needs_confirmation(self) -> bool {
        matches!(self, Self::Destructive | Self::Dangerous | Self::Forbidden)
    }

    /// The level an operation's name implies, by the MCP-AQL draft's name patterns, with
    /// the pattern that matched: `drop_*`, `delete_all*`, `truncate_*`, `reset_*`,
    /// `destroy_*`, `wipe_*` and `*_production` are forbidden; `force_*`, `*_permanently`,
    /// `bulk_delete*`, `override_*`, `bypass_*`, `*_without_backup` and `purge_*` dangerous.
    /// The highest match wins. (The draft's safe patterns, `get_*` and the like, never lower
    /// a level, so they are not listed.)
    pub fn from_name(name: &str) -> Option<(Self, &'static str)> {
        const PATTERNS: [(Danger, &str); 14] = [
            (Danger::Forbidden, "drop_*"),
            (Danger::Forbidden, "delete_all*"),
            (Danger::Forbidden, "truncate_*"),
            (Danger::Forbidden, "reset_*"),
            (Danger::Forbidden, "destroy_*"),
            (Danger::Forbidden, "wipe_*"),
            (Danger::Forbidden, "*_production"),
            (Danger::Dangerous, "force_*"),
            (Danger::Dangerous, "*_permanently"),
            (Danger::Dangerous, "bulk_delete*"),
            (Danger::Dangerous, "override_*"),
            (Danger::Dangerous, "bypass_*"),
            (Danger::Dangerous, "*_without_backup"),
            (Danger::Dangerous, "purge_*"),
        ];
        PATTERNS.into_iter().find(|(_, pattern)| {
            match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
                (Some(suffix), _) => name.ends_with(suffix),
                (_, Some(prefix)) => name.starts_with(prefix),
                _ => name == *pattern,
            }
        })
    }
}

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

/// Whether a tool ability may run as a background task (the tasks extension of protocol
/// 2026-07-28), from `#[ability(task = "...")]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Always answered in the request (the default).
    #[default]
    Forbidden,
    /// A task when the client declares the tasks extension, else answered in the request.
    Optional,
    /// Only as a task: a client without the tasks extension is refused (`-32021`).
    Required,
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
