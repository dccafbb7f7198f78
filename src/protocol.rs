//! Wire constants and the MCP crate underneath.
//!
//! The names and limits the wire contract fixes, and [`rmcp`] (the version this server is built
//! on) for custom transports and client types.

pub use abilities_runtime::{
    AUDIT_TARGET, CONTRACT_VERSION, IDEMPOTENCY_META_KEY, MAX_ABILITY_NAME, MAX_TOOL_NAME, rmcp,
    tool_name,
};
