//! A protocol 2026-07-28 request answered in place. Such a request needs no session and, when
//! it asks for no progress and no log messages, gets exactly one message back, so the HTTP
//! gate hands it to the adapter itself and writes the answer as plain JSON: no service loop,
//! task or channel per request, and the body parsed once.
//!
//! Only a request whose every wire rule is known to hold here is answered in place: one
//! `Mcp-Method` naming its method, one `Mcp-Name` naming its tool, a protocol version header
//! equal to the one in its `_meta`, an allowed `Host`, no `Origin`, both media types accepted.
//! Anything else (a wrong or missing header, a tool with `Mcp-Param-*` headers, a method that
//! streams) goes to rmcp's service, which answers it with the error or the stream it calls for.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context as TaskContext, Poll};

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures_util::FutureExt as _;
use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetMeta as _,
    Implementation, InitializeRequestParams, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::{Peer, RunningService, RxJsonRpcMessage, TxJsonRpcMessage, serve_directly};
use rmcp::transport::Transport;
use rmcp::{RoleServer, Service as _};
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use super::ErrorAnswer;
use super::in_place::InPlace;
use crate::adapter::McpHandler;
use crate::server::HttpConfig;

/// The only protocol version answered in place.
const VERSION: &str = "2026-07-28";

/// What the in-place path needs, made once per endpoint.
pub(super) struct Direct {
    /// The allowed `Host` authorities (host, port), or `None` when any host is allowed.
    hosts: Option<Vec<(String, Option<u16>)>>,
    /// The peer every in-place request's context names; made on first use, inside the
    /// runtime. Nothing is sent through it: a request that could talk back is not served here.
    peer: OnceLock<(Peer<RoleServer>, RunningService<RoleServer, McpHandler>)>,
}

/// A request for the in-place path: its typed message, read from the body once.
pub(super) struct Eligible {
    id: RequestId,
    request: ClientRequest,
}

impl Direct {
    pub(super) fn new(http: &HttpConfig) -> Self {
        let hosts = (!http.allowed_hosts.is_empty()).then(|| {
            http.allowed_hosts
                .iter()
                .filter_map(|allowed| authority(allowed.trim()))
                .collect()
        });
        Self {
            hosts,
            peer: OnceLock::new(),
        }
    }

    /// The request in `parts` and `body`, when it is one to answer in place.
    /// `tool_has_headers` says whether a tool's input schema asks for `Mcp-Param-*` headers.
    pub(super) fn eligible(
        &self,
        parts: &Parts,
        body: &[u8],
        tool_has_headers: impl Fn(&str) -> bool,
    ) -> Option<Eligible> {
        let headers = &parts.headers;
        if headers.contains_key("mcp-session-id")
            || headers.contains_key(header::ORIGIN)
            || one(headers, "mcp-protocol-version")? != VERSION
            || !self.host_allowed(headers)
            || !accepts_both(headers)
            || !json_content(headers)
        {
            return None;
        }
        let method = one(headers, "mcp-method")?;
        if !InPlace::named(method) {
            return None;
        }
        let ClientJsonRpcMessage::Request(message) = super::parse::client_message(body).ok()?
        else {
            return None;
        };
        let request = message.request;
        if let ClientRequest::CallToolRequest(call) = &request {
            let name = one(headers, "mcp-name")?;
            if name != call.params.name || name.starts_with("=?") || tool_has_headers(name) {
                return None;
            }
        }
        let named = InPlace::of(&request).is_some_and(|kind| kind.method() == method);
        let meta = request.get_meta();
        let plain = named
            && meta
                .protocol_version()
                .as_ref()
                .map(ProtocolVersion::as_str)
                == Some(VERSION)
            && meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
            && meta.get_progress_token().is_none()
            && !meta.0.contains_key("io.modelcontextprotocol/logLevel");
        plain.then_some(Eligible {
            id: message.id,
            request,
        })
    }

    /// `handler`'s answer to `eligible`, as one JSON message. A handler that panics is an
    /// internal error. The request's token is cancelled once the answer is made, as rmcp
    /// cancels a request's token when it answers; a client that goes away first cancels it
    /// too, and the rest of the call runs on as a task of its own (see [`Detaching`]).
    pub(super) async fn answer(
        &self,
        handler: &McpHandler,
        eligible: Eligible,
        parts: Parts,
    ) -> Response {
        let Eligible { id, mut request } = eligible;
        let ct = CancellationToken::new();
        let mut context =
            super::request_context(&mut request, id.clone(), self.peer(handler), ct.clone());
        context.extensions.insert(parts);
        let handler = handler.clone();
        let work = async move {
            AssertUnwindSafe(handler.handle_request(request, context))
                .catch_unwind()
                .await
        };
        let handled = Detaching {
            work: Some(Box::pin(work)),
            ct: ct.clone(),
        }
        .await;
        ct.cancel();
        json(&super::answer_message(id, handled))
    }

