//! JSON-RPC correctness against an adversarial client, over the line transport (as stdio)
//! and streamable HTTP: malformed params of known methods, invalid ids, stray responses, and
//! bad lines interleaved with good ones in one write.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::collections::HashSet;

use crate::support::{Lines, http_session, post, serve_http};
use abilities::{Server, ability};
use serde_json::{Value, json};

/// Add two numbers.
#[ability(semantic = "READ")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn server() -> Server {
    builder!().build().expect("the server builds")
}

/// A request line with raw `params` (any JSON, including none).
fn raw(id: u64, method: &str, params: Option<Value>) -> String {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    message.to_string()
}

/// Every malformed `tools/call` and `tools/list` the issue names, with the reason the answer
/// must give.
fn malformed() -> Vec<(&'static str, Option<Value>, &'static str)> {
    vec![
        (
            "tools/call",
            Some(json!({"arguments": {}})),
            "missing field `name`",
        ),
        (
            "tools/call",
            Some(json!({"name": 5})),
            "invalid type: integer `5`",
        ),
        (
            "tools/call",
            Some(json!({"name": "add", "arguments": "a=1"})),
            "invalid type: string \"a=1\"",
        ),
        (
            "tools/call",
            Some(json!({"name": "add", "arguments": 7})),
            "invalid type: integer `7`",
        ),
        (
            "tools/call",
            Some(json!({"name": "add", "arguments": [1, 2]})),
            "invalid type: sequence",
        ),
        (
            "tools/call",
            Some(json!({"name": "add", "arguments": true})),
            "invalid type: boolean `true`",
        ),
        ("tools/call", Some(Value::Null), "invalid type: null"),
        ("tools/call", None, "invalid type: null"),
        (
            "tools/list",
            Some(json!({"cursor": 5})),
            "the cursor must be a string, got integer",
        ),
        (
            "prompts/list",
            Some(json!({"cursor": ["a"]})),
            "the cursor must be a string, got array",
        ),
    ]
}

#[tokio::test]
async fn known_methods_with_malformed_params_are_invalid_params_with_the_reason() {
    let mut lines = Lines::initialized(&server()).await;
    for (i, (method, params, reason)) in malformed().into_iter().enumerate() {
        let id = 10 + i as u64;
        lines.send(&raw(id, method, params.clone())).await;
        let answer = lines.response(&json!(id)).await;
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params:?}: {answer}"
        );
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(
            message.starts_with(&format!("Invalid params for {method}: "))
                && message.contains(reason),
            "{method} {params:?}: {message}"
        );
    }
    // An unknown method stays method-not-found, and the server keeps serving.
    lines.send(&raw(30, "tools/nothing", Some(json!({})))).await;
    assert_eq!(lines.response(&json!(30)).await["error"]["code"], -32601);
    let sum = lines.call(31, "add", json!({"a": 2, "b": 40})).await;
    assert_eq!(sum["structuredContent"], json!({"result": 42}));
}

