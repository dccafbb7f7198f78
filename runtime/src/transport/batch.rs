//! JSON-RPC batches, which protocol 2025-03-26 (and only it) lets clients send: each member
//! is served as a message of its own, and the answers go back together, as one array.

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::http::Gate;
use super::{ErrorAnswer, answer_id, check_message};

/// The most messages a batch over HTTP may hold.
pub(crate) const MAX_MEMBERS: usize = 256;

/// The refusal of a batch member whose id an earlier request of the batch has.
pub(crate) const REPEATED_ID: &str = "Invalid Request: another request of the batch has this id";

/// The one protocol version whose transports take batches.
pub(crate) const BATCH_VERSION: &str = "2025-03-26";

/// Whether `bytes` hold a JSON array (a batch), by its first byte.
pub(crate) fn is_batch(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'[')
}

/// The answer to a batch sent under `version` (`None`: not known), when batches are not
/// allowed: -32600 naming the version.
pub(crate) fn refusal(version: Option<&str>) -> Option<ErrorAnswer> {
    if version == Some(BATCH_VERSION) {
        return None;
    }
    let version = version.unwrap_or("(none negotiated)");
    Some(ErrorAnswer::invalid(
        Value::Null,
        format!(
            "Invalid Request: JSON-RPC batches are part of protocol version {BATCH_VERSION} only, not {version}"
        ),
    ))
}

/// A batch's members, or the one error that answers it whole (not JSON, not an array, or
/// empty, as JSON-RPC 2.0 says).
pub(crate) fn members(bytes: &[u8]) -> Result<Vec<Value>, ErrorAnswer> {
    match serde_json::from_slice::<Value>(bytes) {
        Err(e) => Err(ErrorAnswer::new(
            Value::Null,
            -32700,
            format!("Parse error: {e}"),
        )),
        Ok(Value::Array(members)) if members.is_empty() => Err(ErrorAnswer::invalid(
            Value::Null,
            "Invalid Request: an empty batch",
        )),
        Ok(Value::Array(members)) => Ok(members),
        Ok(_) => Err(ErrorAnswer::invalid(
            Value::Null,
            "Invalid Request: a batch must be a JSON array",
        )),
    }
}

