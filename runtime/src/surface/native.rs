//! Native MCP tools: one tool per ability, plus the built-in `get_site_context`.
//!
//! Success is one text block with the compact JSON and the same object as `structuredContent`,
//! `isError: false`. A failed call (validation, permission, site, handler error, panic,
//! timeout) is `isError: true` with `{code, message, details?}` as text.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::{Ability, AbilityError, CONTRACT_VERSION, CallOutput, Site};

/// The built-in tool that reports the site's identity.
pub(crate) const SITE_CONTEXT_TOOL: &str = "get_site_context";

/// The MCP tool of an ability: its input schema with the optional `site_id` when the server
/// has a `site` (and the ability takes one), without it otherwise.
pub(crate) fn tool(ability: &Ability, site: bool) -> Tool {
    let mut tool = Tool::new(
        ability.tool_name().to_owned(),
        ability.description_cow(),
        Arc::clone(ability.listed_input_schema(site)),
    )
    .with_annotations(annotations(ability));
    if let Some(title) = ability.title() {
        tool = tool.with_title(title.to_owned());
    }
    if let Some(output) = ability.output_schema() {
        tool = tool.with_raw_output_schema(Arc::clone(output));
    }
    if !ability.meta().is_empty() {
        tool = tool.with_meta(rmcp::model::MetaObject(ability.meta().clone()));
    }
    tool
}

fn annotations(ability: &Ability) -> ToolAnnotations {
    let a = ability.annotations();
    ToolAnnotations::from_raw(
        ability.title().map(str::to_owned),
        a.read_only_hint,
        a.destructive_hint,
        a.idempotent_hint,
        a.open_world_hint,
    )
}

/// The `get_site_context` tool.
pub(crate) fn site_context_tool() -> Tool {
    let input = object(json!({"type": "object", "properties": {}}));
    let output = object(json!({
        "type": "object",
        "properties": {
            "contract_version": {"type": "integer", "const": CONTRACT_VERSION},
            "framework": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
                "required": ["name", "version"]
            },
            "site": {
                "anyOf": [{"type": "object"}, {"type": "null"}],
                "properties": {
                    "site_id": {"type": "string"},
                    "site_url": {"type": "string"},
                    "blog_id": {"type": "integer", "minimum": 0}
                },
                "required": ["site_id", "site_url", "blog_id"]
            }
        },
        "required": ["contract_version", "framework", "site"]
    }));
    Tool::new(
        SITE_CONTEXT_TOOL,
        "Identify the site this server serves. Other tools accept its site_id to confirm they act on it.",
        Arc::new(input),
    )
    .with_title("Get site context")
    .with_raw_output_schema(Arc::new(output))
    .with_annotations(
        ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
    )
}

/// What `get_site_context` returns.
pub(crate) fn site_context(site: Option<&Site>) -> Value {
    json!({
        "contract_version": CONTRACT_VERSION,
        "framework": {"name": "abilities", "version": env!("CARGO_PKG_VERSION")},
        "site": site,
    })
}

/// The tool result of a pipeline outcome: the JSON text block (and `structuredContent`) when
/// there is structured output, then any content blocks the ability added.
pub(crate) fn result(outcome: Result<CallOutput, AbilityError>) -> CallToolResult {
    match outcome {
        Ok(output) => success(output, false),
        Err(error) => error_result(&error),
    }
}

/// A successful tool result: the JSON text block (pretty-printed or compact) with the same
/// value as `structuredContent`, then the ability's content blocks.
pub(crate) fn success(output: CallOutput, pretty: bool) -> CallToolResult {
    let (structured, content) = output.into_wire();
    let mut result = match structured {
        Some(value) => {
            // Written straight to bytes: `Value`'s `Display` goes through a formatter per
            // token. A `Value` always serializes.
            let text = if pretty {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            };
            let mut result =
                CallToolResult::success(vec![ContentBlock::text(text.unwrap_or_default())]);
            result.structured_content = Some(value);
            result
        }
        None => CallToolResult::success(Vec::new()),
    };
    for block in content.into_iter().flatten() {
        match block.into_block() {
            Some(block) => result.content.push(block),
            None => {
                tracing::error!("a passed-through content block is no protocol block");
                return error_result(&AbilityError::internal("the result could not be encoded"));
            }
        }
    }
    result
}

/// A failed call as a tool result: `isError: true`, `{code, message, details?}` as text.
pub(crate) fn error_result(error: &AbilityError) -> CallToolResult {
    let text = serde_json::to_string(error).unwrap_or_else(|_| {
        json!({"code": "INTERNAL_ERROR", "message": "the error could not be serialized"})
            .to_string()
    });
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