#[tokio::test]
async fn malformed_params_over_http_are_invalid_params_too() {
    let addr = serve_http(&server()).await;
    let session = http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    for (i, (method, params, reason)) in malformed().into_iter().enumerate() {
        let id = 10 + i as u64;
        let answer = post(addr, "/mcp", &headers, raw(id, method, params.clone())).await;
        let message = answer.message();
        assert_eq!(message["id"], id, "{answer:?}");
        assert_eq!(
            message["error"]["code"], -32602,
            "{method} {params:?}: {message}"
        );
        assert!(
            message["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(reason)),
            "{message}"
        );
    }
}

#[tokio::test]
async fn an_invalid_id_is_answered_with_a_null_id() {
    let mut lines = Lines::initialized(&server()).await;
    for id in [json!({"n": 1}), json!([1]), json!(true), json!(false)] {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
        lines.send(&line).await;
        let answer = lines.next().await;
        assert_eq!(answer["id"], Value::Null, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], -32600, "{line}: {answer}");
    }
    let addr = serve_http(&server()).await;
    let session = http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let line = json!({"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}).to_string();
    let answer = post(addr, "/mcp", &headers, line).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(answer.message()["id"], Value::Null, "{answer:?}");
}

#[tokio::test]
async fn a_response_to_no_request_is_dropped_not_answered() {
    let mut lines = Lines::initialized(&server()).await;
    for stray in [
        json!({"jsonrpc": "2.0", "id": 999, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 998, "result": {"anything": [1, 2]}}),
        json!({"jsonrpc": "2.0", "id": 997, "error": {"code": -1, "message": "no"}}),
        json!({"jsonrpc": "2.0", "id": {"bad": 1}, "result": {}}),
    ] {
        lines.send(&stray.to_string()).await;
    }
    lines.send(&raw(5, "ping", None)).await;
    // The very next line is the ping's answer: nothing was sent back for the responses.
    let next = lines.next().await;
    assert_eq!(next, json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
}

#[tokio::test]
async fn every_bad_line_interleaved_with_pings_in_one_write_is_answered() {
    let mut lines = Lines::initialized(&server()).await;
    let mut batch = String::new();
    for i in 0..200 {
        batch.push_str("not json\n");
        batch.push_str(&raw(1000 + i, "ping", None));
        batch.push('\n');
    }
    lines.send(batch.trim_end()).await;
    let mut parse_errors = 0;
    let mut pongs = HashSet::new();
    for _ in 0..400 {
        let answer = lines.next().await;
        if answer["error"]["code"] == -32700 {
            assert_eq!(answer["id"], Value::Null);
            parse_errors += 1;
        } else {
            assert_eq!(answer["result"], json!({}), "{answer}");
            pongs.insert(answer["id"].as_u64().expect("a numeric id"));
        }
    }
    assert_eq!((parse_errors, pongs.len()), (200, 200));
}

#[tokio::test]
async fn the_answer_to_a_bad_last_line_is_written_before_the_output_closes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server();
    let (mut client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let serving = tokio::spawn(async move { server.serve_stream(read, write).await });
    client.write_all(b"garbage\n").await.expect("written");
    client.shutdown().await.expect("closed");
    let mut output = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.read_to_string(&mut output),
    )
    .await
    .expect("the server closes its output")
    .expect("readable");
    let answer: Value = serde_json::from_str(output.trim()).expect("one JSON answer");
    assert_eq!(answer["error"]["code"], -32700, "{output}");
    assert!(serving.await.is_ok());
}

/// Found by the property tests: a notification (or a response) before the session's first
/// request ended the stdio session, as rmcp takes nothing else first, so one stray line
/// closed the server. Such messages are now dropped until the session starts.
#[tokio::test]
async fn a_notification_before_the_first_request_does_not_end_the_session() {
    let mut lines = Lines::start(&server());
    lines
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#)
        .await;
    lines.send(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#).await;
    // A pre-initialization ping leaves the session waiting for its first request: a
    // notification after it is dropped too.
    let pong = lines.request(1, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    lines
        .send(r#"{"jsonrpc":"2.0","method":"ping","params":{}}"#)
        .await;
    let init = lines
        .request(
            2,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let listed = lines.request(3, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}

/// Protocol 2026-07-28 removed `ping`: on stdio it is "method not found", in the server's
/// words, whether it comes before the session's first request or after.
#[tokio::test]
async fn a_2026_07_28_ping_has_one_answer_whatever_came_before() {
    let mut lines = Lines::start(&server());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let before = lines.request(1, "ping", json!({"_meta": meta})).await;
    let listed = lines.request(2, "tools/list", json!({"_meta": meta})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let after = lines.request(3, "ping", json!({"_meta": meta})).await;
    let expected = json!({"code": -32601,
        "message": "Method not found: ping is not part of protocol 2026-07-28"});
    assert_eq!(before["error"], expected, "{before}");
    assert_eq!(after["error"], expected, "{after}");
}

/// The same answer over HTTP.
#[tokio::test]
async fn a_2026_07_28_ping_over_http_has_the_same_answer() {
    let addr = serve_http(&server()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "ping"),
    ];
    let answer = post(addr, "/mcp", &headers, ping.to_string()).await;
    assert_eq!(
        answer.message()["error"],
        json!({"code": -32601,
            "message": "Method not found: ping is not part of protocol 2026-07-28"}),
        "{answer:?}"
    );
}

/// The id of a request refused before any handler saw it is free at once: the next request
/// with that id is answered, on HTTP and over the line transport alike.
#[tokio::test]
async fn a_refused_request_frees_its_id_at_once() {
    let refused = [
        // No `jsonrpc`.
        json!({"id": 5, "method": "ping"}),
        // A version that is not 2.0.
        json!({"jsonrpc": "1.0", "id": 5, "method": "ping"}),
        // A method that is not a string.
        json!({"jsonrpc": "2.0", "id": 5, "method": 7}),
    ];
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    let addr = serve_http(&server()).await;
    let session = http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    for bad in &refused {
        let answer = post(addr, "/mcp", &headers, bad.to_string()).await;
        assert_eq!(answer.status, 400, "{bad}: {answer:?}");
        assert_eq!(
            answer.message()["error"]["code"],
            -32600,
            "{bad}: {answer:?}"
        );
        let again = post(addr, "/mcp", &headers, ping.to_string()).await;
        assert_eq!(again.status, 200, "{bad}: {again:?}");
        assert_eq!(
            again.message(),
            json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
            "after {bad}"
        );
    }
    let mut lines = Lines::initialized(&server()).await;
    for bad in &refused {
        lines.send(&bad.to_string()).await;
        assert_eq!(lines.next().await["error"]["code"], -32600, "{bad}");
        lines.send(&ping.to_string()).await;
        assert_eq!(
            lines.next().await,
            json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
            "after {bad}"
        );
    }
}

/// Waits until the client goes away.
#[ability(semantic = "READ")]
async fn wait_forever() -> i64 {
    std::future::pending::<i64>().await
}

/// A session has at most 1,024 requests being answered: past them a request is refused with
/// a clear error, and the session keeps serving.
#[tokio::test]
async fn a_session_holds_at_most_so_many_requests_being_answered() {
    let mut lines = Lines::initialized(&server()).await;
    for id in 0..1024u64 {
        lines
            .send(
                &json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/call",
                        "params": {"name": "wait_forever", "arguments": {}}})
                .to_string(),
            )
            .await;
    }
    // Any request: a ping too.
    lines.send(&raw(5000, "ping", None)).await;
    let refused = lines.response(&json!(5000)).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1024 requests are being answered")),
        "{refused}"
    );
    // One cancelled frees a place.
    lines
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 100}})
            .to_string(),
        )
        .await;
    lines.send(&raw(6000, "ping", None)).await;
    assert_eq!(
        lines.response(&json!(6000)).await,
        json!({"jsonrpc": "2.0", "id": 6000, "result": {}})
    );
}
