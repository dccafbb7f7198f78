//! One HTTP message through the gate, once its body is read: the checks rmcp does not make
//! (from the message's summary), the session's hold on its id, the answer (made in place, or
//! rmcp's), and the statuses and words the server answers in where rmcp's differ.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::auth::AuthError;
use crate::pipeline;
use crate::transport::http::{Gate, serve, unauthorized};
use crate::transport::sessions::{Answering, Sessions, Taken};
use crate::transport::summary::Summary;
use crate::transport::{ErrorAnswer, MAX_ANSWERING, answer_id, check_message};

impl Gate {
    /// One message, read whole, from an authenticated `caller`: the checks rmcp does not
    /// make, rmcp's answer (or the answer made in place), and the JSON-RPC error for a body
    /// rmcp refuses. The body is read once here, into a [`Summary`]; what the call learns
    /// comes back in a [`Report`](crate::pipeline::Report).
    pub(super) async fn serve_one(
        &self,
        mut parts: axum::http::request::Parts,
        caller: &crate::Caller,
        bytes: Bytes,
    ) -> Response {
        let summary = Summary::read(&bytes);
        if let Err(why) = summary.check_cursor() {
            return ErrorAnswer::new(summary.answer_id(), -32602, why).response(StatusCode::OK);
        }
        if let Some(forwarded) = self
            .sessions
            .forward(&parts.headers, &summary, caller, &bytes)
            .await
        {
            return forwarded;
        }
        if let Some(tasks) = summary.listened_tasks() {
            parts.extensions.insert(tasks);
        }
        let opens = self.inner.http.stateful && Sessions::named(&parts.headers).is_none();
        if opens && let Some(refusal) = self.refuse_new(&summary).await {
            return refusal;
        }
        if !opens && let Some(refusal) = self.sessions.refuse_restore(&parts.headers).await {
            return refusal;
        }
        let answering = match self.hold_id(&parts, &summary) {
            Ok(answering) => answering,
            Err(refusal) => return *refusal,
        };
        let metadata = self.inner.authenticator.resource_metadata_url();
        let standard = matches!(
            self.inner.snapshot().view(self.slot).surface,
            crate::Surface::Standard
        );
        // A tool call whose status code depends on what the pipeline learns: the scope a
        // resource server's caller lacks (403), a rate limit on the standard surface (429).
        let mut reading = (summary.is_request("tools/call") && (metadata.is_some() || standard))
            .then(|| reported(&mut parts));
        let json_body = is_json(&parts.headers);
        // Only a session kept for other replicas is joined (`initialize`, with a shared store).
        let keeps = opens && self.sessions.keeps() && summary.is_request("initialize");
        let joining = keeps.then(|| {
            let joining = crate::adapter::Joining::default();
            parts.extensions.insert(joining.clone());
            joining
        });
        // A kept session restored here by this request: its copy sends into its stream.
        let session = (self.sessions.keeps() && !opens)
            .then(|| Sessions::named(&parts.headers))
            .flatten()
            .filter(|id| !self.sessions.pumping(id))
            .map(str::to_owned);
        let mut response = match self.tasks_2025(&parts, &summary, &bytes) {
            Some(renamed) => self.answer(parts, &renamed).await,
            None => self.answer(parts, &bytes).await,
        };
        if opens {
            response = self
                .sessions
                .opened(response, caller, &summary, &bytes, joining.as_ref())
                .await;
        } else if let Some(session) = session.filter(|_| response.status().is_success()) {
            self.sessions.pump(&session);
        }
        if let (Some(metadata), Some(reading)) = (&metadata, &mut reading)
            && let Some(Err(scope)) = reading.permission().await
        {
            response = insufficient_scope(&summary, caller, metadata, &scope);
        }
        response = self.held(response, answering);
        if standard && let Some(seconds) = reading.as_ref().and_then(|r| r.now().retry_after) {
            return rate_limited_status(response, seconds);
        }
        in_our_words(response, json_body, &bytes, &summary)
    }

