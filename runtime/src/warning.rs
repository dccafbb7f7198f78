//! A note beside a call's result: what a stage tells the caller without refusing the call
//! (a page size clamped, a deprecated operation, an answer that may be incomplete).

use std::borrow::Cow;

use serde_json::Value;

/// A note a stage adds beside a call's result, `{code, message, severity, details}` (the
/// `warnings` of MCP-AQL's envelope).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Warning {
    pub(crate) code: Cow<'static, str>,
    pub(crate) message: String,
    pub(crate) severity: Severity,
    pub(crate) details: Value,
}

/// How much a warning matters, as MCP-AQL grades them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    Low,
    Medium,
}
