//! Test helpers: a line-level stdio peer and a small HTTP client, so tests see the exact wire.

#![allow(dead_code, reason = "each test module uses part of the helpers")]
#![allow(unreachable_pub, reason = "test helpers shared by the suite's modules")]
#![allow(clippy::expect_used, reason = "helpers fail the test loudly")]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use abilities::Server;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// A client end of [`Server::serve_stream`], speaking raw lines.
pub struct Lines {
    write: WriteHalf<DuplexStream>,
    read: BufReader<ReadHalf<DuplexStream>>,
    /// Responses read while waiting for another id.
    pending: HashMap<String, Value>,
}

impl Lines {
    /// Serve `server` on an in-memory stream and return the client end.
    pub fn start(server: &Server) -> Self {
        let (client, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = server.clone();
        tokio::spawn(async move {
            let _ = server.serve_stream(server_read, server_write).await;
        });
        let (read, write) = tokio::io::split(client);
        Self {
            write,
            read: BufReader::new(read),
            pending: HashMap::new(),
        }
    }

    /// Start and complete the `initialize` handshake.
    pub async fn initialized(server: &Server) -> Self {
        Self::initialized_with(server, json!({})).await
    }

    /// Start and complete the `initialize` handshake of a client declaring `capabilities`.
    pub async fn initialized_with(server: &Server, capabilities: Value) -> Self {
        let mut lines = Self::start(server);
        let init = lines
            .request(
                1,
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "test", "version": "1"}
                }),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        lines
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .await;
        lines
    }

    /// Write one raw line.
    pub async fn send(&mut self, line: &str) {
        self.write
            .write_all(line.as_bytes())
            .await
            .expect("the server reads");
        self.write.write_all(b"\n").await.expect("the server reads");
    }

    /// Read the next line as JSON.
    pub async fn next(&mut self) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(20), self.read.read_line(&mut line))
            .await
            .expect("a response within 20 s")
            .expect("the server writes");
        assert!(read > 0, "the server closed the stream");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Close the input, then read every line until the server closes the output.
    pub async fn close_and_read_the_rest(&mut self) -> Vec<Value> {
        self.write.shutdown().await.expect("the input closes");
        let mut rest = Vec::new();
        loop {
            let mut line = String::new();
            let read =
                tokio::time::timeout(Duration::from_secs(20), self.read.read_line(&mut line))
                    .await
                    .expect("the output closes within 20 s")
                    .expect("the server writes");
            if read == 0 {
                return rest;
            }
            rest.push(serde_json::from_str(&line).expect("JSON"));
        }
    }

    /// Read until the response with `id` arrives.
    pub async fn response(&mut self, id: &Value) -> Value {
        if let Some(found) = self.pending.remove(&id.to_string()) {
            return found;
        }
        loop {
            let message = self.next().await;
            if &message["id"] == id {
                return message;
            }
            self.pending.insert(message["id"].to_string(), message);
        }
    }

    /// Read until the response with `id` arrives, returning the notifications (and other
    /// messages) that came first, and the response.
    pub async fn until(&mut self, id: u64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.next().await;
            if message.get("id") == Some(&json!(id)) {
                return (before, message);
            }
            before.push(message);
        }
    }

    /// Send a request and wait for its response.
    pub async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )
        .await;
        self.response(&json!(id)).await
    }

    /// `tools/call` and its `result` (panics on a JSON-RPC error).
    pub async fn call(&mut self, id: u64, name: &str, args: Value) -> Value {
        let response = self
            .request(id, "tools/call", json!({"name": name, "arguments": args}))
            .await;
        assert!(
            response.get("error").is_none(),
            "unexpected JSON-RPC error: {response}"
        );
        response["result"].clone()
    }
}

/// The token an MCP-AQL envelope asking for confirmation offers (a tool result's text).
pub fn confirmation_token(result: &Value) -> String {
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text block: {result}"));
    let envelope: Value = serde_json::from_str(text).expect("an MCP-AQL envelope");
    envelope["error"]["details"]["confirmation_token"]
        .as_str()
        .or_else(|| envelope["confirmation"]["token"].as_str())
        .unwrap_or_else(|| panic!("a token: {envelope}"))
        .to_owned()
}

/// The `{code, message, details?}` of an `isError` tool result.
pub fn tool_error(result: &Value) -> Value {
    assert_eq!(
        result["isError"], true,
        "expected an error result: {result}"
    );
    let text = result["content"][0]["text"].as_str().expect("a text block");
    serde_json::from_str(text).expect("the text is JSON")
}

