//! End to end: `my-plugin-count-posts` (an SQLite count) served by abilities (the `site`
//! example's abilities), against the same work in a hand-written rmcp `#[tool]` server (the
//! `rmcp_site` example's), driven by N concurrent callers over the line
//! transport (what stdio carries, on an in-memory pipe) and over streamable HTTP on 127.0.0.1.
//! abilities validates every call against the schema; rmcp only deserializes.
//!
//! Run: `cargo bench -p abilities-bench --bench e2e` (`E2E_CALLERS`, `E2E_CALLS` and `E2E_ROUNDS` override the
//! defaults of 16 callers, 20,000 calls and 3 rounds). Prints calls/s, p50 and p99 for both
//! servers and the throughput ratio; the rounds alternate servers and the median round counts.

#[path = "../shared/rmcp_site.rs"]
mod rmcp_site;
use abilities_examples::site;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abilities::Server;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp_site::RmcpSite;
use serde_json::{Value, json};
use site::Db as Posts;

#[derive(Clone, Copy, PartialEq)]
enum Which {
    Abilities,
    Rmcp,
}

impl Which {
    fn label(self) -> &'static str {
        match self {
            Self::Abilities => "abilities",
            Self::Rmcp => "rmcp #[tool]",
        }
    }
}

struct Run {
    calls_per_sec: f64,
    p50: Duration,
    p99: Duration,
}

/// Wait for the callers and summarize their latencies over the time since `start`.
async fn gather(tasks: Vec<tokio::task::JoinHandle<Vec<Duration>>>, start: Instant) -> Run {
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap_or_default());
    }
    summarize(latencies, start.elapsed())
}

fn summarize(mut latencies: Vec<Duration>, elapsed: Duration) -> Run {
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Run {
        calls_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

fn abilities_server(posts: Arc<Posts>) -> Server {
    let registry = match site::registry() {
        Ok(registry) => registry,
        Err(e) => panic!("registry: {e}"),
    };
    match Server::builder()
        .registry(registry)
        .shared_state(posts)
        .build()
    {
        Ok(server) => server,
        Err(e) => panic!("server: {e}"),
    }
}

/// N callers sharing one line-transport session.
async fn lines_run(which: Which, posts: Arc<Posts>, callers: usize, calls: usize) -> Run {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    match which {
        Which::Abilities => {
            let server = abilities_server(posts);
            let (read, write) = tokio::io::split(server_io);
            tokio::spawn(async move { server.serve_stream(read, write).await });
        }
        Which::Rmcp => {
            let site = RmcpSite::new(posts);
            tokio::spawn(async move {
                if let Ok(running) = site.serve(server_io).await {
                    let _ = running.waiting().await;
                }
            });
        }
    }
    let client = match ().serve(client_io).await {
        Ok(client) => Arc::new(client),
        Err(e) => panic!("client: {e}"),
    };
    let args = json!({"input": "post"});
    let Value::Object(args) = args else {
        unreachable!("an object literal")
    };
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let (client, args) = (Arc::clone(&client), args.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(calls / callers);
                for _ in 0..calls / callers {
                    let params = CallToolRequestParams::new("my-plugin-count-posts")
                        .with_arguments(args.clone());
                    let t = Instant::now();
                    let result = client.call_tool(params).await;
                    latencies.push(t.elapsed());
                    match result {
                        Ok(r) if r.structured_content == Some(json!({"result": 2})) => {}
                        other => panic!("unexpected answer: {other:?}"),
                    }
                }
                latencies
            })
        })
        .collect();
    gather(tasks, start).await
}

async fn serve_http(which: Which, posts: Arc<Posts>) -> SocketAddr {
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => panic!("bind: {e}"),
    };
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("address: {e}"));
    let router = match which {
        Which::Abilities => abilities_server(posts).router("/mcp"),
        Which::Rmcp => {
            let service = StreamableHttpService::new(
                move || Ok(RmcpSite::new(Arc::clone(&posts))),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            abilities::http::axum::Router::new().nest_service("/mcp", service)
        }
    };
    tokio::spawn(abilities::http::serve_router(listener, router));
    addr
}

/// One keep-alive HTTP/1.1 connection.
struct Connection1(hyper::client::conn::http1::SendRequest<Full<Bytes>>);

