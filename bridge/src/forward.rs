//! The handlers of bridged abilities: a call, a resource read or a prompt, forwarded to the
//! upstream as the pipeline checked it, and the upstream's answer mapped back.

use std::sync::{Arc, Weak};

use abilities::{
    AbilityError, Content, Context, ErrorCode,
    handler::{CallFuture, Handler, Output},
    prompt::{Prompt, Role},
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, GetPromptRequestParams, ReadResourceRequestParams,
    RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value, json};

use crate::upstream::Upstream;

/// Sends `notifications/cancelled` for a request whose caller stopped waiting (cancelled,
/// out of time), unless it was answered.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            tokio::spawn(async move {
                let note = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the downstream call was cancelled or timed out".into()),
                ));
                let _ = peer.send_notification(note.into()).await;
            });
        }
    }
}

/// Forwards calls of one upstream tool.
pub(crate) struct Forward {
    upstream: Weak<Upstream>,
    tool: String,
}

impl Forward {
    pub(crate) fn new(upstream: &Arc<Upstream>, tool: String) -> Self {
        Self {
            upstream: Arc::downgrade(upstream),
            tool,
        }
    }
}

fn gone() -> AbilityError {
    AbilityError::new(
        ErrorCode::UpstreamUnavailable,
        "the bridge is shutting down",
    )
}

impl Handler for Forward {
    fn call(&self, ctx: Context, args: Value) -> CallFuture {
        let upstream = self.upstream.upgrade();
        let tool = self.tool.clone();
        Box::pin(async move {
            let upstream = upstream.ok_or_else(gone)?;
            // The upstream call is a client span of its own below the call's, when the
            // server traces; the upstream is sent the trace context to join.
            abilities::otel::in_span(
                format!("tools/call {tool}"),
                abilities::otel::opentelemetry::trace::SpanKind::Client,
                call_tool(&upstream, ctx, tool.clone(), args),
            )
            .await
        })
    }
}

async fn call_tool(
    upstream: &Arc<Upstream>,
    ctx: Context,
    tool: String,
    args: Value,
) -> Result<Output, AbilityError> {
    let peer = upstream.peer()?;
    let mut params = CallToolRequestParams::new(tool.clone());
    if let Value::Object(args) = args {
        params = params.with_arguments(args);
    }
    {
        let mut trace = Map::new();
        abilities::otel::inject(&mut trace);
        if !trace.is_empty() {
            params.meta.get_or_insert_default().0.0.extend(trace);
        }
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut options = PeerRequestOptions::no_options();
    options.timeout = ctx.timeout();
    // Tracked before it is sent: what the upstream sends back may come at once.
    let mut tracked = upstream.begin(ctx.clone());
    let handle = peer
        .send_cancellable_request(request, options)
        .await
        .map_err(|_| upstream.unavailable(false))?;
    tracked.set_token(handle.progress_token.clone());
    let mut guard = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let call = Arc::clone(&tracked.call);
    let outcome = tokio::select! {
        biased;
        response = handle.await_response() => {
            guard.id = None;
            Ok(response)
        }
        error = call.aborted() => Err(error),
        () = ctx.cancellation().cancelled() => Err(AbilityError::new(ErrorCode::Cancelled, "the call was cancelled")),
    };
    drop(tracked);
    drop(guard);
    let response = outcome?;
    // A question the downstream client could not answer ends the call, whatever the
    // upstream made of the refusal.
    if let Some(error) = call.abort_error() {
        return Err(error);
    }
    match response {
        Ok(ServerResult::CallToolResult(result)) => tool_result(upstream, &tool, result),
        Ok(other) => Err(unexpected(upstream, &other)),
        Err(error) => Err(service_error(upstream, error)),
    }
}

/// An answer of the wrong kind.
fn unexpected(upstream: &Upstream, answer: &ServerResult) -> AbilityError {
    tracing::warn!(server = %upstream.name, ?answer, "unexpected answer");
    AbilityError::new(
        ErrorCode::ExecutionFailed,
        format!(
            "upstream \"{}\" answered with something other than a result",
            upstream.name
        ),
    )
}

/// A failed exchange with the upstream, as the caller should see it.
pub(crate) fn service_error(upstream: &Upstream, error: ServiceError) -> AbilityError {
    match error {
        ServiceError::McpError(e) => {
            let code = match e.code.0 {
                -32602 => ErrorCode::ValidationInvalidValue,
                -32601 => ErrorCode::NotFoundAbility,
                _ => ErrorCode::ExecutionFailed,
            };
            AbilityError::new(
                code,
                format!("upstream \"{}\" refused: {}", upstream.name, e.message),
            )
            .with_details(json!({"server": upstream.name, "upstream_error": e}))
        }
        ServiceError::Timeout { timeout } => AbilityError::new(
            ErrorCode::Timeout,
            format!(
                "upstream \"{}\" did not answer within {timeout:?}",
                upstream.name
            ),
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            upstream.unavailable(true)
        }
        other => AbilityError::new(
            ErrorCode::ExecutionFailed,
            format!("upstream \"{}\": {other}", upstream.name),
        ),
    }
}

/// The upstream's content blocks, each passed on as it came.
fn blocks(content: &[rmcp::model::ContentBlock]) -> Vec<Content> {
    content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .filter_map(Content::passthrough)
        .collect()
}

/// An upstream's tool result: success with its `structuredContent` and content blocks (a text
/// block that only repeats the structured value is left to the surface, which writes its
/// own), or `isError` as `EXECUTION_FAILED` carrying the upstream's content in its details.
fn tool_result(
    upstream: &Upstream,
    tool: &str,
    result: CallToolResult,
) -> Result<Output, AbilityError> {
    let content = blocks(&result.content);
    if result.is_error == Some(true) {
        let text: Vec<&str> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        let message = if text.is_empty() {
            format!("the tool \"{tool}\" of {} failed", upstream.name)
        } else {
            text.join("\n")
        };
        let mut details = Map::new();
        details.insert("server".into(), json!(upstream.name));
        details.insert("tool".into(), json!(tool));
        details.insert("content".into(), json!(content));
        if let Some(structured) = result.structured_content {
            details.insert("structuredContent".into(), structured);
        }
        return Err(AbilityError::new(ErrorCode::ExecutionFailed, message)
            .with_details(Value::Object(details)));
    }
    let mut output = match result.structured_content {
        Some(structured) => Output::json(structured),
        None => Output::contents(Vec::new()),
    };
    let repeats = |block: &Content| match (block, output.structured.as_ref()) {
        (Content::Passthrough(map), Some(structured)) => {
            map.get("type").and_then(Value::as_str) == Some("text")
                && map
                    .get("text")
                    .and_then(Value::as_str)
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                    .as_ref()
                    == Some(structured)
        }
        _ => false,
    };
    let content: Vec<Content> = content.into_iter().filter(|b| !repeats(b)).collect();
    if !content.is_empty() || output.structured.is_none() {
        output.content = Some(content);
    }
    Ok(output)
}

/// Reads one upstream resource (or a template's, filled in from the arguments).
pub(crate) struct ReadResource {
    upstream: Weak<Upstream>,
    uri: String,
    vars: Vec<String>,
}

impl ReadResource {
    pub(crate) fn new(upstream: &Arc<Upstream>, uri: String, vars: Vec<String>) -> Self {
        Self {
            upstream: Arc::downgrade(upstream),
            uri,
            vars,
        }
    }
}

impl Handler for ReadResource {
    fn call(&self, ctx: Context, args: Value) -> CallFuture {
        let upstream = self.upstream.upgrade();
        let uri = if self.vars.is_empty() {
            self.uri.clone()
        } else {
            expand(&self.uri, &args)
        };
        Box::pin(async move {
            let upstream = upstream.ok_or_else(gone)?;
            let peer = upstream.peer()?;
            let _tracked = upstream.begin(ctx);
            let result = peer
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
                .map_err(|e| service_error(&upstream, e))?;
            let content = result
                .contents
                .iter()
                .filter_map(|item| serde_json::to_value(item).ok())
                .filter_map(|item| {
                    Content::passthrough(json!({"type": "resource", "resource": item}))
                })
                .collect();
            Ok(Output::contents(content))
        })
    }
}

/// A URI template of simple `{name}` expressions filled in from `args` in one pass, each value
/// percent-encoded outside the unreserved characters, as RFC 6570 expands them (so a value
/// cannot add a path segment, a query or another expression).
pub(crate) fn expand(template: &str, args: &Value) -> String {
    let mut uri = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        uri.push_str(&rest[..start]);
        let var = &rest[start + 1..start + len];
        let value = match args.get(var) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        for byte in value.bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                uri.push(char::from(byte));
            } else {
                uri.push_str(&format!("%{byte:02X}"));
            }
        }
        rest = &rest[start + len + 1..];
    }
    uri.push_str(rest);
    uri
}