    /// A task request of a 2025-11-25 session (by its `MCP-Protocol-Version`), renamed for
    /// the adapter's room for that version's tasks.
    fn tasks_2025(
        &self,
        parts: &axum::http::request::Parts,
        summary: &Summary<'_>,
        bytes: &Bytes,
    ) -> Option<Bytes> {
        let method = summary.method.as_deref()?;
        let version = parts.headers.get("mcp-protocol-version")?;
        if version.as_bytes() != b"2025-11-25"
            || !crate::adapter::tasks_2025::METHODS.contains(&method)
            || !self.mcp.handler.offers_tasks()
        {
            return None;
        }
        super::tasks_2025_request(bytes).map(Bytes::from)
    }

    /// The refusal of an `initialize` that would open a session now: the server drains, or
    /// holds as many sessions as it may.
    async fn refuse_new(&self, summary: &Summary<'_>) -> Option<Response> {
        if self.inner.drain.is_draining() && summary.method.as_deref() == Some("initialize") {
            let refusal = ErrorAnswer::new(
                summary.answer_id(),
                -32000,
                "The server is stopping: open the session again (another replica will serve it)",
            );
            return Some(refusal.retry_soon());
        }
        self.sessions.refuse_new(summary).await
    }

    /// Hold the request's id in its session while it is answered: a request of a session
    /// whose id another request of that session still waits on is refused, as both would be
    /// matched to one answer and one would never get its own.
    fn hold_id(
        &self,
        parts: &axum::http::request::Parts,
        summary: &Summary<'_>,
    ) -> Result<Option<Answering>, Box<Response>> {
        let Some(session) = Sessions::named(&parts.headers).filter(|_| self.inner.http.stateful)
        else {
            return Ok(None);
        };
        let Some(id) = summary.id.as_ref().filter(|_| summary.method.is_some()) else {
            return Ok(None);
        };
        let refusal = match self.sessions.answering(session, id.to_string()) {
            Ok(answering) => return Ok(Some(answering)),
            Err(Taken::Repeated) => ErrorAnswer::new(
                id.clone(),
                -32600,
                "Invalid Request: a request of this session with this id is still being answered",
            )
            .response(StatusCode::BAD_REQUEST),
            Err(Taken::Full) => ErrorAnswer::new(
                id.clone(),
                -32000,
                format!(
                    "Too many requests: {MAX_ANSWERING} requests of this session are being \
                     answered, the most it may have; send this one again once some are answered"
                ),
            )
            .response(StatusCode::TOO_MANY_REQUESTS),
        };
        Err(Box::new(refusal))
    }

    /// The answer: made in place for a plain 2026-07-28 request whose every wire rule is
    /// known to hold, else rmcp's.
    async fn answer(&self, parts: axum::http::request::Parts, bytes: &Bytes) -> Response {
        let has_headers = |name: &str| {
            self.inner
                .snapshot()
                .view(self.slot)
                .has_param_headers(name)
        };
        match self.mcp.direct.eligible(&parts, bytes, has_headers) {
            Some(eligible) => {
                self.mcp
                    .direct
                    .answer(&self.mcp.handler, eligible, parts)
                    .await
            }
            None => {
                serve(
                    &self.mcp,
                    Request::from_parts(parts, Body::from(bytes.clone())),
                )
                .await
            }
        }
    }

    /// `response`, holding the request's id until a streamed answer has gone out (the
    /// handler may still be running); any other answer is complete, or a refusal of a
    /// request no handler saw, and frees it as `answering` is dropped here.
    fn held(&self, response: Response, answering: Option<Answering>) -> Response {
        let streamed = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        match answering {
            Some(answering) if streamed => {
                let linger = self.inner.timeout.unwrap_or(Duration::from_secs(600));
                response.map(|body| answering.hold(body, linger))
            }
            _ => response,
        }
    }
}

