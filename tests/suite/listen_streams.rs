//! `subscriptions/listen` streams within bounds: a server holds at most so many at once, one
//! authenticated caller at most so many of those, and a stream that ends gives its place
//! back. Anonymous callers count against the server's cap only.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;

use crate::support::{Streaming, post_streaming, serve_http};
use abilities::{Caller, ability, auth::StaticTokens};
use serde_json::{Value, json};

/// A resource to follow.
#[ability(
    semantic = "READ",
    resource = "notes://all",
    mime_type = "application/json"
)]
fn all_notes() -> Vec<String> {
    Vec::new()
}

async fn listen(addr: SocketAddr, token: Option<&str>, id: u64) -> Streaming {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": ["notes://all"]},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    }});
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "subscriptions/listen"),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer.as_str()));
    }
    post_streaming(addr, "/mcp", &headers, message.to_string()).await
}

/// Whether the stream was accepted (acknowledged), or the refusal it ended with.
async fn accepted(stream: &mut Streaming) -> Result<(), Value> {
    let first = stream.next_message().await.expect("a first message");
    if first["method"] == "notifications/subscriptions/acknowledged" {
        return Ok(());
    }
    // A refusal may follow the acknowledgement of the filter: read on to the answer.
    Err(first)
}

#[tokio::test]
async fn listen_streams_are_capped_per_caller_and_per_server() {
    let server = builder!()
        .authenticator(
            StaticTokens::new()
                .with_token("ada-secret", Caller::trusted("ada"))
                .with_token("bob-secret", Caller::trusted("bob"))
                .allow_anonymous(Caller::anonymous()),
        )
        .max_listen_streams(4, 2)
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let mut ada_1 = listen(addr, Some("ada-secret"), 1).await;
    let mut ada_2 = listen(addr, Some("ada-secret"), 2).await;
    assert_eq!(accepted(&mut ada_1).await, Ok(()));
    assert_eq!(accepted(&mut ada_2).await, Ok(()));
    // Ada's third is past her share.
    let mut ada_3 = listen(addr, Some("ada-secret"), 3).await;
    let refused = refusal(&mut ada_3).await;
    assert_eq!(
        refused["error"]["data"],
        json!({"code": "LIMIT_EXCEEDED", "limit": 2}),
        "{refused}"
    );
    assert_eq!(refused["id"], 3);
    // Bob and an anonymous caller fill the server.
    let mut bob = listen(addr, Some("bob-secret"), 4).await;
    assert_eq!(accepted(&mut bob).await, Ok(()));
    let mut anonymous = listen(addr, None, 5).await;
    assert_eq!(accepted(&mut anonymous).await, Ok(()));
    let mut more = listen(addr, None, 6).await;
    let refused = refusal(&mut more).await;
    assert_eq!(
        refused["error"]["data"],
        json!({"code": "LIMIT_EXCEEDED", "limit": 4}),
        "{refused}"
    );
    // A stream that ends gives its place back.
    drop(ada_1);
    let mut again = None;
    for id in 7..50 {
        let mut stream = listen(addr, Some("ada-secret"), id).await;
        if accepted(&mut stream).await.is_ok() {
            again = Some(stream);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(again.is_some(), "the place was never given back");
    drop((ada_2, bob, anonymous));
}

/// The JSON-RPC error a refused listen request ends with (after its acknowledgement, if
/// any).
async fn refusal(stream: &mut Streaming) -> Value {
    loop {
        let message = stream.next_message().await.expect("an answer");
        if message.get("error").is_some() {
            return message;
        }
    }
}

#[tokio::test]
async fn a_draining_server_ends_its_listen_streams_with_a_hint_and_opens_no_more() {
    let server = builder!().build().expect("valid");
    let addr = serve_http(&server).await;
    let mut open = listen(addr, None, 1).await;
    assert_eq!(accepted(&mut open).await, Ok(()));
    server.drain();
    let ended = refusal(&mut open).await;
    assert_eq!(ended["id"], 1, "{ended}");
    assert_eq!(
        ended["error"]["data"],
        json!({"reason": "draining", "retryAfterMs": 1000}),
        "{ended}"
    );
    // No new one is opened: the client listens again elsewhere.
    let mut late = listen(addr, None, 2).await;
    let refused = refusal(&mut late).await;
    assert_eq!(refused["error"]["data"]["reason"], "draining", "{refused}");
}
