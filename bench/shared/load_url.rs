//! `loadgen --url`: load on a server that is already running (one replica, or several behind
//! a load balancer), with protocol 2026-07-28 requests that need no session, so any replica
//! may answer each, or with protocol 2025-11-25 in a session per client (where the server
//! keeps sessions). Either one tool called by many clients, or MCP-AQL confirmed deletions
//! of the `todo` example timed one by one.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

/// Which protocol a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Protocol {
    /// 2026-07-28: each request carries its own `_meta`, no session.
    #[value(name = "2026")]
    Stateless,
    /// 2025-11-25: `initialize` first, then the session the server names (if it names one).
    #[value(name = "2025")]
    Session,
}

/// A keep-alive HTTP/1.1 connection sending requests of one protocol.
pub(crate) struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    id: u64,
    protocol: Protocol,
    session: Option<String>,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

impl Connection {
    /// A connection sending 2026-07-28 requests.
    pub(crate) async fn open(url: &str) -> Result<Self, Error> {
        Self::open_as(url, Protocol::Stateless).await
    }

    /// A connection speaking `protocol`; on 2025-11-25, initialized.
    pub(crate) async fn open_as(url: &str, protocol: Protocol) -> Result<Self, Error> {
        let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
        let host = rest.split('/').next().unwrap_or(rest).to_owned();
        let stream = tokio::net::TcpStream::connect(&host).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut connection = Self {
            sender,
            host,
            id: 0,
            protocol,
            session: None,
        };
        if protocol == Protocol::Session {
            connection.initialize(url).await?;
        }
        Ok(connection)
    }

    fn path(url: &str) -> &str {
        url.strip_prefix("http://")
            .and_then(|r| r.find('/').map(|i| &r[i..]))
            .unwrap_or("/mcp")
    }

    /// `initialize` and `notifications/initialized`, keeping the session the server names.
    async fn initialize(&mut self, url: &str) -> Result<(), Error> {
        self.id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "loadgen", "version": "1"}}});
        let (headers, message) = self.post(url, "initialize", None, &body).await?;
        if message.get("result").is_none() {
            return Err(format!("initialize failed: {message}").into());
        }
        self.session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(url, "notifications/initialized", None, &initialized)
            .await?;
        Ok(())
    }

    /// POST one message; the response's headers and its JSON-RPC message (from a JSON body or
    /// the first SSE event that holds one; `null` for an empty body).
    async fn post(
        &mut self,
        url: &str,
        method: &str,
        name: Option<&str>,
        body: &Value,
    ) -> Result<(hyper::HeaderMap, Value), Error> {
        let version = match self.protocol {
            Protocol::Stateless => "2026-07-28",
            Protocol::Session => "2025-11-25",
        };
        let mut request = hyper::Request::post(Self::path(url))
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if method != "initialize" {
            request = request.header("mcp-protocol-version", version);
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if self.protocol == Protocol::Stateless {
            request = request.header("mcp-method", method);
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
        }
        let request = request.body(Full::new(Bytes::from(body.to_string())))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await?.to_bytes();
        if bytes.is_empty() {
            return Ok((parts.headers, Value::Null));
        }
        let text = String::from_utf8_lossy(&bytes);
        let message = serde_json::from_str::<Value>(&text).ok().or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id").is_some())
        });
        let message =
            message.ok_or_else(|| format!("HTTP {}: no JSON-RPC answer: {text}", parts.status))?;
        Ok((parts.headers, message))
    }

    /// Call `tool` with `arguments` at `url` (a path of this connection's host); the result.
    pub(crate) async fn call(
        &mut self,
        url: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Value, Error> {
        self.id += 1;
        let mut params = json!({"name": tool, "arguments": arguments});
        if self.protocol == Protocol::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "1"}});
        }
        let body =
            json!({"jsonrpc": "2.0", "id": self.id, "method": "tools/call", "params": params});
        let (_, message) = self.post(url, "tools/call", Some(tool), &body).await?;
        match message.get("result") {
            Some(result) if result["isError"] != true => Ok(result.clone()),
            _ => Err(format!("the call failed: {message}").into()),
        }
    }
}

