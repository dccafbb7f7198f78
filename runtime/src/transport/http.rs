//! Streamable HTTP: rmcp's service behind a gate that authenticates the caller and answers
//! oversized, unparsable and non-message bodies with the JSON-RPC error their kind calls for.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tower_service::Service;

use crate::adapter::{Kept, McpHandler};
use crate::auth::AuthError;
use crate::server::Inner;
use crate::transport::ErrorAnswer;
use crate::transport::batch;
use crate::transport::body::{self, BodyError};
use crate::transport::http_direct::Direct;
use crate::transport::marked::Marked;
use crate::transport::restore::Restore;
use crate::transport::sessions::Sessions;
use crate::{Server, ServerError};

impl Server {
    /// The MCP endpoint as a service to mount in an axum app at any path:
    /// `app.nest_service("/mcp", server.http_service())`.
    pub fn http_service(
        &self,
    ) -> impl Service<Request, Response = Response, Error = Infallible, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static {
        let http = &self.inner.http;
        let kept = http
            .stateful
            .then(|| {
                let store = &self.inner.ledger.store;
                Kept::on(
                    store,
                    &self.inner.notifier,
                    &self.inner.listeners,
                    http.session_idle,
                )
            })
            .flatten();
        let handler = self.handler(None).keeping(kept.clone());
        let mut config = rmcp_config(http);
        if let Some(kept) = &kept {
            config.session_store = Some(Arc::new(Restore(Arc::clone(kept))));
        }
        let sessions = Sessions::new(http, kept);
        let offers = handler.clone();
        sessions
            .marked()
            .offer_tasks(Box::new(move || offers.offers_tasks()));
        let manager = Arc::downgrade(&sessions.manager());
        self.inner.instruments.count_sessions(
            move || {
                manager
                    .upgrade()
                    .map(|manager| manager.sessions.try_read().ok().map(|open| open.len()))
            },
            http.max_sessions,
        );
        let direct = Direct::new(http);
        let factory = handler.clone();
        let mcp = Mcp {
            service: StreamableHttpService::new(
                move || Ok(factory.for_session()),
                sessions.marked(),
                config,
            ),
            direct,
            handler,
        };
        Endpoint(Arc::new(Gate {
            inner: Arc::clone(&self.inner),
            mcp,
            sessions,
            slot: self.slot,
        }))
    }

    /// A router serving this server's surface at `path` (e.g. `/mcp`), and, when the
    /// authenticator is an OAuth resource server, its RFC 9728 metadata at
    /// `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource{path}`.
    pub fn router(&self, path: &str) -> Router {
        let router = self.with_metadata(
            Router::new().nest_service(path, self.http_service()),
            [path],
        );
        let router = self.with_probes(router, [path]);
        self.observed(router)
    }

    fn with_metadata<'a>(
        &self,
        router: Router,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Router {
        let Some(metadata) = self.inner.authenticator.resource_metadata() else {
            return router;
        };
        let document = axum::Json(metadata);
        let serve = move || {
            let document = document.clone();
            async move { document }
        };
        let mut router = router.route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(serve.clone()),
        );
        for path in paths {
            let path = path.trim_end_matches('/');
            if !path.is_empty() {
                let route = format!("/.well-known/oauth-protected-resource{path}");
                router = router.route(&route, axum::routing::get(serve.clone()));
            }
        }
        router
    }

    /// A router serving every surface [mounted](crate::ServerBuilder::mount) on the builder at
    /// its path, or this server's surface at `/mcp` when none was.
    pub fn app(&self) -> Router {
        if self.inner.mounts.is_empty() {
            return self.router("/mcp");
        }
        let app = self
            .inner
            .mounts
            .iter()
            .fold(Router::new(), |app, (path, slot, surface)| {
                let server = Server {
                    inner: Arc::clone(&self.inner),
                    slot: *slot,
                    surface: Arc::clone(surface),
                };
                app.nest_service(path, server.http_service())
            });
        let paths = self.inner.mounts.iter().map(|(path, _, _)| path.as_str());
        let app = self.with_metadata(app, paths.clone());
        let app = self.with_probes(app, paths);
        self.observed(app)
    }

    /// Serve [`app`](Self::app) on `addr` until `SIGTERM` or Ctrl-C, then
    /// [drain](Self::drain) (see [`serve_listener_until`](Self::serve_listener_until)).
    pub async fn serve_http(&self, addr: SocketAddr) -> Result<(), ServerError> {
        let listener = TcpListener::bind(addr).await?;
        self.serve_listener(listener).await
    }

    /// Serve [`app`](Self::app) on a bound `listener` until `SIGTERM` or Ctrl-C, then
    /// [drain](Self::drain) (see [`serve_listener_until`](Self::serve_listener_until)).
    pub async fn serve_listener(&self, listener: TcpListener) -> Result<(), ServerError> {
        self.serve_listener_until(listener, stop_signal()).await
    }

    /// Serve `app` (this server's [`app`](Self::app) or [`router`](Self::router), with your
    /// routes and layers) on a bound `listener` as [`serve_listener`](Self::serve_listener)
    /// does: with the server's limits, until `SIGTERM` or Ctrl-C, then draining.
    pub async fn serve_app(&self, listener: TcpListener, app: Router) -> Result<(), ServerError> {
        self.serve_until(listener, app, stop_signal()).await
    }

    /// Serve [`app`](Self::app) on a bound `listener` until `stop` resolves. Then the
    /// server [drains](Self::drain) (readiness fails; no new session or listen stream; the
    /// open listen streams end with a hint to listen again), takes no new connection, and
    /// lets the requests in flight finish within
    /// [`HttpConfig::drain_grace`](crate::HttpConfig::drain_grace); a stream still open then
    /// is dropped. A connection that is slow to send a request's head is closed
    /// ([`HttpConfig::header_read_timeout`](crate::HttpConfig::header_read_timeout)).
    pub async fn serve_listener_until(
        &self,
        listener: TcpListener,
        stop: impl Future<Output = ()> + Send,
    ) -> Result<(), ServerError> {
        self.serve_until(listener, self.app(), stop).await
    }

    /// `app` on `listener` until `stop`, then draining.
    async fn serve_until(
        &self,
        listener: TcpListener,
        app: Router,
        stop: impl Future<Output = ()> + Send,
    ) -> Result<(), ServerError> {
        let http = &self.inner.http;
        let server = self.clone();
        let stop = async move {
            stop.await;
            server.drain();
        };
        let limits = (http.header_read_timeout, http.drain_grace);
        serve_on(listener, app, limits, stop).await
    }
}

