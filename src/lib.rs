//! Turn plain Rust functions into Model Context Protocol tools with one attribute.
//!
//! [`#[ability]`](ability) on an ordinary `fn` or `async fn` derives what an MCP server needs:
//! input and output JSON Schemas, the `input` / `result` wrapping of single-value
//! ("flattened") schemas, annotations from the ability's semantic, permission scopes, site
//! identity checks, and registration in a program-wide [`Registry`]. A [`Server`] validates
//! every call against the schema before your function runs, and every failure is a specific,
//! upper-snake [`ErrorCode`].
//!
//! ```standalone_crate
//! use abilities::{Server, ability};
//! use serde_json::json;
//!
//! /// Greet someone by name.
//! #[ability(semantic = "READ", flatten)]
//! fn greet(name: String) -> String {
//!     format!("Hello, {name}!")
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let client = Server::builder().build().unwrap().connect().await.unwrap();
//! let result = client.call("greet", json!({"input": "Ada"})).await.unwrap();
//! assert_eq!(result.structured_content, Some(json!({"result": "Hello, Ada!"})));
//! # });
//! ```
//!
//! The guide, an mdBook in the repository's `docs/` (`mdbook build docs`), covers the
//! attribute, the server, asking the client, background tasks, the surfaces (MCP-AQL among
//! them), the wire contract, replicas, security, the bridge, performance and the architecture.
//!
//! # Where things are
//!
//! The crate root holds what the first hour needs: the attribute, [`Server`] and its
//! [`ServerBuilder`], what an ability takes ([`Context`], [`State`], [`Caller`], [`Site`]) and
//! returns ([`AbilityError`], [`ErrorCode`], [`Content`], [`Rich`]). The rest is in rooms named
//! for what you come for:
//!
//! | module | when you need it |
//! |---|---|
//! | [`config`] | rate limits, schema profiles, the HTTP, task and ledger settings |
//! | [`auth`] | HTTP callers who must authenticate (static tokens, JWT) |
//! | [`client`] | an ability asks the client (elicitation, sampling, roots, logging) |
//! | [`extract`] | a parameter filled from the request instead of the arguments |
//! | [`resource`], [`prompt`] | abilities served as resources or prompts |
//! | [`skill`] | skills (a `SKILL.md` and its files) served beside the abilities |
//! | `aql` | MCP-AQL settings and collection queries (feature `aql`) |
//! | [`store`] | tasks and tokens that outlive a restart, or replicas that share them |
//! | [`handler`] | abilities built at run time, custom handlers, rmcp integration |
//! | [`registry`] | a running server's abilities, added and removed live |
//! | [`http`] | mounting the endpoint in an axum application |
//! | [`protocol`] | wire constants and the rmcp crate underneath |
//! | [`testing`] | an in-process client for tests |

/// The README and every chapter of the guide (the attribute's is `ability`'s own doc): their
/// Rust snippets are doc tests.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../README.md")]
    mod readme {}
    #[doc = include_str!("../docs/src/introduction.md")]
    mod introduction {}
    #[doc = include_str!("../docs/src/getting-started.md")]
    mod getting_started {}
    #[doc = include_str!("../docs/src/server.md")]
    mod server {}
    #[doc = include_str!("../docs/src/axum.md")]
    mod axum {}
    #[cfg(feature = "tower")]
    #[doc = include_str!("../docs/src/middleware.md")]
    mod middleware {}
    #[doc = include_str!("../docs/src/asking-the-client.md")]
    mod asking_the_client {}
    #[doc = include_str!("../docs/src/tasks.md")]
    mod tasks {}
    #[doc = include_str!("../docs/src/surfaces.md")]
    mod surfaces {}
    #[cfg(feature = "aql")]
    #[doc = include_str!("../docs/src/mcp-aql.md")]
    mod mcp_aql {}
    #[doc = include_str!("../docs/src/skills.md")]
    mod skills {}
    #[doc = include_str!("../docs/src/wire-contract.md")]
    mod wire_contract {}
    #[doc = include_str!("../docs/src/replicas.md")]
    mod replicas {}
    #[doc = include_str!("../docs/src/security.md")]
    mod security {}
    #[doc = include_str!("../docs/src/bridge.md")]
    mod bridge {}
    #[cfg(all(feature = "metrics", feature = "otel"))]
    #[doc = include_str!("../docs/src/operations.md")]
    mod operations {}
    #[doc = include_str!("../docs/src/performance.md")]
    mod performance {}
    #[doc = include_str!("../docs/src/architecture.md")]
    mod architecture {}
}

/// Embed every skill under a directory, at compile time: each sub-directory holding a
/// `SKILL.md` is a skill, served at its path below the directory (`skills/acme/pdf` is
/// `skill://acme/pdf/SKILL.md`). The path is relative to the file the macro is written in, as
/// with `include_bytes!`. A missing or malformed frontmatter, a name that breaks the naming
/// rules or differs from its directory's, or no skill at all is a compile error on the path;
/// each file's digest is computed at compile time. It gives a
/// `Result<Vec<Skill>, SkillError>` for [`ServerBuilder::skills`].
///
/// The `site` example (`examples/shared/site.rs`) serves `examples/skills` this way:
///
/// ```text
/// builder.skills(abilities::skills!("../skills")?)
/// ```
///
/// Where `abilities` is known under another path (a crate of yours re-exports it), name it
/// as `#[ability(crate = "...")]` does: `skills!(crate = "my_kit::abilities", "../skills")`.
pub use abilities_macros::skills;

/// Turn a free `fn` or `async fn` into a registered ability.
///
/// In short (the whole reference follows):
///
/// ```standalone_crate
/// use abilities::{AbilityError, Context, ability};
///
/// /// Look up a user's display name.
/// #[ability(semantic = "READ", name = "users/display-name", category = "users")]
/// async fn display_name(ctx: &Context, #[param(description = "The user id.")] id: u64) -> Result<String, AbilityError> {
///     let _ = ctx.request_id();
///     if id == 0 {
///         return Err(AbilityError::not_found("no user 0"));
///     }
///     Ok(format!("user-{id}"))
/// }
///
/// // The function stays callable as written.
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(display_name(&Context::new(), 7).await.unwrap(), "user-7");
/// # });
/// ```
///
/// Misuse is a compile error:
///
/// ```compile_fail
/// use abilities::ability;
///
/// /// Two values cannot be flattened into one.
/// #[ability(semantic = "READ", flatten)]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
/// ```
///
#[doc = include_str!("../docs/src/attribute.md")]
pub use abilities_macros::ability;
pub use abilities_runtime::{
    Ability, AbilityError, Caller, Content, Context, Danger, ErrorCode, Registry, Rich, Semantic,
    Server, ServerBuilder, ServerError, Site, State, Surface, TaskSupport,
};

#[cfg(feature = "aql")]
pub mod aql;
pub mod auth;
pub mod client;
pub mod config;
pub mod extract;
pub mod handler;
pub mod http;
#[cfg(feature = "metrics")]
pub use abilities_runtime::metrics;
pub use abilities_runtime::middleware;
#[cfg(feature = "otel")]
pub use abilities_runtime::otel;
pub mod prompt;
pub mod protocol;
pub mod registry;
pub mod resource;
pub mod skill;
pub mod store;
pub mod testing;

#[doc(hidden)]
pub use abilities_runtime::__private;
