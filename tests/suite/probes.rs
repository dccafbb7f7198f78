//! What a platform sees of a replica: a liveness and a readiness probe outside
//! authentication, readiness failing while the store is down or the server drains, a
//! draining server refusing new sessions while it serves the open ones, and a stopped server
//! finishing its calls in flight and taking no new connection.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{HttpResponse, Replica, http_session, post, request};
use abilities::auth::StaticTokens;
use abilities::config::HttpConfig;
use abilities::{Caller, Server, ability};
use serde_json::{Value, json};

/// Say a word back.
#[ability(semantic = "READ")]
fn echo(word: String) -> String {
    word
}

/// Wait `ms` milliseconds, then answer them.
#[ability(semantic = "READ")]
async fn nap(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

/// `server`'s app on a free port, served until `stop` fires; the address and the serving
/// task.
async fn serve(
    server: &Server,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> (
    SocketAddr,
    tokio::task::JoinHandle<Result<(), abilities::ServerError>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = server.clone();
    let serving = tokio::spawn(async move {
        server
            .serve_listener_until(listener, async {
                let _ = stop.await;
            })
            .await
    });
    (addr, serving)
}

async fn get(addr: SocketAddr, path: &str) -> HttpResponse {
    request(addr, "GET", path, &[], "").await
}

fn body(response: &HttpResponse) -> Value {
    serde_json::from_str(&response.body).unwrap_or_else(|_| panic!("JSON: {response:?}"))
}

/// A `tools/call` of protocol 2026-07-28, standing alone.
fn call(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"}
        }
    }})
    .to_string()
}

fn headers(name: &str) -> [(&str, &str); 3] {
    [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ]
}

#[tokio::test]
async fn probes_answer_outside_authentication_and_say_why_not_ready() {
    let down = Arc::new(AtomicBool::new(false));
    let store = Arc::new(abilities::store::SqliteStore::memory().unwrap());
    let server = builder!()
        .store(Replica::switched(store, Arc::clone(&down)))
        .authenticator(StaticTokens::new().with_token("good", Caller::trusted("ops")))
        .build()
        .unwrap();
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let (addr, _serving) = serve(&server, stop).await;

    // The endpoint wants a token; the probes do not.
    let refused = post(addr, "/mcp", &headers("echo"), call(1, "echo", json!({}))).await;
    assert_eq!(refused.status, 401, "{refused:?}");
    let live = get(addr, "/healthz").await;
    assert_eq!(live.status, 200, "{live:?}");
    assert_eq!(body(&live), json!({"status": "alive"}));
    assert_eq!(live.header("cache-control").as_deref(), Some("no-store"));
    let ready = get(addr, "/readyz").await;
    assert_eq!(ready.status, 200, "{ready:?}");
    assert_eq!(body(&ready), json!({"status": "ready"}));

    // The store down: alive, not ready, and why.
    down.store(true, Ordering::SeqCst);
    let ready = get(addr, "/readyz").await;
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(body(&ready)["status"], "not ready");
    assert!(
        body(&ready)["reason"]
            .as_str()
            .unwrap()
            .contains("the database is not answering"),
        "{ready:?}"
    );
    assert_eq!(get(addr, "/healthz").await.status, 200);
    down.store(false, Ordering::SeqCst);
    assert_eq!(get(addr, "/readyz").await.status, 200);

    // Draining: alive, not ready.
    server.drain();
    assert!(server.is_draining());
    let ready = get(addr, "/readyz").await;
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(
        body(&ready),
        json!({"status": "not ready", "reason": "draining"})
    );
    assert_eq!(get(addr, "/healthz").await.status, 200);
    assert_eq!(
        server.ready().await,
        Err(abilities::http::NotReady::Draining)
    );
}

#[tokio::test]
async fn probe_paths_are_configurable_or_absent() {
    let custom = builder!()
        .http(HttpConfig::default().probes("live", "/ready"))
        .build()
        .unwrap();
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let (addr, _serving) = serve(&custom, stop).await;
    assert_eq!(get(addr, "/live").await.status, 200);
    assert_eq!(get(addr, "/ready").await.status, 200);
    assert_eq!(get(addr, "/healthz").await.status, 404);

    let none = builder!()
        .http(HttpConfig::default().without_probes())
        .build()
        .unwrap();
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let (addr, _serving) = serve(&none, stop).await;
    assert_eq!(get(addr, "/healthz").await.status, 404);
    assert_eq!(get(addr, "/readyz").await.status, 404);

    // A probe path the endpoint takes stays the endpoint's.
    let taken = builder!()
        .http(HttpConfig::default().probes("/mcp", "/readyz"))
        .build()
        .unwrap();
    let router = taken.router("/mcp");
    drop(router);
}