/// Serve `router` on `listener` until `SIGTERM` or Ctrl-C, letting requests in flight finish
/// (for up to 25 s); a connection that takes more than 10 s to send a request's head is
/// closed. Responses are small JSON-RPC messages, so Nagle's algorithm is off
/// (`TCP_NODELAY`): with it, a client that delays its ACKs waits 40 ms for every answer.
pub async fn serve_router(listener: TcpListener, router: Router) -> Result<(), ServerError> {
    let limits = (
        crate::server::DEFAULT_HEADER_READ_TIMEOUT,
        crate::server::DEFAULT_DRAIN_GRACE,
    );
    serve_on(listener, router, limits, stop_signal()).await
}

/// Until the process is told to stop: `SIGTERM` (what a platform sends) or Ctrl-C.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "SIGTERM cannot be heard: Ctrl-C only"),
        }
    }
    if let Err(error) = tokio::signal::ctrl_c().await {
        tracing::warn!(%error, "Ctrl-C cannot be heard: serving until the process ends");
        std::future::pending::<()>().await;
    }
}

/// How long a stopped server keeps its open connections after it stops taking new ones: a
/// request a balancer sends on one in that time (a kept-alive connection it believes open)
/// is answered, with `Connection: close`, instead of being lost with the connection.
const LINGER: Duration = Duration::from_secs(1);

/// `router` on `listener` until `stop`, with `limits`: how long a request's head may take,
/// and how long requests in flight may take to finish once stopped.
async fn serve_on(
    listener: TcpListener,
    router: Router,
    limits: (Duration, Duration),
    stop: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    let (header_read_timeout, grace) = limits;
    let graceful = GracefulShutdown::new();
    let closing = Arc::new(AtomicBool::new(false));
    let open = Arc::new(AtomicUsize::new(0));
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before it was taken:
                    // the listener itself is fine.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let service = Closing {
            inner: TowerToHyperService::new(router.clone()),
            closing: Arc::clone(&closing),
        };
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        let open = Arc::clone(&open);
        open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::trace!(%error, "connection ended");
            }
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
    // No new connections. The open ones close after their next answer, or after a short
    // while (a connection closed as a request arrives on it would lose that request).
    drop(listener);
    closing.store(true, Ordering::Relaxed);
    let stopped = tokio::time::Instant::now();
    let linger = LINGER.min(grace);
    while open.load(Ordering::Relaxed) > 0 && stopped.elapsed() < linger {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Then requests in flight finish, and a stream that would never end (an SSE listener) is
    // not waited for past the grace period.
    let grace = grace.saturating_sub(stopped.elapsed());
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!(
            grace_s = grace.as_secs_f64(),
            "connections still open past the grace period are not waited for"
        );
    }
    Ok(())
}

/// A connection's service that, once the server stops, answers with `Connection: close`, so
/// the client sends its next request elsewhere.
struct Closing<S> {
    inner: S,
    closing: Arc<AtomicBool>,
}

