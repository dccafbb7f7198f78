//! The MCP-AQL envelope: what an operation or a batch answers, as the tool result.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::confirm::Issued;
use super::limits::too_large;
use super::{Table, recoverable};
use crate::AbilityError;

/// What one request comes to, before it is an envelope.
pub(super) enum Answer {
    /// A single operation's data and warnings.
    Done(Value, Vec<Value>),
    /// A batch's whole envelope (always a success: items carry their own outcomes).
    Batch(Value),
    /// A failure, with the confirmation to offer when it is `CONFIRMATION_REQUIRED`.
    Failed(AbilityError, Option<Issued>),
}

/// The envelope as a tool result: its JSON as text; `isError` only for failures the caller
/// cannot fix by changing the request.
pub(super) fn respond(table: &Table, answer: Answer) -> CallToolResult {
    let (envelope, mut is_error) = match answer {
        Answer::Done(data, warnings) => (success(data, warnings), false),
        Answer::Batch(envelope) => (envelope, false),
        Answer::Failed(error, issued) => {
            (failure(&error, issued.as_ref()), !recoverable(error.code()))
        }
    };
    let mut text = envelope.to_string();
    let limit = table.config.limits.max_response_size;
    if text.len() > limit {
        let error = too_large("response_size", limit, text.len(), "bytes");
        is_error = !recoverable(error.code());
        text = failure(&error, None).to_string();
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.is_error = Some(is_error);
    result
}

/// The most warnings an envelope carries, as the draft allows.
pub(super) const MAX_WARNINGS: usize = 10;

/// The success envelope, with `warnings` when there are any (deduplicated, at most ten).
/// An operation's `data`: its structured value; without one, its content blocks (a bridged
/// upstream's text, images...): the text itself when there is one text block and nothing
/// else, else `{"content": [blocks]}`; `null` when it returned nothing.
pub(super) fn data_of(value: Option<Value>, content: Option<Vec<crate::Content>>) -> Value {
    let blocks = match (value, content) {
        (Some(value), _) => return value,
        (None, Some(blocks)) if !blocks.is_empty() => blocks,
        _ => return Value::Null,
    };
    let blocks: Vec<Value> = blocks
        .iter()
        .filter_map(|b| serde_json::to_value(b).ok())
        .collect();
    match blocks.as_slice() {
        [one] if one["type"] == "text" && one["text"].is_string() => one["text"].clone(),
        _ => json!({"content": blocks}),
    }
}

pub(super) fn success(data: Value, mut warnings: Vec<Value>) -> Value {
    let mut envelope = json!({"success": true, "data": data});
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| seen.insert(w.to_string()));
    warnings.truncate(MAX_WARNINGS);
    if !warnings.is_empty() {
        envelope["warnings"] = Value::Array(warnings);
    }
    envelope
}

/// The failure envelope. A confirmation travels as the draft asks, in `error.details` and
/// as the top-level `confirmation`, both written here from the token the gate issued.
pub(super) fn failure(error: &AbilityError, issued: Option<&Issued>) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), json!(error.code().as_str()));
    body.insert("message".into(), json!(error.message()));
    let mut details = error.details().filter(|d| d.is_object()).cloned();
    if let (Some(issued), Some(Value::Object(details))) = (issued, &mut details) {
        details.insert("confirmation_token".into(), json!(issued.token));
        details.insert("expires_at".into(), json!(issued.expires_at));
    }
    if let Some(details) = details {
        body.insert("details".into(), details);
    }
    let mut envelope = json!({"success": false, "error": body});
    if let Some(issued) = issued {
        envelope["confirmation"] = json!({
            "token": issued.token,
            "expires_at": issued.expires_at,
            "message": issued.message,
        });
    }
    envelope
}