#[tokio::test]
async fn a_draining_server_refuses_new_sessions_and_serves_the_open_ones() {
    let server = builder!().build().unwrap();
    let (_stop, stop) = tokio::sync::oneshot::channel();
    let (addr, _serving) = serve(&server, stop).await;
    let session = http_session(addr).await;
    server.drain();

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "late", "version": "1"}
    }});
    let refused = post(addr, "/mcp", &[], init.to_string()).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    let message = refused.message();
    assert_eq!(message["id"], 1);
    assert_eq!(message["error"]["code"], -32000);
    assert!(
        message["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another replica"),
        "{message}"
    );

    // The open session is served on.
    let open = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let echoed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"word": "still here"}}});
    let answer = post(addr, "/mcp", &open, echoed.to_string()).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.message()["result"]["structuredContent"]["result"],
        "still here"
    );
}

#[tokio::test]
async fn a_stopped_server_finishes_its_calls_in_flight_and_takes_no_new_connection() {
    let server = builder!()
        .http(HttpConfig::default().drain_grace(Duration::from_secs(5)))
        .build()
        .unwrap();
    let (stop_now, stop) = tokio::sync::oneshot::channel();
    let (addr, serving) = serve(&server, stop).await;
    let in_flight = tokio::spawn(async move {
        post(
            addr,
            "/mcp",
            &headers("nap"),
            call(1, "nap", json!({"ms": 600})),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    stop_now.send(()).unwrap();
    let answer = in_flight.await.unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.message()["result"]["structuredContent"]["result"],
        600
    );
    let served = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server stops within its grace period");
    assert!(matches!(served, Ok(Ok(()))), "{served:?}");
    assert!(server.is_draining());
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no new connection is taken"
    );
}

#[tokio::test]
async fn past_its_grace_period_a_stopped_server_stops_anyway() {
    let server = builder!()
        .http(HttpConfig::default().drain_grace(Duration::from_millis(300)))
        .build()
        .unwrap();
    let (stop_now, stop) = tokio::sync::oneshot::channel();
    let (addr, serving) = serve(&server, stop).await;
    let _long = tokio::spawn(async move {
        post(
            addr,
            "/mcp",
            &headers("nap"),
            call(1, "nap", json!({"ms": 30_000})),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    stop_now.send(()).unwrap();
    let served = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("stopped past the grace period, not when the call ends");
    assert!(matches!(served, Ok(Ok(()))), "{served:?}");
}

/// Send a `GET` of `path` on an open connection and read the whole answer (its head says
/// how long the body is): the answer's text, and whether the server closed the connection
/// after it.
async fn on_connection(connection: &mut tokio::net::TcpStream, path: &str) -> (String, bool) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let request = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    connection.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length = text[..head_end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if answer.len() >= head_end + 4 + length {
                break;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(5), connection.read(&mut chunk))
            .await
            .expect("an answer within 5 s")
            .unwrap();
        assert!(n > 0, "the connection closed before the answer: {answer:?}");
        answer.extend_from_slice(&chunk[..n]);
    }
    let closed = matches!(
        tokio::time::timeout(Duration::from_millis(500), connection.read(&mut chunk)).await,
        Ok(Ok(0))
    );
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

#[tokio::test]
async fn a_stopped_server_answers_a_request_on_a_kept_alive_connection_then_closes_it() {
    let server = builder!().build().unwrap();
    let (stop_now, stop) = tokio::sync::oneshot::channel();
    let (addr, serving) = serve(&server, stop).await;
    let mut connection = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (first, closed) = on_connection(&mut connection, "/healthz").await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(!closed, "kept alive while serving");
    // Stopped: a request a balancer sends on the connection it kept is still answered, and
    // the connection closes after it (so the balancer sends the next one elsewhere).
    stop_now.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (second, closed) = on_connection(&mut connection, "/healthz").await;
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    assert!(
        second.to_ascii_lowercase().contains("connection: close"),
        "{second}"
    );
    assert!(closed, "closed after the answer");
    let served = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the server stops");
    assert!(matches!(served, Ok(Ok(()))), "{served:?}");
}
