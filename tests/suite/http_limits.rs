//! What a hostile or broken HTTP client meets: malformed `Authorization` refused (never read
//! as anonymous), a declared oversized body refused before it is read, and slow heads and
//! bodies cut off by the read timeouts. Each refusal is checked on the wire.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::post;
use abilities::{Caller, Registry, Server, auth::StaticTokens, config::HttpConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

async fn listen(server: Server) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { server.serve_listener(listener).await });
    addr
}

fn builder(http: HttpConfig) -> abilities::ServerBuilder {
    builder!()
        .registry(Registry::from_abilities([]).expect("empty"))
        .http(http.stateless(true))
}

/// Everything the server sends on a raw connection after `head` (and `body`), until it closes
/// the connection or `within` passes.
async fn raw(addr: SocketAddr, head: &str, body: &[u8], within: Duration) -> (String, bool) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    stream.write_all(head.as_bytes()).await.expect("writes");
    stream.write_all(body).await.expect("writes");
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let closed = tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&received).into_owned(), closed)
}

#[tokio::test]
async fn malformed_authorization_is_refused_not_taken_for_anonymous() {
    let server = builder(HttpConfig::default())
        .authenticator(
            StaticTokens::new()
                .with_token("good", Caller::trusted("t"))
                .allow_anonymous(Caller::anonymous()),
        )
        .build()
        .expect("valid");
    let addr = listen(server).await;
    // Anonymous and a good token pass.
    assert_eq!(post(addr, "/mcp", &[], PING).await.status, 200);
    let good = post(addr, "/mcp", &[("authorization", "Bearer good")], PING).await;
    assert_eq!(good.status, 200, "{good:?}");
    let cases: [(&[(&str, &str)], &str); 5] = [
        (
            &[("authorization", "Basic dXNlcjpwYXNz")],
            "the scheme is not Bearer",
        ),
        (&[("authorization", "Bearer ")], "the bearer token is empty"),
        (&[("authorization", "Bearer")], "the bearer token is empty"),
        (
            &[("authorization", "Bearer a b")],
            "the bearer token contains spaces",
        ),
        (
            &[
                ("authorization", "Bearer good"),
                ("authorization", "Bearer good"),
            ],
            "several Authorization headers",
        ),
    ];
    for (headers, why) in cases {
        let refused = post(addr, "/mcp", headers, PING).await;
        assert_eq!(refused.status, 401, "{headers:?}: {refused:?}");
        assert_eq!(
            refused.header("www-authenticate").as_deref(),
            Some(r#"Bearer error="invalid_request""#),
            "{headers:?}"
        );
        assert_eq!(
            refused.message(),
            json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": -32001,
                "message": format!("Unauthorized: malformed Authorization header: {why}")
            }}),
            "{headers:?}"
        );
    }
    let unknown = post(addr, "/mcp", &[("authorization", "Bearer wrong")], PING).await;
    assert_eq!(unknown.status, 401);
    assert_eq!(
        unknown.header("www-authenticate").as_deref(),
        Some(r#"Bearer error="invalid_token""#)
    );
}

#[tokio::test]
async fn a_declared_oversized_body_is_refused_before_it_is_sent() {
    let server = builder(HttpConfig::default().max_body_bytes(1024))
        .build()
        .expect("valid");
    let addr = listen(server).await;
    // One terabyte declared, not a byte sent: the answer comes at once.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 1099511627776\r\n\r\n"
    );
    let (received, _) = raw(addr, &head, b"", Duration::from_secs(5)).await;
    assert!(received.starts_with("HTTP/1.1 413"), "{received}");
    let body = received.split("\r\n\r\n").nth(1).unwrap_or_default();
    let message: Value = serde_json::from_str(body).expect("a JSON-RPC error");
    assert_eq!(message["error"]["code"], json!(-32600), "{message}");
    assert_eq!(
        message["error"]["message"],
        json!("Invalid Request: the body exceeds 1024 bytes")
    );
}

#[tokio::test]
async fn a_body_slower_than_the_read_timeout_is_answered_408() {
    let server = builder(HttpConfig::default().body_read_timeout(Duration::from_millis(300)))
        .build()
        .expect("valid");
    let addr = listen(server).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n"
    );
    // Ten of the hundred bytes, then nothing.
    let (received, _) = raw(addr, &head, br#"{"jsonrpc""#, Duration::from_secs(10)).await;
    assert!(received.starts_with("HTTP/1.1 408"), "{received}");
    let body = received.split("\r\n\r\n").nth(1).unwrap_or_default();
    let message: Value = serde_json::from_str(body).expect("a JSON-RPC error");
    assert_eq!(message["error"]["code"], json!(-32600), "{message}");
    assert_eq!(
        message["error"]["message"],
        json!("Invalid Request: the body did not arrive within 0.3 s")
    );
}

#[tokio::test]
async fn a_head_slower_than_the_read_timeout_loses_its_connection() {
    let server = builder(HttpConfig::default().header_read_timeout(Duration::from_millis(300)))
        .build()
        .expect("valid");
    let addr = listen(server).await;
    // Half a head, then nothing: the server closes the connection.
    let (_, closed) = raw(
        addr,
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n",
        b"",
        Duration::from_secs(10),
    )
    .await;
    assert!(closed, "the connection is still open after 10 s");
    // A prompt client is served as ever.
    assert_eq!(post(addr, "/mcp", &[], PING).await.status, 200);
}

/// A client that writes its whole body before it reads (no `Expect: 100-continue`, as
/// Python's `http.client`, Node's `fetch` and reqwest do) reads the 413 and its JSON-RPC
/// error, with a declared length and chunked alike, and the server keeps serving.
#[tokio::test]
async fn an_oversized_body_sent_whole_still_gets_its_413() {
    let server = builder(HttpConfig::default()).build().expect("valid");
    let addr = listen(server).await;
    let limit = 4 << 20;
    let body = vec![b' '; limit + 10];
    let declared = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut chunked = Vec::new();
    for piece in body.chunks(64 << 10) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let streamed = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    );
    for (head, body) in [(declared, &body), (streamed, &chunked)] {
        let (received, _) = raw(addr, &head, body, Duration::from_secs(10)).await;
        assert!(received.starts_with("HTTP/1.1 413"), "{received:.200}");
        let answer = received.split("\r\n\r\n").nth(1).unwrap_or_default();
        let message: Value = serde_json::from_str(answer).expect("a JSON-RPC error");
        assert_eq!(
            message["error"]["message"],
            json!(format!("Invalid Request: the body exceeds {limit} bytes")),
            "{message}"
        );
    }
    assert_eq!(post(addr, "/mcp", &[], PING).await.status, 200);
}