    fn peer(&self, handler: &McpHandler) -> Peer<RoleServer> {
        self.peer
            .get_or_init(|| {
                let info = InitializeRequestParams::new(
                    ClientCapabilities::default(),
                    Implementation::default(),
                )
                .with_protocol_version(ProtocolVersion::V_2026_07_28);
                let running = serve_directly(handler.clone(), Silent, Some(info));
                (running.peer().clone(), running)
            })
            .0
            .clone()
    }

    /// The `Host` of a request, when it is one well-formed authority the configuration does
    /// not allow (the DNS-rebinding guard refuses it). A missing or malformed one is left to
    /// rmcp's `400`.
    pub(super) fn refused_host(&self, headers: &HeaderMap) -> Option<Authority> {
        let host = one(headers, header::HOST.as_str())?;
        let authority = Authority::try_from(host).ok()?;
        let allowed = self.hosts.as_ref()?;
        let (name, port) = (normalize(authority.host()), authority.port_u16());
        let known = allowed
            .iter()
            .any(|(h, p)| *h == name && p.is_none_or(|p| port == Some(p)));
        (!known).then_some(authority)
    }

    /// Whether `Host` is one well-formed authority that is allowed. (rmcp refuses a missing
    /// or malformed one even when every host is allowed.)
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = one(headers, header::HOST.as_str()) else {
            return false;
        };
        Authority::try_from(host).is_ok() && self.refused_host(headers).is_none()
    }
}

/// The answer's status, as streamable HTTP maps a 2026-07-28 error; the body, plain JSON.
fn json(message: &ServerJsonRpcMessage) -> Response {
    let status = match message {
        ServerJsonRpcMessage::Error(error) => match error.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    };
    match serde_json::to_vec(message) {
        Ok(body) => {
            let mut response = Response::new(Body::from(Bytes::from(body)));
            *response.status_mut() = status;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => ErrorAnswer::new(
            Value::Null,
            -32603,
            format!("Internal error: the answer could not be written: {error}"),
        )
        .response(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

/// What the handler's future gives: its result, or the panic it raised.
type Handled = std::thread::Result<Result<ServerResult, ErrorData>>;

/// A request's handling, polled in place by the connection that asked. Dropped unfinished
/// (the client went away), it cancels the request's token and lets the rest run as a task of
/// its own, as a handler on rmcp's path runs on in its task: the call still settles what it
/// holds (an idempotency key, its audit event, a background task's slot).
struct Detaching {
    work: Option<Pin<Box<dyn Future<Output = Handled> + Send>>>,
    ct: CancellationToken,
}

impl Future for Detaching {
    type Output = Handled;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Handled> {
        let Some(work) = self.work.as_mut() else {
            return Poll::Pending;
        };
        let handled = std::task::ready!(work.as_mut().poll(cx));
        self.work = None;
        Poll::Ready(handled)
    }
}

impl Drop for Detaching {
    fn drop(&mut self) {
        let Some(work) = self.work.take() else {
            return;
        };
        self.ct.cancel();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(work)),
            Err(_) => tracing::debug!("a call cut short outside a runtime was not finished"),
        }
    }
}

/// The header's one value as text; `None` when it is absent, repeated or not text.
fn one<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// An allowed entry's host and port: an authority, or else the text as a host of any port.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    if text.is_empty() {
        return None;
    }
    Some(match axum::http::uri::Authority::try_from(text) {
        Ok(authority) => (normalize(authority.host()), authority.port_u16()),
        Err(_) => (normalize(text), None),
    })
}

/// A host as compared: lower case, without an IPv6 literal's brackets.
fn normalize(host: &str) -> String {
    host.trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase()
}

/// Whether `Accept` names both JSON and an event stream, without weights or quotes (such a
/// list goes to rmcp, which reads weights and quoted parameters).
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains('"') {
            return false;
        }
        for range in value.split(',') {
            let range = range.trim();
            if range.contains(';') {
                return false;
            }
            json |= range.eq_ignore_ascii_case("application/json");
            sse |= range.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// Whether `Content-Type` is JSON (parameters such as `charset` allowed).
fn json_content(headers: &HeaderMap) -> bool {
    one(headers, header::CONTENT_TYPE.as_str()).is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
    })
}

/// The transport behind the shared peer: it receives nothing and drops what is sent. Nothing
/// eligible sends through the peer (no progress token, no `logLevel`), and a request to the
/// client is refused before it is sent: the peer's protocol, 2026-07-28, has none.
struct Silent;

impl Transport<RoleServer> for Silent {
    type Error = std::io::Error;

    fn send(
        &mut self,
        message: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        tracing::debug!(?message, "a message with no request to answer was dropped");
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        std::future::pending()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
