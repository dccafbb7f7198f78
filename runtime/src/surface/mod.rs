//! Surfaces: views of one registry on the wire. Each maps names, envelopes and error channels;
//! none re-does the pipeline's work.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ErrorData, Tool};
use serde_json::Value;

use crate::error::Lookup;
use crate::ledger::Holder;
use crate::pipeline::{self, Around, Confirm, Guards, Reporter, Stage};
use crate::rpc::ToRpc;

use crate::{AbilityError, CallOutput, Context, Registry};
pub(crate) use tool_call::ToolCall;

/// Who a call is served for and what the server puts around it: the request's holder (of
/// confirmation tokens and idempotency keys) and the server's rate limits and audit trail.
pub(crate) struct Served<'a> {
    pub(crate) holder: Holder<'a>,
    pub(crate) guards: &'a Arc<Guards>,
    /// Where a native tool's call reports what it learned, for the HTTP gate.
    pub(crate) report: Option<Reporter>,
    /// The skills served, which MCP-AQL's introspection mentions.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) skills: &'a crate::skill::SkillSet,
}

#[cfg(feature = "aql")]
pub(crate) mod aql;
pub(crate) mod catalog;
pub(crate) mod meta;
pub(crate) mod native;
pub(crate) mod standard;
pub(crate) mod strict;
mod tool_call;

/// How a server presents its registry as MCP tools. One server can serve several surfaces at
/// once, each on its own HTTP path (see
/// [`ServerBuilder::mount`](crate::ServerBuilder::mount)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a surface is configured once per server"
)]
pub enum Surface {
    /// One tool per ability plus `get_site_context`: JSON text and `structuredContent`,
    /// execution failures as `isError` results, JSON booleans and numbers required.
    #[default]
    Native,
    /// The native tools, leniently: pretty-printed JSON text, failures as JSON-RPC errors
    /// (`data.code` holds the upper-snake code), and `"true"`/`"yes"`/`"1"`... accepted for
    /// booleans and numeric strings for numbers.
    Standard,
    /// The WordPress adapter's default server: three meta tools that discover, describe and
    /// execute the public abilities.
    Meta(MetaNames),
    /// MCP-AQL: a few endpoint tools taking `{operation, params}`, with introspection,
    /// batches, collection queries and a confirmation gate (see [`Aql`](aql::Aql); feature
    /// `aql`).
    #[cfg(feature = "aql")]
    Aql(aql::Aql),
}

impl Surface {
    /// MCP-AQL with one `mcp_aql` tool.
    #[cfg(feature = "aql")]
    pub fn aql_single() -> Self {
        Self::Aql(aql::Aql::new(aql::AqlMode::Single))
    }

    /// MCP-AQL with one tool per family (`mcp_aql_create`, `mcp_aql_read`...).
    #[cfg(feature = "aql")]
    pub fn aql_semantic() -> Self {
        Self::Aql(aql::Aql::new(aql::AqlMode::Semantic))
    }

    /// The meta surface with the WordPress adapter's tool names.
    pub fn meta() -> Self {
        Self::Meta(MetaNames::default())
    }

    /// How the audit trail names calls through this surface: `native`, `standard`, `meta`
    /// or `aql`.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Standard => "standard",
            Self::Meta(_) => "meta",
            #[cfg(feature = "aql")]
            Self::Aql(_) => "aql",
        }
    }

    /// The surface named by `--mode`-style text: `native`, `standard`, `meta`,
    /// `aql-single`, `aql-semantic` or `aql-all` (the last three with the feature `aql`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "native" => Some(Self::Native),
            "standard" => Some(Self::Standard),
            "meta" => Some(Self::meta()),
            #[cfg(feature = "aql")]
            "aql-single" => Some(Self::aql_single()),
            #[cfg(feature = "aql")]
            "aql-semantic" => Some(Self::aql_semantic()),
            #[cfg(feature = "aql")]
            "aql-all" => Some(Self::Aql(aql::Aql::new(aql::AqlMode::All))),
            _ => None,
        }
    }
}