/// Gets one upstream prompt.
pub(crate) struct GetPrompt {
    upstream: Weak<Upstream>,
    name: String,
}

impl GetPrompt {
    pub(crate) fn new(upstream: &Arc<Upstream>, name: String) -> Self {
        Self {
            upstream: Arc::downgrade(upstream),
            name,
        }
    }
}

impl Handler for GetPrompt {
    fn call(&self, ctx: Context, args: Value) -> CallFuture {
        let upstream = self.upstream.upgrade();
        let name = self.name.clone();
        Box::pin(async move {
            let upstream = upstream.ok_or_else(gone)?;
            let peer = upstream.peer()?;
            let _tracked = upstream.begin(ctx);
            let mut params = GetPromptRequestParams::new(name);
            if let Value::Object(args) = args {
                params = params.with_arguments(args);
            }
            let result = peer
                .get_prompt(params)
                .await
                .map_err(|e| service_error(&upstream, e))?;
            let mut prompt = Prompt::new();
            if let Some(description) = result.description {
                prompt = prompt.with_description(description);
            }
            for message in result.messages {
                let role = match message.role {
                    rmcp::model::Role::User => Role::User,
                    rmcp::model::Role::Assistant => Role::Assistant,
                };
                let block = serde_json::to_value(&message.content)
                    .ok()
                    .and_then(Content::passthrough);
                if let Some(block) = block {
                    prompt = prompt.message(role, block);
                }
            }
            let mut output = Output::default();
            output.content = Some(
                prompt
                    .messages()
                    .iter()
                    .map(|m| m.content.clone())
                    .collect(),
            );
            output.prompt = Some(prompt);
            Ok(output)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn templates_expand_once_and_encoded() {
        let args = json!({"id": "a/b?c=%7By%7D", "y": "no", "n": 7});
        assert_eq!(
            super::expand("note://{id}/x/{n}", &args),
            "note://a%2Fb%3Fc%3D%257By%257D/x/7"
        );
        assert_eq!(super::expand("note://{y}", &args), "note://no");
        assert_eq!(super::expand("note://{gone}", &args), "note://");
    }
}
