//! The configuration of an MCP-AQL surface: its mode, limits, confirmation, computed fields
//! and relations.

use std::time::Duration;

use serde_json::Value;

use super::relations::Relation;

/// Which MCP-AQL tools a server registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AqlMode {
    /// One `mcp_aql` tool for every operation.
    Single,
    /// One `mcp_aql_<family>` tool per family: the CRUDE five and any custom ones.
    #[default]
    Semantic,
    /// Both.
    All,
}

impl AqlMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Semantic => "semantic",
            Self::All => "all",
        }
    }
}

/// Size limits of MCP-AQL requests and responses (the draft's defaults), advertised in
/// `_protocol.limits`; a request or response beyond them is `VALIDATION_PAYLOAD_TOO_LARGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AqlLimits {
    /// The serialized request, in bytes (default 1 MB).
    pub max_request_size: usize,
    /// The serialized response, in bytes (default 10 MB).
    pub max_response_size: usize,
    /// Any one string, in bytes (default 1 MB).
    pub max_string_length: usize,
    /// Any one array (default 10,000 elements).
    pub max_array_elements: usize,
    /// Nesting of objects and arrays, the root being 1 (default 32).
    pub max_nesting_depth: usize,
    /// Operations in one batch (default 100).
    pub max_batch_operations: usize,
}

impl Default for AqlLimits {
    fn default() -> Self {
        Self {
            max_request_size: 1_000_000,
            max_response_size: 10_000_000,
            max_string_length: 1_000_000,
            max_array_elements: 10_000,
            max_nesting_depth: 32,
            max_batch_operations: 100,
        }
    }
}

/// A value computed for each item of a collection operation, requested as
/// `fields: ["_computed.<name>"]` and usable in `filter` and `sort`.
#[derive(Clone, Debug)]
pub struct ComputedField {
    pub(crate) operation: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) kind: &'static str,
    pub(crate) compute: fn(&Value) -> Value,
}

impl PartialEq for ComputedField {
    fn eq(&self, other: &Self) -> bool {
        (&self.operation, &self.name) == (&other.operation, &other.name)
    }
}

impl Eq for ComputedField {}

/// The configuration of an MCP-AQL surface.
///
/// ```standalone_crate
/// use abilities::{aql::{Aql, AqlMode}, Server, Surface};
///
/// // The standard profile: every CRUDE tool, whatever the registry holds.
/// let server = Server::builder()
///     .surface(Surface::Aql(Aql::new(AqlMode::Semantic).prefix("todo_")))
///     .build()
///     .unwrap();
/// let names: Vec<_> = server.tools().iter().map(|t| t.name.to_string()).collect();
/// assert_eq!(
///     names,
///     ["todo_mcp_aql_create", "todo_mcp_aql_read", "todo_mcp_aql_update", "todo_mcp_aql_delete", "todo_mcp_aql_execute"]
/// );
///
/// // Only the families that have operations (`read` always: it serves `introspect`).
/// let server = Server::builder()
///     .surface(Surface::Aql(Aql::new(AqlMode::All).skip_empty_families(true)))
///     .build()
///     .unwrap();
/// let names: Vec<_> = server.tools().iter().map(|t| t.name.to_string()).collect();
/// assert_eq!(names, ["mcp_aql", "mcp_aql_read"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aql {
    pub(crate) mode: AqlMode,
    pub(crate) prefix: String,
    pub(crate) limits: AqlLimits,
    pub(crate) confirm_ttl: Duration,
    pub(crate) elicit_confirmation: bool,
    pub(crate) computed: Vec<ComputedField>,
    pub(crate) skip_empty_families: bool,
    pub(crate) relations: Vec<Relation>,
}

impl Default for Aql {
    /// [`Aql::new`] in the default mode ([`AqlMode::Semantic`], the CRUDE tools).
    fn default() -> Self {
        Self::new(AqlMode::default())
    }
}

impl Aql {
    /// A surface in `mode`, with the draft's defaults: no prefix, default limits, five-minute
    /// confirmation tokens, and confirmation asked of the user directly when the client
    /// supports elicitation.
    pub fn new(mode: AqlMode) -> Self {
        Self {
            mode,
            prefix: String::new(),
            limits: AqlLimits::default(),
            confirm_ttl: Duration::from_secs(300),
            elicit_confirmation: true,
            computed: Vec::new(),
            skip_empty_families: false,
            relations: Vec::new(),
        }
    }

    /// Declare that `field` of the items of the collection operation `operation` holds the
    /// `id` of an item of the collection operation `target`. A request on `operation` can
    /// then ask for the related items with `"include": ["<name>"]`: each item gets the related
    /// item (or `null`) under `name`, all of them fetched with one call of `target` (a filter
    /// `{"id": {"in": [...]}}`), never one call per item. `build()` fails when an operation,
    /// the field or the target's `id` is not there.
    ///
    /// ```standalone_crate
    /// use abilities::aql::{Aql, AqlMode};
    ///
    /// let aql = Aql::new(AqlMode::Single).relation("wp_list_posts", "author", "author_id", "wp_list_users");
    /// # let _ = aql;
    /// ```
    #[must_use]
    pub fn relation(
        mut self,
        operation: impl Into<String>,
        name: impl Into<String>,
        field: impl Into<String>,
        target: impl Into<String>,
    ) -> Self {
        self.relations.push(Relation {
            operation: operation.into(),
            name: name.into(),
            field: field.into(),
            target: target.into(),
            key: "id".to_owned(),
        });
        self
    }

    /// Leave out the CRUDE tools of families with no operation (`mcp_aql_read`, which
    /// serves `introspect`, always stays). Off by default: the draft's standard profile
    /// registers all five, so a client sees the same tools whatever the server holds.
    #[must_use]
    pub fn skip_empty_families(mut self, skip: bool) -> Self {
        self.skip_empty_families = skip;
        self
    }

    /// Prefix every tool name (`github_` gives `github_mcp_aql_read`), to tell several
    /// servers apart in one client.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Other size limits.
    #[must_use]
    pub fn limits(mut self, limits: AqlLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a confirmation token stays valid (default 5 minutes, at most 15).
    #[must_use]
    pub fn confirmation_ttl(mut self, ttl: Duration) -> Self {
        self.confirm_ttl = ttl.min(Duration::from_secs(900));
        self
    }

    /// Whether to ask the user directly (elicitation) before an operation that needs
    /// confirmation, when the client supports it (default true); otherwise, and when it does
    /// not, the answer is `CONFIRMATION_REQUIRED` with a token to retry with.
    #[must_use]
    pub fn elicit_confirmation(mut self, ask: bool) -> Self {
        self.elicit_confirmation = ask;
        self
    }

    /// A computed field of the collection operation `operation`: `compute` gets each item.
    /// `kind` is its JSON type (`"integer"`, `"boolean"`...).
    #[must_use]
    pub fn computed_field(
        mut self,
        operation: impl Into<String>,
        name: impl Into<String>,
        kind: &'static str,
        description: impl Into<String>,
        compute: fn(&Value) -> Value,
    ) -> Self {
        self.computed.push(ComputedField {
            operation: operation.into(),
            name: name.into(),
            description: description.into(),
            kind,
            compute,
        });
        self
    }
}