/// The tool names of the [meta surface](Surface::Meta).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaNames {
    /// Lists the public abilities (default `mcp-adapter-discover-abilities`).
    pub discover: Cow<'static, str>,
    /// Describes one (default `mcp-adapter-get-ability-info`).
    pub get_info: Cow<'static, str>,
    /// Runs one (default `mcp-adapter-execute-ability`).
    pub execute: Cow<'static, str>,
}

impl Default for MetaNames {
    fn default() -> Self {
        Self {
            discover: Cow::Borrowed("mcp-adapter-discover-abilities"),
            get_info: Cow::Borrowed("mcp-adapter-get-ability-info"),
            execute: Cow::Borrowed("mcp-adapter-execute-ability"),
        }
    }
}

/// Why a surface cannot present a registry.
#[derive(Debug)]
pub(crate) enum SurfaceError {
    /// Two abilities (or an ability and `introspect`) share an MCP-AQL operation name.
    #[cfg(feature = "aql")]
    AqlOperationCollision {
        operation: String,
        first: String,
        second: String,
    },
    /// A relation names an operation or field that is not there.
    #[cfg(feature = "aql")]
    AqlRelation {
        operation: String,
        relation: String,
        problem: String,
    },
}

/// What a tool name resolves to on a surface.
#[derive(Clone, Debug)]
pub(crate) enum Entry {
    SiteContext,
    Ability(usize),
    Discover,
    GetInfo,
    Execute,
    #[cfg(feature = "aql")]
    Aql(aql::Endpoint),
}

/// What a view lists besides the registry: the `site_id` parameter (when the server has a
/// site) and the schema profile of native tools.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Listing {
    pub(crate) site: bool,
    pub(crate) profile: crate::SchemaProfile,
}

/// A surface's tools, derived once from the registry.
pub(crate) struct View {
    pub(crate) surface: Surface,
    pub(crate) tools: Vec<Tool>,
    /// The sort key of each tool, ascending: where a page cursor resumes.
    pub(crate) ranks: Vec<String>,
    /// Read on every call with a name the client sent, never written after registration: a
    /// fast seeded hash (no insert a client makes can degrade it).
    index: HashMap<String, (Entry, usize), foldhash::fast::RandomState>,
    /// Whether each tool's input schema asks for `Mcp-Param-*` headers (`x-mcp-header`).
    param_headers: Vec<bool>,
    #[cfg(feature = "aql")]
    aql: Option<aql::Table>,
    /// Some native tool may run as a background task (calls look no further when none can).
    tasks: bool,
    /// Native and standard calls read `null` as absent where the strict profile listed it.
    strict: bool,
}