impl<S, R, B> hyper::service::Service<R> for Closing<S>
where
    S: hyper::service::Service<R, Response = axum::http::Response<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures_util::future::Either<
        S::Future,
        futures_util::future::MapOk<
            S::Future,
            fn(axum::http::Response<B>) -> axum::http::Response<B>,
        >,
    >;

    fn call(&self, request: R) -> Self::Future {
        let answer = self.inner.call(request);
        if self.closing.load(Ordering::Relaxed) {
            let close: fn(axum::http::Response<B>) -> axum::http::Response<B> = closed;
            futures_util::future::Either::Right(futures_util::TryFutureExt::map_ok(answer, close))
        } else {
            futures_util::future::Either::Left(answer)
        }
    }
}

/// `response`, closing its connection once sent.
fn closed<B>(mut response: axum::http::Response<B>) -> axum::http::Response<B> {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// rmcp's service configured as the endpoint's `http` says: its sessions (protocol 2025),
/// JSON answers, the body limit, the origins and hosts it admits.
fn rmcp_config(http: &crate::server::HttpConfig) -> StreamableHttpServerConfig {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(http.stateful)
        .with_json_response(true)
        .with_max_request_body_bytes(http.max_body_bytes)
        .with_allowed_origins(http.allowed_origins.clone());
    if http.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(http.allowed_hosts.clone())
    }
}

/// The MCP endpoint: the gate, then rmcp's service. One shared value, so a request clones
/// nothing but an `Arc` (rmcp's service, called as a tower service, clones its whole
/// configuration per request).
#[derive(Clone)]
struct Endpoint(Arc<Gate>);

/// What the endpoint checks a request with before rmcp sees it, and what it serves it with:
/// the server, rmcp's service (and the in-place answer), the endpoint's sessions, and the
/// slot of the surface it serves.
pub(super) struct Gate {
    pub(super) inner: Arc<Inner>,
    pub(super) mcp: Mcp,
    pub(super) sessions: Sessions,
    pub(super) slot: usize,
}

/// rmcp's service, and the path that answers a plain 2026-07-28 request in place.
pub(super) struct Mcp {
    service: StreamableHttpService<McpHandler, Marked>,
    pub(super) direct: Direct,
    pub(super) handler: McpHandler,
}

impl Service<Request> for Endpoint {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let gate = Arc::clone(&self.0);
        Box::pin(async move { Ok(gate.admit(request).await) })
    }
}

/// rmcp's answer to `request`.
pub(super) async fn serve(mcp: &Mcp, request: Request) -> Response {
    mcp.service.handle(request).await.map(Body::new)
}

