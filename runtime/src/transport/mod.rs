//! Transports: newline-delimited JSON-RPC (stdio, or any byte stream), streamable HTTP, and an
//! in-process client.

mod batch;
mod body;
pub(crate) mod client;
mod error_answer;
pub(crate) mod http;
mod http_direct;
mod in_place;
mod in_step;
mod marked;
mod message;
mod metrics;
mod parse;
mod probes;
mod restore;
mod resumable;
pub(crate) mod scripted;
mod sessions;
pub(crate) mod stdio;
mod stdio_direct;
mod summary;
mod tap;

/// The requests of one session that may be answered at once, on HTTP and stdio: past them a
/// request is refused (each id held is memory of the server's, which a client could grow).
pub(crate) const MAX_ANSWERING: usize = 1024;

use serde_json::Value;

pub(crate) use error_answer::ErrorAnswer;

/// Is `value` shaped like a JSON-RPC 2.0 message? If not, the -32600 answering it.
pub(crate) fn check_message(value: &Value) -> Result<(), ErrorAnswer> {
    let Value::Object(message) = value else {
        let why = if value.is_array() {
            "batches are not supported"
        } else {
            "a message must be a JSON object"
        };
        return Err(ErrorAnswer::invalid(
            Value::Null,
            format!("Invalid Request: {why}"),
        ));
    };
    let id = answer_id(value);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(ErrorAnswer::invalid(
            id,
            "Invalid Request: \"jsonrpc\" must be \"2.0\"",
        ));
    }
    let shaped = match message.get("method") {
        Some(method) => method.is_string(),
        None => message.contains_key("result") || message.contains_key("error"),
    };
    if !shaped {
        return Err(ErrorAnswer::invalid(
            id,
            "Invalid Request: a message needs a string \"method\", or a \"result\" or \"error\"",
        ));
    }
    Ok(())
}

/// The id an error answer carries: the message's own when it is a valid JSON-RPC id (a string
/// or a number), else `null`, as JSON-RPC asks when the id cannot be determined.
pub(crate) fn answer_id(message: &Value) -> Value {
    match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// The methods whose params carry a pagination cursor.
const PAGINATED: [&str; 4] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// A list request whose `cursor` is not a string: on error, the -32602 answering it. rmcp reads such params as absent and would answer the first page, so the
/// transports check before it does; only bodies that mention `"cursor"` are parsed again.
pub(crate) fn check_cursor(bytes: &[u8]) -> Result<(), ErrorAnswer> {
    const NEEDLE: &[u8] = b"\"cursor\"";
    if !bytes.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return Ok(());
    }
    let summary = summary::Summary::read(bytes);
    summary
        .check_cursor()
        .map_err(|why| ErrorAnswer::new(summary.answer_id(), error_answer::INVALID_PARAMS, why))
}

/// The task ids a `subscriptions/listen` message follows (`notifications.taskIds`), which rmcp's
/// filter type drops; only bodies that mention `"taskIds"` are read again.
pub(crate) fn listened_tasks(bytes: &[u8]) -> Option<crate::task::ListenTasks> {
    const NEEDLE: &[u8] = b"\"taskIds\"";
    if !bytes.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return None;
    }
    summary::Summary::read(bytes).listened_tasks()
}

/// The context of a request answered in place (HTTP or stdio): its id, the peer, the token,
/// and the request's own meta and extensions, taken out of it.
fn request_context(
    request: &mut rmcp::model::ClientRequest,
    id: rmcp::model::RequestId,
    peer: rmcp::Peer<rmcp::RoleServer>,
    ct: tokio_util::sync::CancellationToken,
) -> rmcp::service::RequestContext<rmcp::RoleServer> {
    use rmcp::model::{GetExtensions as _, GetMeta as _};
    let mut context = rmcp::service::RequestContext::new(id, peer);
    context.ct = ct;
    // The meta first: it is kept in the request's extensions.
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    context
}

/// The JSON-RPC answer to request `id`: its result, its error, or for a panic an internal
/// error.
fn answer_message(
    id: rmcp::model::RequestId,
    handled: std::thread::Result<Result<rmcp::model::ServerResult, rmcp::model::ErrorData>>,
) -> rmcp::model::ServerJsonRpcMessage {
    use rmcp::model::{ErrorData, ServerJsonRpcMessage};
    match handled {
        Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id),
        Ok(Err(error)) => ServerJsonRpcMessage::error(error, Some(id)),
        Err(_) => {
            tracing::error!("a request's handler panicked");
            ServerJsonRpcMessage::error(
                ErrorData::internal_error("the request's handler panicked", None),
                Some(id),
            )
        }
    }
}

/// A request of a 2025-11-25 session that the adapter answers as that version's tasks,
/// renamed for it: only a message that names such a method (or a `task`) is read again.
fn tasks_2025_request(message: &[u8]) -> Option<Vec<u8>> {
    let names = |needle: &[u8]| memchr::memmem::find(message, needle).is_some();
    (names(b"\"tasks/") || names(b"\"task\"") || names(b"\"tools/list\""))
        .then(|| crate::adapter::tasks_2025::renamed(message))
        .flatten()
}