impl View {
    /// The view of `surface` over `registry`. Nothing passes from the view it replaces:
    /// what outlives a change (confirmation tokens) is in the server's store.
    /// Without a `site`, no `get_site_context` and no `site_id` parameter are shown.
    pub(crate) fn new(
        surface: Surface,
        registry: &Registry,
        listing: Listing,
    ) -> Result<Self, SurfaceError> {
        let Listing { site, profile } = listing;
        let mut entries: Vec<(Tool, Entry)> = Vec::new();
        // Native tools rank by ability name, which stays put as abilities come and go; the
        // few tools of the other surfaces rank by position.
        let mut ranks: Vec<String> = Vec::new();
        #[cfg(feature = "aql")]
        let mut aql_table = None;
        match &surface {
            Surface::Native | Surface::Standard => {
                if site {
                    entries.push((native::site_context_tool(), Entry::SiteContext));
                    ranks.push("0".to_owned());
                }
                for (i, ability) in registry.iter().enumerate() {
                    if ability.is_tool() {
                        let mut tool = native::tool(ability, site);
                        if profile != crate::SchemaProfile::Portable {
                            // Checked when the snapshot was made.
                            if let Ok(schema) = crate::profile::apply(profile, &tool.input_schema) {
                                tool.input_schema = std::sync::Arc::new(schema);
                            }
                        }
                        entries.push((tool, Entry::Ability(i)));
                        ranks.push(format!("1{}", ability.name()));
                    }
                }
            }
            Surface::Meta(names) => {
                entries.push((meta::discover_tool(&names.discover), Entry::Discover));
                entries.push((meta::get_info_tool(&names.get_info), Entry::GetInfo));
                entries.push((meta::execute_tool(&names.execute), Entry::Execute));
            }
            #[cfg(feature = "aql")]
            Surface::Aql(config) => {
                let table = aql::Table::new(config.clone(), registry, site)?;
                for (tool, endpoint) in table.tools() {
                    entries.push((tool, Entry::Aql(endpoint)));
                }
                aql_table = Some(table);
            }
        }
        if ranks.len() != entries.len() {
            ranks = (0..entries.len()).map(|i| format!("{i:06}")).collect();
        }
        let index = entries
            .iter()
            .enumerate()
            .map(|(position, (tool, entry))| (tool.name.to_string(), (entry.clone(), position)))
            .collect();
        let tasks = matches!(surface, Surface::Native)
            && registry
                .iter()
                .any(|a| a.task_support() != crate::TaskSupport::Forbidden);
        let param_headers = entries
            .iter()
            .map(|(tool, _)| names_header(&tool.input_schema))
            .collect();
        Ok(Self {
            surface,
            tools: entries.into_iter().map(|(tool, _)| tool).collect(),
            ranks,
            index,
            param_headers,
            #[cfg(feature = "aql")]
            aql: aql_table,
            tasks,
            strict: profile == crate::SchemaProfile::OpenAiStrict,
        })
    }

    /// Whether the tool `name`'s input schema asks for `Mcp-Param-*` headers.
    pub(crate) fn has_param_headers(&self, name: &str) -> bool {
        self.index
            .get(name)
            .is_some_and(|&(_, position)| self.param_headers.get(position) == Some(&true))
    }

    /// The tool named `name`.
    pub(crate) fn tool(&self, name: &str) -> Option<&Tool> {
        self.index
            .get(name)
            .and_then(|&(_, position)| self.tools.get(position))
    }

    /// Whether a call on this surface may run as a background task.
    pub(crate) fn runs_tasks(&self) -> bool {
        self.tasks
    }

    /// Whether this surface lists a tool named `name`.
    pub(crate) fn has_tool(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The stages this surface adds to an ability's call, run and task alike: the standard
    /// surface's lenient reading, the strict profile's `null` as absent. Chosen here only.
    pub(crate) fn stages(&self) -> &'static [&'static dyn Stage] {
        match (&self.surface, self.strict) {
            (Surface::Standard, false) => &[&standard::Lenient],
            (Surface::Standard, true) => {
                &[&standard::Lenient, &crate::surface::strict::NullAsAbsent]
            }
            (_, true) => &[&crate::surface::strict::NullAsAbsent],
            _ => &[],
        }
    }

    /// The ability behind the native tool `name` when it may run as a background task.
    pub(crate) fn task_ability(
        &self,
        registry: &Registry,
        name: &str,
    ) -> Option<std::sync::Arc<crate::Ability>> {
        if !self.tasks {
            return None;
        }
        match self.index.get(name) {
            Some((Entry::Ability(i), _)) => registry
                .shared_at(*i)
                .filter(|a| a.task_support() != crate::TaskSupport::Forbidden),
            _ => None,
        }
    }

    /// Whether a call of the tool `name` with `args` answers for an idempotency key itself:
    /// a single MCP-AQL operation, which takes a key sent beside it (`_meta`) as its own
    /// `params._idempotency_key`, so one key means one thing wherever it was sent.
    #[cfg(feature = "aql")]
    pub(crate) fn claims_own_keys(&self, name: &str, args: &Value) -> bool {
        matches!(self.index.get(name), Some((Entry::Aql(_), _))) && args.get("operations").is_none()
    }

    /// Without MCP-AQL no tool answers for its keys itself.
    #[cfg(not(feature = "aql"))]
    pub(crate) fn claims_own_keys(&self, _name: &str, _args: &Value) -> bool {
        false
    }

