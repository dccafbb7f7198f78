//! A plain protocol 2026-07-28 request over HTTP is answered in place, as one JSON message;
//! one that asks for progress or logs streams them first, and every wire rule holds the same
//! way whichever path answers.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{post, serve_http};
use abilities::{Context, ability, client::LogLevel};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Add two numbers.
#[ability(semantic = "READ")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Report progress and log a line, then answer.
#[ability(semantic = "EXECUTE")]
async fn chatty(ctx: &Context) -> &'static str {
    ctx.progress(1.0, Some(2.0), Some("halfway")).await;
    ctx.log(LogLevel::Info, "a line").await;
    "said"
}

/// Panic.
#[ability(semantic = "READ")]
fn explode() -> i64 {
    panic!("the handler broke")
}

static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Wait until cancelled, noting the cancellation.
#[ability(semantic = "READ")]
async fn wait_long(ctx: &Context) -> &'static str {
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        token.cancelled().await;
        CANCELLED.store(true, Ordering::SeqCst);
    });
    tokio::time::sleep(Duration::from_secs(60)).await;
    "woke"
}

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}"#;

fn meta() -> Value {
    serde_json::from_str(META).expect("JSON")
}

fn call(name: &str, arguments: Value, meta: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": meta}})
    .to_string()
}

fn headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    headers.extend(name.map(|name| ("mcp-name", name)));
    headers
}

#[tokio::test]
async fn a_plain_call_or_list_is_one_json_message() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let response = post(
        addr,
        "/mcp",
        &headers("tools/call", Some("add")),
        call("add", json!({"a": 2, "b": 3}), meta()),
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("application/json")
    );
    let message: Value = serde_json::from_str(&response.body).expect("the body is JSON");
    assert_eq!(message["id"], 1);
    assert_eq!(message["result"]["structuredContent"], json!({"result": 5}));
    assert_eq!(message["result"]["resultType"], "complete");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {
        "_meta": meta()}});
    let response = post(addr, "/mcp", &headers("tools/list", None), list.to_string()).await;
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("application/json")
    );
    let message: Value = serde_json::from_str(&response.body).expect("the body is JSON");
    let names: Vec<&str> = message["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"add") && names.contains(&"chatty"),
        "{message}"
    );
}

#[tokio::test]
async fn a_call_that_asks_for_progress_or_logs_streams_them_first() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    // Neither asked for: one JSON message, nothing else.
    let response = post(
        addr,
        "/mcp",
        &headers("tools/call", Some("chatty")),
        call("chatty", json!({}), meta()),
    )
    .await;
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(
        response.message()["result"]["structuredContent"]["result"],
        "said"
    );

    let mut asked = meta();
    asked["progressToken"] = json!("p-1");
    asked["io.modelcontextprotocol/logLevel"] = json!("info");
    let response = post(
        addr,
        "/mcp",
        &headers("tools/call", Some("chatty")),
        call("chatty", json!({}), asked),
    )
    .await;
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("text/event-stream")
    );
    let messages = response.messages();
    let methods: Vec<&str> = messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(answer)"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/message",
            "(answer)"
        ],
        "{messages:?}"
    );
    assert_eq!(messages[0]["params"]["progressToken"], "p-1");
    assert_eq!(messages[2]["result"]["structuredContent"]["result"], "said");
}

/// Headers, body, the status and the JSON-RPC error code expected.
type Case<'a> = (Vec<(&'a str, &'a str)>, String, u16, Option<i64>);

#[tokio::test]
async fn wire_rules_hold_in_place() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let body = call("add", json!({"a": 1, "b": 1}), meta());
    let mut no_capabilities = meta();
    no_capabilities
        .as_object_mut()
        .expect("an object")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let cases: Vec<Case<'_>> = vec![
        // No Mcp-Method, another method, another tool, no Mcp-Name: -32020.
        (
            vec![("mcp-protocol-version", "2026-07-28"), ("mcp-name", "add")],
            body.clone(),
            400,
            Some(-32020),
        ),
        (
            headers("tools/list", Some("add")),
            body.clone(),
            400,
            Some(-32020),
        ),
        (
            headers("tools/call", Some("chatty")),
            body.clone(),
            400,
            Some(-32020),
        ),
        (headers("tools/call", None), body.clone(), 400, Some(-32020)),
        // The header's version is not the one in `_meta`.
        (
            vec![
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "add"),
            ],
            body.clone(),
            400,
            Some(-32020),
        ),
        // `_meta` lacks the client's capabilities.
        (
            headers("tools/call", Some("add")),
            call("add", json!({"a": 1, "b": 1}), no_capabilities),
            400,
            Some(-32602),
        ),
        // A foreign origin and a foreign host are refused; so is a client that takes no
        // event stream.
        (
            [
                headers("tools/call", Some("add")),
                vec![("origin", "http://evil.example")],
            ]
            .concat(),
            body.clone(),
            403,
            None,
        ),
        (
            [
                headers("tools/call", Some("add")),
                vec![("host", "evil.example")],
            ]
            .concat(),
            body.clone(),
            403,
            None,
        ),
    ];
    for (headers, body, status, code) in cases {
        let response = post(addr, "/mcp", &headers, body).await;
        assert_eq!(response.status, status, "{headers:?}: {response:?}");
        if let Some(code) = code {
            assert_eq!(
                response.message()["error"]["code"],
                code,
                "{headers:?}: {response:?}"
            );
        }
    }
    // A client that takes no event stream is refused.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\
         content-type: application/json\r\naccept: application/json\r\n\
         mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: add\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the server listens");
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .await
        .expect("sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 406"), "{answer}");
    // And the server still answers.
    let response = post(addr, "/mcp", &headers("tools/call", Some("add")), body).await;
    assert_eq!(
        response.message()["result"]["structuredContent"]["result"],
        2
    );
}

#[tokio::test]
async fn a_panicking_handler_is_one_error_answer_and_the_server_serves_on() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    for _ in 0..2 {
        let response = post(
            addr,
            "/mcp",
            &headers("tools/call", Some("explode")),
            call("explode", json!({}), meta()),
        )
        .await;
        assert_eq!(response.status, 200, "{response:?}");
        let message = response.message();
        assert_eq!(message["result"]["isError"], true, "{message}");
    }
    let response = post(
        addr,
        "/mcp",
        &headers("tools/call", Some("add")),
        call("add", json!({"a": 20, "b": 22}), meta()),
    )
    .await;
    assert_eq!(
        response.message()["result"]["structuredContent"]["result"],
        42
    );
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_call() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let body = call("wait_long", json!({}), meta());
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the server listens");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: wait_long\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .await
        .expect("sent");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!CANCELLED.load(Ordering::SeqCst), "not yet cancelled");
    drop(stream);
    for _ in 0..100 {
        if CANCELLED.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the call was not cancelled within 5 s of its client going away");
}
