//! What an upstream's lists gave: what the bridge serves for it, and what it does not, with
//! why. The upstream keeps it (its status shows it); the sync writes it.

use crate::classify::Classification;

/// One thing the bridge serves for an upstream.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Served {
    /// The ability's name (`<server>/<tool>`), or a skill's URI here.
    pub(crate) ability: String,
    /// The upstream's own name for it.
    pub(crate) upstream: String,
    /// `tool`, `resource`, `template` (a resource template), `prompt` or `skill`.
    pub(crate) kind: &'static str,
    /// A tool's classification.
    #[serde(skip)]
    pub(crate) class: Option<Classification>,
}

/// What an upstream's lists gave, served and not.
#[derive(Clone, Debug, Default)]
pub(crate) struct Listing {
    /// What is served.
    pub(crate) served: Vec<Served>,
    /// What is not, with why (hidden by the overlay, a schema that does not compile, a name
    /// taken).
    pub(crate) skipped: Vec<(String, String)>,
}
