//! The kinds an ability is written with, as `#[ability]` reads them and the runtime serves
//! them: its semantic, its danger level and whether it may run as a background task. Each is
//! listed once here, with the spelling the attribute accepts.

use std::fmt;

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
    /// Every semantic, in the order messages list them.
    pub const ALL: [Self; 5] = [
        Self::Create,
        Self::Read,
        Self::Update,
        Self::Delete,
        Self::Execute,
    ];

    /// The semantic spelled `text` (upper case, as [`as_str`](Self::as_str) writes it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

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
    /// Every level, lowest first.
    pub const ALL: [Self; 5] = [
        Self::Safe,
        Self::Reversible,
        Self::Destructive,
        Self::Dangerous,
        Self::Forbidden,
    ];

    /// The level spelled `text` (lower case, as [`as_str`](Self::as_str) writes it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == text)
    }

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

/// Whether a tool ability may run as a background task (the tasks extension of protocol
/// 2026-07-28), from `#[ability(task = "...")]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Always answered in the request (the default).
    Forbidden,
    /// A task when the client declares the tasks extension, else answered in the request.
    Optional,
    /// Only as a task: a client without the tasks extension is refused (`-32021`).
    Required,
}

impl Default for TaskSupport {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl TaskSupport {
    /// What an ability that says nothing gets: [`Forbidden`](Self::Forbidden).
    pub const DEFAULT: Self = Self::Forbidden;

    /// Every choice, in the order messages list them.
    pub const ALL: [Self; 3] = [Self::Forbidden, Self::Optional, Self::Required];

    /// The choice spelled `text` (as [`as_str`](Self::as_str) writes it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }

    /// The form used in `#[ability(task = "...")]`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// `"a", "b", "c"`: the spellings of `values`, as messages list what was expected.
pub fn one_of<I: IntoIterator<Item = &'static str>>(values: I) -> String {
    values
        .into_iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::{Danger, Semantic, TaskSupport, one_of};

    #[test]
    fn every_spelling_parses_back() {
        for semantic in Semantic::ALL {
            assert_eq!(Semantic::parse(semantic.as_str()), Some(semantic));
        }
        for danger in Danger::ALL {
            assert_eq!(Danger::parse(danger.as_str()), Some(danger));
        }
        for task in TaskSupport::ALL {
            assert_eq!(TaskSupport::parse(task.as_str()), Some(task));
        }
        assert_eq!(Semantic::parse("read"), None);
        assert_eq!(Danger::parse("Safe"), None);
        assert_eq!(TaskSupport::parse(""), None);
    }

    #[test]
    fn lists_read_as_messages_show_them() {
        assert_eq!(
            one_of(TaskSupport::ALL.map(TaskSupport::as_str)),
            "\"forbidden\", \"optional\", \"required\""
        );
    }
}