/// An HTTP response, with any SSE `data:` payloads parsed.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl HttpResponse {
    /// The JSON-RPC messages of the body: the JSON itself, or every SSE `data:` line.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The one message of the body.
    pub fn message(&self) -> Value {
        let mut messages = self.messages();
        assert_eq!(messages.len(), 1, "one message expected: {self:?}");
        messages.remove(0)
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// POST `body` to `http://addr/path` with the MCP headers plus `extra`.
pub async fn post(
    addr: SocketAddr,
    path: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> HttpResponse {
    request(addr, "POST", path, extra, body).await
}

/// Send a request with the MCP headers plus `extra`.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> HttpResponse {
    let response = send_head(addr, method, path, extra, body).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(Duration::from_secs(20), response.into_body().collect())
        .await
        .expect("the body within 20 s")
        .expect("a body")
        .to_bytes();
    HttpResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// Send a request with the MCP headers plus `extra` on a new connection; the response as
/// soon as its head is in.
async fn send_head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> hyper::Response<hyper::body::Incoming> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the server listens");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP handshake");
    tokio::spawn(connection);
    let mut request = hyper::Request::builder().method(method).uri(path);
    if !extra
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request = request.header("host", addr.to_string());
    }
    request = request
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(body.into()))
        .expect("a valid request");
    tokio::time::timeout(Duration::from_secs(20), sender.send_request(request))
        .await
        .expect("a response within 20 s")
        .expect("the server answers")
}

/// Serve `server` at `/mcp` on a free loopback port.
pub async fn serve_http(server: &Server) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("an address");
    let router = server.router("/mcp");
    tokio::spawn(abilities::http::serve_router(listener, router));
    addr
}

/// `initialize` over HTTP at `/mcp`; returns the session id.
pub async fn http_session(addr: SocketAddr) -> String {
    http_session_at(addr, "/mcp").await
}

/// `initialize` over HTTP at `path`; returns the session id.
pub async fn http_session_at(addr: SocketAddr, path: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}
    }});
    let response = post(addr, path, &[], init.to_string()).await;
    assert_eq!(response.status, 200, "{response:?}");
    let session = response.header("mcp-session-id").expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let ack = post(
        addr,
        path,
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        initialized,
    )
    .await;
    assert_eq!(ack.status, 202, "{ack:?}");
    session
}

/// The configuration of a test client of protocol 2025-11-25 named `name`, declaring
/// `capabilities`.
pub fn client_config(
    name: &str,
    capabilities: Value,
) -> abilities::protocol::rmcp::model::ClientConfig {
    serde_json::from_value(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": name, "version": "1"}
    }))
    .expect("a client config")
}

/// Serve `server`'s handler (callers from the transport) on an in-memory pipe and return
/// the client end, for an rmcp client of the test's own.
pub fn session(server: &Server) -> DuplexStream {
    let handler = server.handler(None);
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        use abilities::protocol::rmcp::ServiceExt;
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client_io
}

/// An rmcp client of protocol 2026-07-28 (the discover lifecycle, where subscriptions are
/// `subscriptions/listen`) connected to `server` over the line transport.
pub async fn client_2026(
    server: &Server,
) -> abilities::protocol::rmcp::service::RunningService<
    abilities::protocol::rmcp::RoleClient,
    abilities::protocol::rmcp::model::ClientConfig,
> {
    use abilities::protocol::rmcp::model::{ClientConfig, ProtocolVersion};
    use abilities::protocol::rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_stream(read, write).await });
    let config: ClientConfig = serde_json::from_value(json!({
        "protocolVersion": "2026-07-28",
        "capabilities": {},
        "clientInfo": {"name": "listener", "version": "1"}
    }))
    .expect("a client config");
    config
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client connects")
}

/// Panic unless `envelope` is an MCP-AQL answer as `schemas/aql-envelope.schema.json` says.
pub fn assert_aql_envelope(envelope: &Value) {
    static ENVELOPE: std::sync::LazyLock<jsonschema::Validator> =
        std::sync::LazyLock::new(|| compile(include_str!("../schemas/aql-envelope.schema.json")));
    assert_valid(&ENVELOPE, envelope);
}

/// Panic unless `answer` is an MCP-AQL batch's answer as `schemas/aql-batch.schema.json`
/// (the official batch-operation schema's rules) says.
pub fn assert_aql_batch(answer: &Value) {
    static BATCH: std::sync::LazyLock<jsonschema::Validator> =
        std::sync::LazyLock::new(|| compile(include_str!("../schemas/aql-batch.schema.json")));
    assert_valid(&BATCH, answer);
}