impl Gate {
    /// A request to the endpoint: authenticated, a `DELETE` allowed only to the session's
    /// owner, a `POST`'s body read within its limits and served (a batch member by member).
    async fn admit(&self, request: Request) -> Response {
        let (mut parts, body) = request.into_parts();
        // The DNS-rebinding guard first, as rmcp has it, in words that name the setting.
        if let Some(host) = self.mcp.direct.refused_host(&parts.headers) {
            return forbidden_host(host);
        }
        let caller = match self.inner.authenticator.authenticate(&parts).await {
            Ok(caller) => caller,
            Err(error) => {
                let metadata = self.inner.authenticator.resource_metadata_url();
                return unauthorized(&error, metadata.as_deref());
            }
        };
        parts.extensions.insert(caller.clone());
        if parts.method == Method::DELETE {
            return self.delete(parts, body, &caller).await;
        }
        if parts.method == Method::GET {
            return self.listen(parts, body).await;
        }
        if parts.method != Method::POST {
            return serve(&self.mcp, Request::from_parts(parts, body)).await;
        }
        let bytes = match self.read(&parts.headers, body).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal,
        };
        if batch::is_batch(&bytes) {
            return batch::http(self, &parts, &caller, &bytes).await;
        }
        self.serve_one(parts, &caller, bytes).await
    }

    /// `GET`: a session's stream. With sessions kept for other replicas, it is sent from the
    /// streams the store keeps (`resumable`): after the event `Last-Event-ID` names, or where
    /// the session's previous stream ended, so a client resumes it on any replica.
    ///
    /// A server that drains refuses such a stream (`503`, `Retry-After: 1`) and ends those
    /// open, so the client opens it again on another replica.
    async fn listen(&self, mut parts: axum::http::request::Parts, body: Body) -> Response {
        let kept = self.sessions.kept().cloned();
        let session = Sessions::named(&parts.headers).map(str::to_owned);
        let (Some(kept), Some(session)) = (kept, session) else {
            return serve(&self.mcp, Request::from_parts(parts, body)).await;
        };
        if let Some(refusal) = self.sessions.refuse_restore(&parts.headers).await {
            return refusal;
        }
        if self.inner.drain.is_draining() {
            return ErrorAnswer::new(
                Value::Null,
                -32000,
                "The server is stopping: open the stream again (another replica will serve it)",
            )
            .retry_soon();
        }
        // An id this server gave is a position; any other is taken as none.
        let last_event_id = parts
            .headers
            .remove("last-event-id")
            .and_then(|id| id.to_str().ok()?.trim().parse::<u64>().ok());
        // rmcp checks the request (and restores the session here if another replica opened
        // it); its own stream of the copy here is not what the client hears.
        let response = serve(&self.mcp, Request::from_parts(parts, body)).await;
        if !response.status().is_success() {
            return response;
        }
        let (head, unused) = response.into_parts();
        drop(unused);
        self.sessions.pump(&session);
        let after = match kept.stream_start(&session, last_event_id).await {
            Ok(after) => after,
            Err(error) => {
                return ErrorAnswer::new(
                    Value::Null,
                    -32000,
                    format!(
                        "The store did not say where the stream resumes: {error}; open it again"
                    ),
                )
                .retry_soon();
            }
        };
        let inner = Arc::clone(&self.inner);
        let drained = Box::pin(async move { inner.drain.started().await });
        let frames = super::resumable::body(kept, session, after).into_data_stream();
        let body = Body::from_stream(futures_util::StreamExt::take_until(frames, drained));
        Response::from_parts(head, body)
    }

    /// `DELETE`: a session ended, by the caller that opened it only.
    async fn delete(
        &self,
        parts: axum::http::request::Parts,
        body: Body,
        caller: &crate::Caller,
    ) -> Response {
        let id = Sessions::named(&parts.headers).map(str::to_owned);
        if let Some(id) = &id
            && let Err(refusal) = self.sessions.may_delete(id, Some(caller)).await
        {
            return refusal;
        }
        // rmcp answers a terminated session with 202; clients (the Python SDK) expect 200 or
        // 204, and nothing is left to process.
        let mut response = serve(&self.mcp, Request::from_parts(parts, body)).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        let Some(id) = id.filter(|_| response.status().is_success()) else {
            return response;
        };
        // Ended here (rmcp checked the request first): now on the other replicas. A store
        // that fails is a 503 the client may retry, which ends it there.
        if let Err(refusal) = self.sessions.end(&id).await {
            return refusal;
        }
        self.sessions.forget(&id);
        response
    }

    /// A `POST`'s body, read within the endpoint's size and time limits, or the refusal.
    async fn read(&self, headers: &axum::http::HeaderMap, body: Body) -> Result<Bytes, Response> {
        let (limit, timeout) = (
            self.inner.http.max_body_bytes,
            self.inner.http.body_read_timeout,
        );
        let (status, why) = match body::read(headers, body, limit, timeout).await {
            Ok(bytes) => return Ok(bytes),
            Err(BodyError::TooLarge) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body exceeds {limit} bytes"),
            ),
            Err(BodyError::Failed(error)) => (
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {error}"),
            ),
            Err(BodyError::Slow) => (
                StatusCode::REQUEST_TIMEOUT,
                format!("the body did not arrive within {} s", timeout.as_secs_f64()),
            ),
        };
        Err(
            ErrorAnswer::new(Value::Null, -32600, format!("Invalid Request: {why}"))
                .response(status),
        )
    }
}

pub(super) fn unauthorized(error: &AuthError, metadata: Option<&str>) -> Response {
    let mut response = ErrorAnswer::new(Value::Null, -32001, format!("Unauthorized: {error}"))
        .response(StatusCode::UNAUTHORIZED);
    let challenge = match metadata {
        // RFC 9728 §5.1: the metadata URL first, then RFC 6750's `error`.
        Some(url) => {
            let rest = error.challenge().trim_start_matches("Bearer").trim_start();
            let url = url.replace(['"', '\\'], "");
            if rest.is_empty() {
                format!(r#"Bearer resource_metadata="{url}""#)
            } else {
                format!(r#"Bearer resource_metadata="{url}", {rest}"#)
            }
        }
        None => error.challenge().to_owned(),
    };
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `403` for a request whose `Host` the configuration does not allow, naming the setting
/// that allows it.
fn forbidden_host(host: axum::http::uri::Authority) -> Response {
    let message = format!(
        "Forbidden: Host '{host}' is not allowed (a guard against DNS rebinding). A server \
         reached by this name lists it: HttpConfig::default().allowed_hosts([\"{name}\"]); \
         an empty list turns the check off, for a server behind a proxy that checks Host itself.\n",
        name = host.host(),
    );
    let mut response = Response::new(Body::from(message));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
