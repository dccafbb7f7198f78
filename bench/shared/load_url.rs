//! `loadgen --url`: load on a server that is already running (one replica, or several behind
//! a load balancer), with protocol 2026-07-28 requests that need no session, so any replica
//! may answer each. Either one tool called by many clients, or MCP-AQL confirmed deletions
//! of the `todo` example timed one by one.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

/// A keep-alive HTTP/1.1 connection sending 2026-07-28 requests.
pub(crate) struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    id: u64,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

impl Connection {
    pub(crate) async fn open(url: &str) -> Result<Self, Error> {
        let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
        let host = rest.split('/').next().unwrap_or(rest).to_owned();
        let stream = tokio::net::TcpStream::connect(&host).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Self {
            sender,
            host,
            id: 0,
        })
    }

    /// Call `tool` with `arguments` at `url` (a path of this connection's host); the result.
    pub(crate) async fn call(
        &mut self,
        url: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Value, Error> {
        self.id += 1;
        let path = url
            .strip_prefix("http://")
            .and_then(|r| r.find('/').map(|i| &r[i..]))
            .unwrap_or("/mcp");
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "1"}}}});
        let request = hyper::Request::post(path)
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(Full::new(Bytes::from(body.to_string())))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        let json = text
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap_or(&text);
        let message: Value = serde_json::from_str(json.trim())
            .map_err(|e| format!("HTTP {status}: not JSON ({e}): {text}"))?;
        match message.get("result") {
            Some(result) if result["isError"] != true => Ok(result.clone()),
            _ => Err(format!("the call failed: {message}").into()),
        }
    }
}

/// Latencies' p50 and p99.
pub(crate) fn quantiles(mut latencies: Vec<Duration>) -> (Duration, Duration) {
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    (at(0.5), at(0.99))
}

/// `clients` connections each calling `tool` `calls` times: calls/s, p50, p99.
pub(crate) async fn calls(
    url: &str,
    tool: &str,
    arguments: &Value,
    clients: usize,
    calls: usize,
) -> Result<(f64, Duration, Duration), Error> {
    let mut connections = Vec::new();
    for _ in 0..clients {
        connections.push(Connection::open(url).await?);
    }
    let start = Instant::now();
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            let (url, tool, arguments) = (url.to_owned(), tool.to_owned(), arguments.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(calls);
                for _ in 0..calls {
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
    let rate = all.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99) = quantiles(all);
    Ok((rate, p50, p99))
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
