//! JSON-RPC batches, which protocol 2025-03-26 (and only it) lets clients send: each member
//! is served as a message of its own, and the answers go back together, as one array.

use serde_json::Value;

use super::error_line;

/// The most messages a batch over HTTP may hold.
pub(crate) const MAX_MEMBERS: usize = 256;

/// The one protocol version whose transports take batches.
pub(crate) const BATCH_VERSION: &str = "2025-03-26";

/// Whether `bytes` hold a JSON array (a batch), by its first byte.
pub(crate) fn is_batch(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'[')
}

/// The answer to a batch sent under `version` (`None`: not known), when batches are not
/// allowed: -32600 naming the version.
pub(crate) fn refusal(version: Option<&str>) -> Option<Vec<u8>> {
    if version == Some(BATCH_VERSION) {
        return None;
    }
    let version = version.unwrap_or("(none negotiated)");
    Some(error_line(
        &Value::Null,
        -32600,
        format!(
            "Invalid Request: JSON-RPC batches are part of protocol version {BATCH_VERSION} only, not {version}"
        ),
    ))
}

/// A batch's members, or the one error that answers it whole (not JSON, not an array, or
/// empty, as JSON-RPC 2.0 says).
pub(crate) fn members(bytes: &[u8]) -> Result<Vec<Value>, Vec<u8>> {
    match serde_json::from_slice::<Value>(bytes) {
        Err(e) => Err(error_line(
            &Value::Null,
            -32700,
            format!("Parse error: {e}"),
        )),
        Ok(Value::Array(members)) if members.is_empty() => Err(error_line(
            &Value::Null,
            -32600,
            "Invalid Request: an empty batch".to_owned(),
        )),
        Ok(Value::Array(members)) => Ok(members),
        Ok(_) => Err(error_line(
            &Value::Null,
            -32600,
            "Invalid Request: a batch must be a JSON array".to_owned(),
        )),
    }
}

/// The error answering a member that may not be in a batch: `initialize` (2025-03-26: "MUST
/// NOT be part of a JSON-RPC batch").
pub(crate) fn forbidden_member(member: &Value) -> Option<Value> {
    if member.get("method").and_then(Value::as_str) != Some("initialize") {
        return None;
    }
    let answer = error_line(
        &super::answer_id(member),
        -32600,
        "Invalid Request: initialize may not be part of a batch".to_owned(),
    );
    serde_json::from_slice(&answer).ok()
}

/// The batch's answer: the array of its members' answers, or nothing when no member is a
/// request (notifications and responses are not answered).
pub(crate) fn answer(answers: Vec<Value>) -> Option<Vec<u8>> {
    if answers.is_empty() {
        return None;
    }
    Some(Value::Array(answers).to_string().into_bytes())
}

/// The JSON-RPC messages an HTTP answer carries: a JSON body, or the `data:` lines of an SSE
/// stream.
pub(crate) fn messages_of(content_type: &str, body: &[u8]) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        return String::from_utf8_lossy(body)
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .collect();
    }
    serde_json::from_slice::<Value>(body)
        .map(|message| vec![message])
        .unwrap_or_default()
}

/// Whether `message` answers a request (a result or an error).
pub(crate) fn is_answer(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}
