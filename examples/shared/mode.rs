//! `--mode`: which surfaces an example serves.

use abilities::{
    ServerBuilder, Surface,
    aql::{Aql, AqlMode},
};

/// The surfaces an example serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One tool per ability (HTTP path `/mcp`).
    #[default]
    Native,
    /// The native tools, leniently: pretty JSON, JSON-RPC errors, string booleans.
    Standard,
    /// The WordPress adapter's three meta tools: discover, get-info, execute.
    Meta,
    /// MCP-AQL with one `mcp_aql` tool.
    AqlSingle,
    /// MCP-AQL with one tool per family (`mcp_aql_read`, ...): the CRUDE endpoints (also
    /// `aql-crude`).
    #[value(alias = "aql-crude")]
    AqlSemantic,
    /// Every surface over HTTP: the three WordPress-style ones at `/mcp`, `/mcp/standard` and
    /// `/mcp/meta`, and the MCP-AQL semantic endpoints at `/mcp/aql`.
    All,
}

impl Mode {
    /// Configure `builder` for this mode.
    #[allow(dead_code, reason = "not every example configures MCP-AQL further")]
    pub fn apply(self, builder: ServerBuilder) -> ServerBuilder {
        self.apply_with(builder, |aql| aql)
    }

    /// Configure `builder` for this mode, an MCP-AQL surface as `aql` makes it.
    pub fn apply_with(self, builder: ServerBuilder, aql: fn(Aql) -> Aql) -> ServerBuilder {
        match self {
            Self::Native => builder.surface(Surface::Native),
            Self::Standard => builder.surface(Surface::Standard),
            Self::Meta => builder.surface(Surface::meta()),
            Self::AqlSingle => builder.surface(Surface::Aql(aql(Aql::new(AqlMode::Single)))),
            Self::AqlSemantic => builder.surface(Surface::Aql(aql(Aql::new(AqlMode::Semantic)))),
            Self::All => builder
                .mount("/mcp", Surface::Native)
                .mount("/mcp/standard", Surface::Standard)
                .mount("/mcp/meta", Surface::meta())
                .mount("/mcp/aql", Surface::Aql(aql(Aql::new(AqlMode::Semantic)))),
        }
    }

    /// The HTTP paths served, with what each serves.
    pub fn paths(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Native => &[("/mcp", "native tools")],
            Self::Standard => &[("/mcp", "standard-mode tools")],
            Self::Meta => &[("/mcp", "meta tools")],
            Self::AqlSingle => &[("/mcp", "the MCP-AQL single endpoint")],
            Self::AqlSemantic => &[("/mcp", "the MCP-AQL semantic endpoints")],
            Self::All => &[
                ("/mcp", "native tools"),
                ("/mcp/standard", "standard-mode tools"),
                ("/mcp/meta", "meta tools"),
                ("/mcp/aql", "the MCP-AQL semantic endpoints"),
            ],
        }
    }
}