/// The error answering a member that may not be in a batch: `initialize` (2025-03-26: "MUST
/// NOT be part of a JSON-RPC batch").
pub(crate) fn forbidden_member(member: &Value) -> Option<ErrorAnswer> {
    if member.get("method").and_then(Value::as_str) != Some("initialize") {
        return None;
    }
    Some(ErrorAnswer::invalid(
        answer_id(member),
        "Invalid Request: initialize may not be part of a batch",
    ))
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

/// A JSON-RPC batch: refused (400) unless the request speaks protocol 2025-03-26 (its
/// `Mcp-Protocol-Version` header, or none, which that version sends none of); otherwise each
/// member goes through the gate as a request of its own (16 at a time), and the answers come back
/// as one JSON array (`202` when no member is a request). What a member's stream carries
/// besides its answer (progress, logs) is not relayed.
pub(super) async fn http(
    gate: &Gate,
    parts: &axum::http::request::Parts,
    caller: &crate::Caller,
    bytes: &[u8],
) -> Response {
    let members = match admitted(parts, bytes) {
        Ok(members) => members,
        Err(refusal) => return refusal.response(StatusCode::BAD_REQUEST),
    };
    let repeated = repeated_ids(&members);
    let served = members
        .iter()
        .zip(repeated)
        .map(|(member, repeated)| serve_member(gate, parts, caller, member, repeated));
    // At most 16 members at once: a batch is one client's, not a way around the limits.
    let mut served = served.collect::<Vec<_>>().into_iter();
    let mut answers = Vec::new();
    loop {
        let chunk: Vec<_> = served.by_ref().take(16).collect();
        if chunk.is_empty() {
            break;
        }
        answers.extend(
            futures_util::future::join_all(chunk)
                .await
                .into_iter()
                .flatten(),
        );
    }
    match answer(answers) {
        Some(body) => json(StatusCode::OK, body),
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// A JSON body with `status`.
fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The batch's members, or the refusal of the whole batch: batches are not of the request's
/// protocol version, the body is no array of messages, or it holds too many.
fn admitted(parts: &axum::http::request::Parts, bytes: &[u8]) -> Result<Vec<Value>, ErrorAnswer> {
    let version = parts
        .headers
        .get("mcp-protocol-version")
        .map(|v| v.to_str().unwrap_or("(unreadable)"))
        .unwrap_or(BATCH_VERSION);
    if let Some(refusal) = refusal(Some(version)) {
        return Err(refusal);
    }
    let members = members(bytes)?;
    if members.len() > MAX_MEMBERS {
        return Err(ErrorAnswer::invalid(
            Value::Null,
            format!(
                "Invalid Request: a batch may hold {} messages, not {}",
                MAX_MEMBERS,
                members.len()
            ),
        ));
    }
    Ok(members)
}

/// For each member, whether it is a request whose id an earlier request of the batch has: it
/// is refused, as on stdio (two requests with one id could not each get their own answer).
/// Only members that will be served take their id, as on stdio.
fn repeated_ids(members: &[Value]) -> Vec<bool> {
    let mut ids = std::collections::HashSet::new();
    members
        .iter()
        .map(|member| {
            let served = check_message(member).is_ok() && forbidden_member(member).is_none();
            match (served, member.get("method"), member.get("id")) {
                (true, Some(_), Some(id)) => !ids.insert(id.to_string()),
                _ => false,
            }
        })
        .collect()
}

/// One member's answers: its refusal, or what the gate answers it (a request whose answer
/// cannot be had still gets one, with its id).
async fn serve_member(
    gate: &Gate,
    parts: &axum::http::request::Parts,
    caller: &crate::Caller,
    member: &Value,
    repeated: bool,
) -> Vec<Value> {
    if repeated {
        return vec![ErrorAnswer::invalid(answer_id(member), REPEATED_ID).into_value()];
    }
    if let Err(refusal) = check_message(member) {
        return vec![refusal.into_value()];
    }
    if let Some(refused) = forbidden_member(member) {
        return vec![refused.into_value()];
    }
    let unanswered = |code: i32, why: String| -> Vec<Value> {
        if member.get("id").is_none() {
            return Vec::new();
        }
        vec![ErrorAnswer::new(answer_id(member), code, why).into_value()]
    };
    let Some(member_parts) = member_request(parts) else {
        return unanswered(
            -32603,
            "Internal error: the member could not be served".to_owned(),
        );
    };
    let body = Bytes::from(member.to_string());
    let response = Box::pin(gate.serve_one(member_parts, caller, body)).await;
    match answers_in(response).await {
        Ok(answers) => answers,
        Err((code, why)) => unanswered(code, why),
    }
}

/// The JSON-RPC answers an HTTP response to one member carries, or the error code and
/// message for a member that got none.
async fn answers_in(response: Response) -> Result<Vec<Value>, (i32, String)> {
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let status = response.status();
    let Ok(body) = axum::body::to_bytes(response.into_body(), 16 << 20).await else {
        return Err((
            -32603,
            format!("Internal error: the answer (HTTP {status}) could not be read"),
        ));
    };
    let answers: Vec<Value> = messages_of(&content_type, &body)
        .into_iter()
        .filter(is_answer)
        .collect();
    if answers.is_empty() {
        // rmcp refused it with a plain status (an unknown session, a missing `Accept`).
        let why: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return Err((-32600, format!("Invalid Request: HTTP {status}: {why}")));
    }
    Ok(answers)
}

/// The head of the request a batch member is served as: the batch's method, URI, headers and
/// caller (the member is the body).
fn member_request(parts: &axum::http::request::Parts) -> Option<axum::http::request::Parts> {
    let mut builder = Request::builder()
        .method(parts.method.clone())
        .uri(parts.uri.clone())
        .version(parts.version);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_LENGTH {
            builder = builder.header(name, value);
        }
    }
    let (mut head, ()) = builder.body(()).ok()?.into_parts();
    if let Some(caller) = parts.extensions.get::<crate::Caller>() {
        head.extensions.insert(caller.clone());
    }
    Some(head)
}
