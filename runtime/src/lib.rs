//! Runtime of the [`abilities`](https://docs.rs/abilities) crate: the registry, schema
//! transformation, argument normalizer and call pipeline behind `#[ability]`.
//!
//! Depend on `abilities`, which re-exports everything here with the attribute.

mod ability;
mod adapter;
mod audit;
mod auth;
mod clock;
mod confirmation;
mod content;
mod context;
mod digest;
mod error;
mod extract;
mod instruments;
#[cfg(feature = "jwt")]
mod jwt;
mod ledger;
#[cfg(feature = "metrics")]
pub mod metrics;
mod normalize;
#[cfg(feature = "otel")]
pub mod otel;
mod pipeline;
mod profile;
mod prompt;
mod question;
mod rate;
mod registry;
mod resource;
mod rpc;
mod schema;
mod seal;
mod server;
mod site;
mod skill;
mod store;
mod surface;
mod task;
mod transport;
mod validate;
mod warning;

#[doc(hidden)]
pub mod __private;

pub use abilities_core::{MAX_ABILITY_NAME, MAX_TOOL_NAME, tool_name};
pub use ability::{
    Ability, AbilityBuilder, AbilityKind, Annotations, CallFuture, Completer, Danger, Handler,
    Output, Semantic, TaskSupport,
};
pub use adapter::McpHandler;
pub use audit::AUDIT_TARGET;
pub use auth::{AuthError, AuthFuture, Authenticator, StaticTokens, bearer, bearer_token};
pub use content::{Content, Contents, EmbeddedResource, Rich};
pub use context::{
    Ask, Caller, CancellationToken, ClientChannel, ClientFuture, ClientRequestFuture, Context,
    ElicitAction, Elicitation, LogLevel, Root, State, StateMap,
};
pub use error::{AbilityError, ErrorCode, RegistryError};
pub use extract::{FromContext, FromContextRef, Requirement};
/// The JWT crate [`JwtAuthenticator`] is built on (its `Algorithm` and `jwk::JwkSet`), at
/// the version it uses.
#[cfg(feature = "jwt")]
pub use jsonwebtoken;
#[cfg(feature = "jwt")]
pub use jwt::{JwtAuthenticator, JwtAuthenticatorBuilder, JwtError};
pub use ledger::IDEMPOTENCY_META_KEY;
pub use pipeline::{CallOutput, middleware};
pub use profile::SchemaProfile;
pub use prompt::{Prompt, PromptMessage, Role};
pub use rate::{Rate, RateError, RateProblem};
pub use registry::{Iter, Registry};
pub use resource::ResourceNotifier;
pub use server::{
    HttpConfig, LedgerConfig, NotReady, ServedAbilities, ServedSkills, Server, ServerBuilder,
    ServerError,
};
pub use site::{CONTRACT_VERSION, Site};
pub use skill::{SKILL_MD, Skill, SkillError, SkillFile};
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
#[cfg(feature = "redis")]
pub use store::RedisStore;
#[cfg(feature = "sqlite")]
pub use store::SqliteStore;
pub use store::{
    Claim, Claimed, MemoryStore, RateTaken, SessionEvent, SessionEvents, SessionRecord, Spend,
    Store, StoreError, StoreFuture, StreamEvent, StreamRead, TaskEvent, TaskEvents, TaskInsert,
    TaskLimits, TaskRecord, TaskSignal, TaskStatus, TokenRecord, Updates,
};
#[cfg(feature = "aql")]
pub use surface::aql::{
    Aql, AqlLimits, AqlMode, CollectionQuery, ComputedField, Condition, FilterOp, SortKey, Window,
    merge_input, operation_name,
};
pub use surface::{MetaNames, Surface};
pub use task::TaskConfig;
pub use transport::client::{Started, TestClient, TestClientBuilder, tool_error};
pub use transport::http::serve_router;
pub use transport::scripted::UserQuestion;

/// axum, for mounting the MCP endpoint in an application.
pub use axum;
/// The MCP protocol crate this server is built on, for custom transports and client types.
pub use rmcp;