    /// Call the tool named `name` through this surface. The common call (an ability's tool,
    /// nothing to confirm) is its pipeline's future and the mapping of its outcome; the
    /// rarer ones are boxed apart.
    pub(crate) fn call<'a>(
        &'a self,
        registry: &'a Registry,
        ctx: Context,
        served: &'a Served<'_>,
        name: &str,
        args: Value,
    ) -> ToolCall<'a> {
        let Some((entry, _)) = self.index.get(name) else {
            return ToolCall::ready(Err(AbilityError::unknown(Lookup::Tool, name).to_rpc()));
        };
        if let (Some(report), false) = (&served.report, matches!(entry, Entry::Ability(_))) {
            report.no_scope();
        }
        match entry {
            Entry::SiteContext => {
                let output = CallOutput::structured_only(native::site_context(ctx.site()));
                ToolCall::ready(self.finish(Ok(output)))
            }
            Entry::Ability(i) => {
                let Some(ability) = registry.at(*i) else {
                    return ToolCall::ready(self.finish(Err(AbilityError::internal(
                        "the tool table is inconsistent",
                    ))));
                };
                let mut args = args;
                if let Some(gate) =
                    Confirm::of_tool(ability, &served.holder, served.guards, &mut args)
                {
                    let confirmed = self.confirmed(ability, ctx, served, args, gate);
                    return ToolCall::boxed(async move { self.finish(confirmed.await) });
                }
                let around = Around::new(served.guards, served.report.as_ref(), ability);
                let running = pipeline::run(ability, ctx, args, around, self.stages());
                ToolCall::Running(self, running)
            }
            Entry::Discover => ToolCall::ready(Ok(meta::discover(registry))),
            Entry::GetInfo => {
                ToolCall::ready(Ok(meta::get_info(registry, &args, ctx.site().is_some())))
            }
            Entry::Execute => {
                ToolCall::boxed(async move { Ok(meta::execute(registry, ctx, served, args).await) })
            }
            #[cfg(feature = "aql")]
            Entry::Aql(endpoint) => match &self.aql {
                Some(table) => ToolCall::boxed(async move {
                    Ok(aql::call(table, registry, endpoint, ctx, served, args).await)
                }),
                None => ToolCall::ready(self.finish(Err(AbilityError::internal(
                    "the tool table is inconsistent",
                )))),
            },
        }
    }

    /// A call of `ability` that must be confirmed, through `gate` (the rare path, boxed
    /// apart so the common call's future stays small).
    async fn confirmed(
        &self,
        ability: &std::sync::Arc<crate::Ability>,
        ctx: Context,
        served: &Served<'_>,
        args: Value,
        gate: Confirm<'_>,
    ) -> Result<CallOutput, AbilityError> {
        let caller = ctx.caller().clone();
        let ctx = if gate.continues() {
            ctx.continuing()
        } else {
            ctx
        };
        let mut stages: Vec<&dyn Stage> = self.stages().to_vec();
        stages.push(&gate);
        let around = Around::new(served.guards, served.report.as_ref(), ability);
        let outcome = pipeline::run(ability, ctx, args, around, &stages).await;
        gate.settle(ability, &caller, &outcome).await;
        outcome
    }

    /// The tool result (or, in standard mode, JSON-RPC error) of a pipeline outcome.
    pub(super) fn finish(
        &self,
        outcome: Result<CallOutput, AbilityError>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.surface {
            Surface::Standard => match outcome {
                Ok(output) => Ok(standard::result(output)),
                Err(error) => Err(error.to_rpc()),
            },
            _ => Ok(native::result(outcome)),
        }
    }
}

/// Whether `schema`, at any depth, names an `x-mcp-header`.
fn names_header(schema: &serde_json::Map<String, serde_json::Value>) -> bool {
    fn within(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(map) => names_header(map),
            serde_json::Value::Array(items) => items.iter().any(within),
            _ => false,
        }
    }
    schema.contains_key("x-mcp-header") || schema.values().any(within)
}