/// Panic unless `envelope` is an `introspect` answer as `schemas/aql-introspection.schema.json`
/// says.
pub fn assert_aql_introspection(envelope: &Value) {
    static INTROSPECTION: std::sync::LazyLock<jsonschema::Validator> =
        std::sync::LazyLock::new(|| {
            compile(include_str!("../schemas/aql-introspection.schema.json"))
        });
    assert_valid(&INTROSPECTION, envelope);
}

fn compile(schema: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(schema).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, value: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{value:#}");
}

/// An HTTP response whose body is still arriving (an SSE stream): its status, and the body
/// to read from or to drop (which ends the stream).
pub struct Streaming {
    pub status: u16,
    pub body: hyper::body::Incoming,
    /// The id of the last event read (`id:`), as a client resuming the stream names it.
    pub last_id: Option<String>,
    /// What arrived and is not a whole line yet.
    text: String,
    /// Messages read and not yet taken.
    read: std::collections::VecDeque<Value>,
}

impl Streaming {
    /// The next `data:` message of the stream, within 10 s.
    pub async fn next_message(&mut self) -> Option<Value> {
        loop {
            if let Some(message) = self.read.pop_front() {
                return Some(message);
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .ok()??
                .ok()?;
            if let Ok(data) = frame.into_data() {
                self.text.push_str(&String::from_utf8_lossy(&data));
            }
            while let Some(end) = self.text.find('\n') {
                let line: String = self.text.drain(..=end).collect();
                if let Some(id) = line.strip_prefix("id:") {
                    self.last_id = Some(id.trim().to_owned());
                }
                if let Some(message) = line
                    .strip_prefix("data:")
                    .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok())
                {
                    self.read.push_back(message);
                }
            }
        }
    }
}

/// POST `body` and return as soon as the response's head is in, its body still open.
pub async fn post_streaming(
    addr: SocketAddr,
    path: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Streaming {
    let response = send_head(addr, "POST", path, extra, body).await;
    Streaming {
        status: response.status().as_u16(),
        body: response.into_body(),
        last_id: None,
        text: String::new(),
        read: std::collections::VecDeque::new(),
    }
}

/// GET `path` with the MCP headers plus `extra` (a listen stream); as soon as the response's
/// head is in, its body still open.
pub async fn get_streaming(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Streaming {
    let response = send_head(addr, "GET", path, extra, "").await;
    Streaming {
        status: response.status().as_u16(),
        body: response.into_body(),
        last_id: None,
        text: String::new(),
        read: std::collections::VecDeque::new(),
    }
}

/// One replica's view of a store that replicas share (an SQLite one, for the tests): with
/// task events between the replicas of a [`set`](Replica::set), as PostgreSQL's `NOTIFY`
/// would carry them (each skips its own), or [`alone`](Replica::alone), carrying no signals
/// and no events.
pub struct Replica {
    store: std::sync::Arc<abilities::store::SqliteStore>,
    bus: Option<tokio::sync::broadcast::Sender<(u64, abilities::store::TaskEvent)>>,
    /// Session events and resource updates between the replicas of a set.
    sessions: Option<tokio::sync::broadcast::Sender<(u64, abilities::store::SessionEvent)>>,
    updates: Option<tokio::sync::broadcast::Sender<(u64, String)>>,
    me: u64,
    /// How many of the next outcomes to refuse to record, as a store that went down between
    /// a call's effect and its record would.
    settle_failures: std::sync::Arc<std::sync::atomic::AtomicU32>,
    /// While set, reading a task or a session fails, as a database that went down would.
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Replica {
    /// `n` replicas of one store.
    pub fn set(store: &std::sync::Arc<abilities::store::SqliteStore>, n: u64) -> Vec<Replica> {
        let (bus, _) = tokio::sync::broadcast::channel(1024);
        let (sessions, _) = tokio::sync::broadcast::channel(1024);
        let (updates, _) = tokio::sync::broadcast::channel(1024);
        (0..n)
            .map(|me| Replica {
                store: std::sync::Arc::clone(store),
                bus: Some(bus.clone()),
                sessions: Some(sessions.clone()),
                updates: Some(updates.clone()),
                me,
                settle_failures: std::sync::Arc::default(),
                down: std::sync::Arc::default(),
            })
            .collect()
    }

    /// A replica of `store` that reaches no other: what another replica runs is refused.
    pub fn alone(store: std::sync::Arc<abilities::store::SqliteStore>) -> Replica {
        Replica {
            store,
            bus: None,
            sessions: None,
            updates: None,
            me: 0,
            settle_failures: std::sync::Arc::default(),
            down: std::sync::Arc::default(),
        }
    }

    /// The switch that makes this replica's reads of tasks and sessions fail while set.
    pub fn down_switch(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        std::sync::Arc::clone(&self.down)
    }

    /// A replica of `store` alone whose reads of tasks and sessions fail while `down` is set.
    pub fn switched(
        store: std::sync::Arc<abilities::store::SqliteStore>,
        down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Replica {
        Replica {
            down,
            ..Self::alone(store)
        }
    }

    /// A replica of `store` alone, whose next `failures` attempts to record an idempotent
    /// call's outcome fail (the counter is shared: set it again to fail more).
    pub fn failing_settles(
        store: std::sync::Arc<abilities::store::SqliteStore>,
        failures: std::sync::Arc<std::sync::atomic::AtomicU32>,
    ) -> Replica {
        Replica {
            settle_failures: failures,
            ..Self::alone(store)
        }
    }
}

impl abilities::store::Store for Replica {
    fn insert_task(
        &self,
        record: abilities::store::TaskRecord,
        limits: abilities::store::TaskLimits,
    ) -> abilities::store::StoreFuture<'_, abilities::store::TaskInsert> {
        self.store.insert_task(record, limits)
    }
    fn task<'a>(
        &'a self,
        id: &'a str,
    ) -> abilities::store::StoreFuture<'a, Option<abilities::store::TaskRecord>> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(async {
                Err(abilities::store::StoreError::failed(
                    "the database is not answering",
                ))
            });
        }
        self.store.task(id)
    }
    fn update_task(
        &self,
        record: abilities::store::TaskRecord,
    ) -> abilities::store::StoreFuture<'_, ()> {
        self.store.update_task(record)
    }
    fn touch_tasks<'a>(
        &'a self,
        ids: &'a [String],
        now_ms: u64,
    ) -> abilities::store::StoreFuture<'a, ()> {
        self.store.touch_tasks(ids, now_ms)
    }
    fn fail_abandoned<'a>(
        &'a self,
        failed: &'a abilities::store::TaskRecord,
        lease_ms: u64,
    ) -> abilities::store::StoreFuture<'a, bool> {
        self.store.fail_abandoned(failed, lease_ms)
    }
    fn issue_token<'a>(
        &'a self,
        token: &'a abilities::store::TokenRecord,
        limit: u32,
    ) -> abilities::store::StoreFuture<'a, bool> {
        self.store.issue_token(token, limit)
    }
    fn spend_token<'a>(
        &'a self,
        token: &'a abilities::store::TokenRecord,
    ) -> abilities::store::StoreFuture<'a, abilities::store::Spend> {
        self.store.spend_token(token)
    }
    fn claim<'a>(
        &'a self,
        claim: &'a abilities::store::Claim,
    ) -> abilities::store::StoreFuture<'a, abilities::store::Claimed> {
        self.store.claim(claim)
    }
    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a serde_json::Value,
    ) -> abilities::store::StoreFuture<'a, ()> {
        let failing = self
            .settle_failures
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok();
        if failing {
            return Box::pin(async {
                Err(abilities::store::StoreError::failed(
                    "the database is not answering",
                ))
            });
        }
        self.store.settle(holder, key, owner, outcome)
    }
    fn renew<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> abilities::store::StoreFuture<'a, ()> {
        self.store.renew(holder, key, owner, lease_until_ms)
    }
    fn release<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
    ) -> abilities::store::StoreFuture<'a, ()> {
        self.store.release(holder, key, owner)
    }
    fn take_rate<'a>(
        &'a self,
        key: &'a str,
        calls: u32,
        period_ms: u64,
        now_ms: u64,
    ) -> abilities::store::StoreFuture<'a, abilities::store::RateTaken> {
        self.store.take_rate(key, calls, period_ms, now_ms)
    }
    fn sweep(&self, now_ms: u64) -> abilities::store::StoreFuture<'_, u64> {
        self.store.sweep(now_ms)
    }
    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a abilities::store::TaskSignal,
        expires_at_ms: u64,
    ) -> abilities::store::StoreFuture<'a, ()> {
        Box::pin(async move {
            let Some(bus) = &self.bus else {
                return Err(abilities::store::StoreError::Unsupported(
                    "no other replica to reach",
                ));
            };
            self.store.signal_task(id, signal, expires_at_ms).await?;
            let _ = bus.send((
                self.me,
                abilities::store::TaskEvent::Signalled(id.to_owned()),
            ));
            Ok(())
        })
    }
    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> abilities::store::StoreFuture<'a, Vec<(String, abilities::store::TaskSignal)>> {
        self.store.take_task_signals(ids)
    }
    fn publish_task<'a>(&'a self, id: &'a str) -> abilities::store::StoreFuture<'a, ()> {
        if let Some(bus) = &self.bus {
            let _ = bus.send((self.me, abilities::store::TaskEvent::Changed(id.to_owned())));
        }
        Box::pin(async { Ok(()) })
    }
    fn task_events(&self) -> Option<abilities::store::TaskEvents> {
        heard(self.bus.as_ref()?, self.me)
    }
    fn put_session<'a>(
        &'a self,
        record: &'a abilities::store::SessionRecord,
    ) -> abilities::store::StoreFuture<'a, ()> {
        self.store.put_session(record)
    }
    fn session<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> abilities::store::StoreFuture<'a, Option<abilities::store::SessionRecord>> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(async {
                Err(abilities::store::StoreError::failed(
                    "the database is not answering",
                ))
            });
        }
        self.store.session(id, now_ms)
    }
    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> abilities::store::StoreFuture<'a, Vec<String>> {
        self.store.touch_sessions(ids, expires_at_ms)
    }
    fn update_session<'a>(
        &'a self,
        record: &'a abilities::store::SessionRecord,
        expected: &'a serde_json::Value,
    ) -> abilities::store::StoreFuture<'a, bool> {
        Box::pin(async move {
            let replaced = self.store.update_session(record, expected).await?;
            if replaced && let Some(bus) = &self.sessions {
                let _ = bus.send((
                    self.me,
                    abilities::store::SessionEvent::Changed(record.id.clone()),
                ));
            }
            Ok(replaced)
        })
    }
    fn delete_session<'a>(&'a self, id: &'a str) -> abilities::store::StoreFuture<'a, bool> {
        Box::pin(async move {
            let gone = self.store.delete_session(id).await?;
            if let Some(bus) = &self.sessions {
                let _ = bus.send((
                    self.me,
                    abilities::store::SessionEvent::Ended(id.to_owned()),
                ));
            }
            Ok(gone)
        })
    }
    fn forward_to_session<'a>(
        &'a self,
        id: &'a str,
        message: &'a serde_json::Value,
        expires_at_ms: u64,
    ) -> abilities::store::StoreFuture<'a, ()> {
        Box::pin(async move {
            self.store
                .forward_to_session(id, message, expires_at_ms)
                .await?;
            if let Some(bus) = &self.sessions {
                let _ = bus.send((
                    self.me,
                    abilities::store::SessionEvent::Forwarded(id.to_owned()),
                ));
            }
            Ok(())
        })
    }
    fn take_forwarded<'a>(
        &'a self,
        id: &'a str,
    ) -> abilities::store::StoreFuture<'a, Vec<serde_json::Value>> {
        self.store.take_forwarded(id)
    }
    fn session_events(&self) -> Option<abilities::store::SessionEvents> {
        heard(self.sessions.as_ref()?, self.me)
    }
    fn append_to_stream<'a>(
        &'a self,
        stream: &'a str,
        message: &'a serde_json::Value,
        expires_at_ms: u64,
    ) -> abilities::store::StoreFuture<'a, u64> {
        Box::pin(async move {
            let position = self
                .store
                .append_to_stream(stream, message, expires_at_ms)
                .await?;
            if let Some(bus) = &self.sessions {
                let _ = bus.send((
                    self.me,
                    abilities::store::SessionEvent::Streamed(stream.to_owned()),
                ));
            }
            Ok(position)
        })
    }
    fn read_streams<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> abilities::store::StoreFuture<'a, abilities::store::StreamRead> {
        self.store.read_streams(streams, after, limit)
    }
    fn publish<'a>(&'a self, uri: &'a str) -> abilities::store::StoreFuture<'a, ()> {
        if let Some(bus) = &self.updates {
            let _ = bus.send((self.me, uri.to_owned()));
        }
        Box::pin(async { Ok(()) })
    }
    fn updates(&self) -> Option<abilities::store::Updates> {
        heard(self.updates.as_ref()?, self.me)
    }
    fn is_shared(&self) -> bool {
        true
    }
}

/// What the other replicas than `me` send on `bus`.
fn heard<T: Clone + Send + 'static>(
    bus: &tokio::sync::broadcast::Sender<(u64, T)>,
    me: u64,
) -> Option<tokio::sync::broadcast::Receiver<T>> {
    let (events, heard) = tokio::sync::broadcast::channel(1024);
    let mut bus = bus.subscribe();
    tokio::spawn(async move {
        while let Ok((from, event)) = bus.recv().await {
            if from != me && events.send(event).is_err() {
                return;
            }
        }
    });
    Some(heard)
}