/// Latencies' p50 and p99.
pub(crate) fn quantiles(latencies: Vec<Duration>) -> (Duration, Duration) {
    let [p50, _, p99] = percentiles(latencies);
    (p50, p99)
}

/// Latencies' p50, p95 and p99.
pub(crate) fn percentiles(mut latencies: Vec<Duration>) -> [Duration; 3] {
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    [at(0.5), at(0.95), at(0.99)]
}

/// How long each client calls: so many calls, or for so long.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Window {
    Calls(usize),
    Time(Duration),
}

/// What a load run measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Measured {
    pub(crate) calls: usize,
    pub(crate) rate: f64,
    /// p50, p95 and p99.
    pub(crate) latency: [Duration; 3],
}

/// `clients` connections of `protocol` each calling `tool` for the `window`.
pub(crate) async fn calls(
    url: &str,
    protocol: Protocol,
    tool: &str,
    arguments: &Value,
    clients: usize,
    window: Window,
) -> Result<Measured, Error> {
    let mut connections = Vec::new();
    for _ in 0..clients {
        connections.push(Connection::open_as(url, protocol).await?);
    }
    let start = Instant::now();
    let (calls, deadline) = match window {
        Window::Calls(calls) => (calls, None),
        Window::Time(time) => (usize::MAX, Some(start + time)),
    };
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            let (url, tool, arguments) = (url.to_owned(), tool.to_owned(), arguments.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(calls.min(100_000));
                for _ in 0..calls {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let sent = Instant::now();
                    connection.call(&url, &tool, &arguments).await?;
                    latencies.push(sent.elapsed());
                }
                Ok::<_, Error>(latencies)
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    let elapsed = start.elapsed();
    Ok(Measured {
        calls: all.len(),
        rate: all.len() as f64 / elapsed.as_secs_f64(),
        latency: percentiles(all),
    })
}

/// `count` confirmed deletions through the `todo` example at `url` (native tools there, the
/// MCP-AQL endpoints at `url`/aql), one at a time: each creates a todo (not timed), then asks
/// to delete it and redeems the token it gets (timed together). p50 and p99.
pub(crate) async fn confirmed_deletes(
    url: &str,
    count: usize,
) -> Result<(Duration, Duration), Error> {
    let aql = format!("{url}/aql");
    let mut connection = Connection::open(url).await?;
    let mut latencies = Vec::with_capacity(count);
    for i in 0..count {
        let created = connection
            .call(
                url,
                "create_todo",
                &json!({"title": format!("to confirm {i}")}),
            )
            .await?;
        let id = created["structuredContent"]["id"].clone();
        let sent = Instant::now();
        let asked = connection
            .call(
                &aql,
                "mcp_aql_delete",
                &json!({"operation": "delete_todo", "params": {"id": id}}),
            )
            .await?;
        let envelope: Value =
            serde_json::from_str(asked["content"][0]["text"].as_str().unwrap_or("{}"))?;
        let token = envelope["confirmation"]["token"]
            .as_str()
            .ok_or_else(|| format!("no token: {envelope}"))?;
        let done = connection
            .call(
                &aql,
                "mcp_aql_delete",
                &json!({"operation": "delete_todo",
                "params": {"id": id, "_confirmation": token}}),
            )
            .await?;
        latencies.push(sent.elapsed());
        let envelope: Value =
            serde_json::from_str(done["content"][0]["text"].as_str().unwrap_or("{}"))?;
        if envelope["success"] != true {
            return Err(format!("the confirmed delete failed: {envelope}").into());
        }
    }
    Ok(quantiles(latencies))
}

/// Resident memory of a process, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