/// Where the pipeline reports what it learns of the call `parts` asks for.
fn reported(parts: &mut axum::http::request::Parts) -> pipeline::Reading {
    let (reporter, reading) = pipeline::report();
    parts.extensions.insert(reporter);
    reading
}

/// Whether `headers` say the body is JSON.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// rmcp's refusals in the server's words: a method 2026-07-28 removed (404), and a body rmcp
/// refused (415) answered with the JSON-RPC error its kind calls for, the body examined again
/// only then.
fn in_our_words(
    response: Response,
    json_body: bool,
    bytes: &[u8],
    summary: &Summary<'_>,
) -> Response {
    if response.status() == StatusCode::NOT_FOUND {
        return removed_in_our_words(response, summary);
    }
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || !json_body {
        return response;
    }
    match serde_json::from_slice::<Value>(bytes) {
        Err(e) => ErrorAnswer::new(Value::Null, -32700, format!("Parse error: {e}"))
            .response(StatusCode::BAD_REQUEST),
        Ok(message) => not_served(&message),
    }
}

/// The answer to a JSON body rmcp refused as no message it serves.
fn not_served(message: &Value) -> Response {
    match check_message(message) {
        Err(refusal) => refusal.response(StatusCode::BAD_REQUEST),
        Ok(()) if message.get("id").is_some() && message.get("method").is_some() => {
            ErrorAnswer::new(
                answer_id(message),
                -32600,
                "Invalid Request: not a message this server understands",
            )
            .response(StatusCode::BAD_REQUEST)
        }
        // A notification or a response the server cannot read: JSON-RPC answers neither,
        // and streamable HTTP acknowledges them with 202.
        Ok(()) => StatusCode::ACCEPTED.into_response(),
    }
}

/// rmcp answers a method protocol 2026-07-28 removed (`ping`, `resources/subscribe`...)
/// with a JSON "method not found" (404) and the bare method name: the same error in the words
/// the server uses everywhere else (stdio, the adapter), so a client sees one answer. Told
/// from the request's method and the answer's status and type; rmcp's body is not read.
fn removed_in_our_words(response: Response, summary: &Summary<'_>) -> Response {
    let method = summary
        .method
        .as_deref()
        .filter(|method| crate::adapter::REMOVED.contains(method));
    let (Some(method), Some(id)) = (method, &summary.id) else {
        return response;
    };
    if !is_json(response.headers()) {
        return response;
    }
    let error = crate::adapter::removed(method);
    ErrorAnswer::new(id.clone(), error.code.0, error.message).response(StatusCode::NOT_FOUND)
}

/// On the standard surface, whose failures are JSON-RPC errors: a call refused for its rate
/// is `429 Too Many Requests` with `Retry-After` (whole seconds), the body as it was, when
/// the answer is one JSON message. (A streamed answer has sent its status before the refusal
/// is known.)
fn rate_limited_status(mut response: Response, seconds: u64) -> Response {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() == StatusCode::OK && json {
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// For an OAuth resource server: a `tools/call` of a native tool whose ability needs a scope
/// the token lacks (as the pipeline's permission check reported it) is `403` with
/// `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."` (RFC 6750 §3.1), so the
/// client can ask the user for that scope and retry; without a token, `401`.
fn insufficient_scope(
    summary: &Summary<'_>,
    caller: &crate::Caller,
    metadata: &str,
    scope: &str,
) -> Response {
    if caller.is_anonymous() {
        // No token at all: log in first, rather than ask for a scope.
        return unauthorized(&AuthError::MissingToken, Some(metadata));
    }
    let name = summary.tool().unwrap_or_default();
    let mut response = ErrorAnswer::new(
        summary.answer_id(),
        -32001,
        format!("Forbidden: tool '{name}' needs the scope '{scope}', which the token lacks"),
    )
    .response(StatusCode::FORBIDDEN);
    let url = metadata.replace(['"', '\\'], "");
    let scope = scope.replace(['"', '\\'], "");
    let challenge =
        format!(r#"Bearer resource_metadata="{url}", error="insufficient_scope", scope="{scope}""#);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