impl Connection1 {
    async fn open(addr: SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        stream
            .set_nodelay(true)
            .unwrap_or_else(|e| panic!("nodelay: {e}"));
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap_or_else(|e| panic!("handshake: {e}"));
        tokio::spawn(connection);
        Self(sender)
    }

    async fn post(
        &mut self,
        addr: SocketAddr,
        session: Option<&str>,
        body: &Value,
    ) -> (Option<String>, String) {
        let mut request = hyper::Request::post("/mcp")
            .header("host", addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.0
            .ready()
            .await
            .unwrap_or_else(|e| panic!("connection to {addr}: {e}"));
        let response = self
            .0
            .send_request(request)
            .await
            .unwrap_or_else(|e| panic!("send to {addr}: {e:?}"));
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap_or_else(|e| panic!("body: {e}"))
            .to_bytes();
        (session, String::from_utf8_lossy(&body).into_owned())
    }
}

/// N callers, each on its own connection, sharing one HTTP session.
async fn http_run(which: Which, posts: Arc<Posts>, callers: usize, calls: usize) -> Run {
    let addr = serve_http(which, posts).await;
    let mut setup = Connection1::open(addr).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}
    }});
    let (session, _) = setup.post(addr, None, &init).await;
    let session = session.unwrap_or_else(|| panic!("no session id"));
    setup
        .post(
            addr,
            Some(&session),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let session = session.clone();
            tokio::spawn(async move {
                let mut connection = Connection1::open(addr).await;
                let mut latencies = Vec::with_capacity(calls / callers);
                for i in 0..calls / callers {
                    let call = json!({"jsonrpc": "2.0", "id": c * calls + i + 1, "method": "tools/call",
                        "params": {"name": "my-plugin-count-posts", "arguments": {"input": "post"}}});
                    let t = Instant::now();
                    let (_, body) = connection.post(addr, Some(&session), &call).await;
                    latencies.push(t.elapsed());
                    assert!(body.contains(r#""structuredContent":{"result":2}"#), "unexpected answer: {body}");
                }
                latencies
            })
        })
        .collect();
    gather(tasks, start).await
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` run passes nothing and
    // only checks that the bench starts.
    let benching = std::env::args().any(|a| a == "--bench");
    let callers = env_usize("E2E_CALLERS", 16);
    let calls = if benching {
        env_usize("E2E_CALLS", 20_000)
    } else {
        320
    };
    let rounds = if benching {
        env_usize("E2E_ROUNDS", 3)
    } else {
        1
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    // The `site` example's database, in memory: both servers count the same rows.
    let posts = match Posts::open(std::path::Path::new(":memory:")) {
        Ok(posts) => Arc::new(posts),
        Err(e) => panic!("in-memory SQLite: {e}"),
    };
    println!(
        "my-plugin-count-posts, {callers} concurrent callers, {calls} calls per run, median of {rounds} rounds"
    );
    let only = std::env::var("E2E_TRANSPORT").unwrap_or_default();
    for transport in [
        "lines (stdio framing, in-memory pipe)",
        "streamable HTTP, 127.0.0.1",
    ] {
        if !transport.starts_with(only.as_str()) {
            continue;
        }
        let mut results: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [Which::Abilities, Which::Rmcp]
            } else {
                [Which::Rmcp, Which::Abilities]
            };
            for which in order {
                let posts = Arc::clone(&posts);
                let run = runtime.block_on(async {
                    if transport.starts_with("lines") {
                        lines_run(which, posts, callers, calls).await
                    } else {
                        http_run(which, posts, callers, calls).await
                    }
                });
                results[usize::from(which == Which::Rmcp)].push(run);
            }
        }
        println!("\n{transport}");
        let mut medians = Vec::new();
        for (which, mut runs) in [Which::Abilities, Which::Rmcp].into_iter().zip(results) {
            runs.sort_by(|a, b| a.calls_per_sec.total_cmp(&b.calls_per_sec));
            let median = runs.swap_remove(runs.len() / 2);
            println!(
                "  {:<14} {:>9.0} calls/s   p50 {:>8.1} us   p99 {:>8.1} us",
                which.label(),
                median.calls_per_sec,
                median.p50.as_secs_f64() * 1e6,
                median.p99.as_secs_f64() * 1e6
            );
            medians.push(median.calls_per_sec);
        }
        println!(
            "  throughput ratio abilities / rmcp: {:.2}x",
            medians[0] / medians[1]
        );
    }
}
