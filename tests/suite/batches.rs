//! JSON-RPC batches, per the protocol version a session negotiated: taken from clients of
//! 2025-03-26 (whose transports must accept them), each member served and the answers
//! returned as one array, on stdio and on HTTP; refused with -32600 under any other version.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use std::collections::BTreeMap;

use crate::support::{Lines, post, serve_http};
use abilities::{Server, ability};
use serde_json::{Value, json};

/// Add two numbers.
#[ability(semantic = "READ")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Wait until cancelled.
#[ability(semantic = "READ")]
async fn wait_long() -> u8 {
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    1
}

fn server() -> Server {
    builder!().build().expect("a valid server")
}

/// A stdio session initialized with protocol `version`.
async fn session(version: &str) -> Lines {
    let mut lines = Lines::start(&server());
    let init = lines
        .request(
            1,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "batcher", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], version, "{init}");
    lines
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await;
    lines
}

/// The answers of a batch, by id (`null` ids under `"null"`, in order).
fn by_id(answers: &Value) -> BTreeMap<String, Vec<Value>> {
    let mut map: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for answer in answers.as_array().expect("an array of answers") {
        map.entry(answer["id"].to_string())
            .or_default()
            .push(answer.clone());
    }
    map
}

fn batch() -> Value {
    json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "t", "progress": 1}},
        {"jsonrpc": "2.0", "id": 12, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": "x"}}},
        5,
        {"jsonrpc": "2.0", "id": 13, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "again", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 14, "method": "tools/list", "params": {"cursor": 7}}
    ])
}

/// What every transport answers to [`batch`]: each request's answer once, the notification
/// none.
fn assert_answers(answers: &Value) {
    let answers = by_id(answers);
    assert_eq!(
        answers.keys().collect::<Vec<_>>(),
        ["10", "11", "12", "13", "14", "null"],
        "{answers:#?}"
    );
    assert_eq!(
        answers["10"],
        [json!({"jsonrpc": "2.0", "id": 10, "result": {}})]
    );
    let sum = &answers["11"][0]["result"];
    assert_eq!(sum["structuredContent"], json!({"result": 5}), "{sum}");
    let invalid = &answers["12"][0]["result"];
    assert_eq!(invalid["isError"], true, "{invalid}");
    assert_eq!(answers["13"][0]["error"]["code"], -32600);
    assert_eq!(
        answers["13"][0]["error"]["message"],
        "Invalid Request: initialize may not be part of a batch"
    );
    assert_eq!(answers["14"][0]["error"]["code"], -32602);
    assert_eq!(answers["null"][0]["error"]["code"], -32600);
    assert_eq!(
        answers["null"][0]["error"]["message"],
        "Invalid Request: a message must be a JSON object"
    );
}

#[tokio::test]
async fn stdio_takes_a_batch_from_a_2025_03_26_session() {
    let mut lines = session("2025-03-26").await;
    lines.send(&batch().to_string()).await;
    let answers = lines.next().await;
    assert_answers(&answers);
    // The session goes on as before.
    let pong = lines.request(20, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    // A batch of notifications only is answered by nothing: the next line is the ping's.
    lines
        .send(&json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]).to_string())
        .await;
    let pong = lines.request(21, "ping", json!({})).await;
    assert_eq!(pong["id"], 21);
    // An empty batch is one error.
    lines.send("[]").await;
    let empty = lines.next().await;
    assert_eq!(
        empty,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request: an empty batch"}})
    );
}

#[tokio::test]
async fn stdio_answers_a_batch_whose_member_is_cancelled_and_refuses_duplicate_ids() {
    let mut lines = session("2025-03-26").await;
    lines
        .send(
            &json!([
                {"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": "wait_long"}},
                {"jsonrpc": "2.0", "id": 31, "method": "ping"},
                {"jsonrpc": "2.0", "id": 31, "method": "ping"}
            ])
            .to_string(),
        )
        .await;
    lines
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 30, "reason": "enough"}})
            .to_string(),
        )
        .await;
    // The cancelled member gets no answer (JSON-RPC answers cancelled requests with nothing);
    // the batch is answered without it.
    let answers = lines.next().await;
    let answers = by_id(&answers);
    assert_eq!(answers.keys().collect::<Vec<_>>(), ["31"], "{answers:?}");
    let (pong, duplicate): (Vec<&Value>, Vec<&Value>) = answers["31"]
        .iter()
        .partition(|a| a.get("result").is_some());
    assert_eq!(pong.len(), 1);
    assert_eq!(
        duplicate[0]["error"]["message"],
        "Invalid Request: another request of the batch has this id"
    );
}

#[tokio::test]
async fn stdio_refuses_a_batch_under_later_versions() {
    let mut lines = session("2025-11-25").await;
    lines.send(&batch().to_string()).await;
    let refused = lines.next().await;
    assert_eq!(
        refused,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message":
            "Invalid Request: JSON-RPC batches are part of protocol version 2025-03-26 only, not 2025-11-25"}})
    );
    // No member ran: the next answer is the next request's.
    let pong = lines.request(2, "ping", json!({})).await;
    assert_eq!(pong["id"], 2);
}

#[tokio::test]
async fn http_takes_a_batch_from_a_2025_03_26_session() {
    let addr = serve_http(&server()).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "batcher", "version": "1"}
    }});
    let response = post(addr, "/mcp", &[], init.to_string()).await;
    assert_eq!(response.status, 200, "{response:?}");
    let session = response.header("mcp-session-id").expect("a session id");
    // 2025-03-26 clients send no MCP-Protocol-Version header.
    let headers = [("mcp-session-id", session.as_str())];
    let ack = post(
        addr,
        "/mcp",
        &headers,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    )
    .await;
    assert_eq!(ack.status, 202);

    let answered = post(addr, "/mcp", &headers, batch().to_string()).await;
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(
        answered.header("content-type").as_deref(),
        Some("application/json")
    );
    let answers: Value = serde_json::from_str(&answered.body).expect("a JSON array");
    assert_answers(&answers);

    // A batch larger than the members served at once (16): every member answered, once.
    let many: Vec<Value> = (100..140)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": "add", "arguments": {"a": id, "b": 1}}})
        })
        .collect();
    let answered = post(addr, "/mcp", &headers, Value::Array(many).to_string()).await;
    let answers = by_id(&serde_json::from_str(&answered.body).expect("a JSON array"));
    assert_eq!(answers.len(), 40);
    for (id, answer) in &answers {
        let id: i64 = id.parse().unwrap();
        assert_eq!(answer.len(), 1);
        assert_eq!(answer[0]["result"]["structuredContent"]["result"], id + 1);
    }

    let only_notifications = json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    let acknowledged = post(addr, "/mcp", &headers, only_notifications.to_string()).await;
    assert_eq!(acknowledged.status, 202, "{acknowledged:?}");

    // The same session's client claiming a later version is refused whole.
    let later = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let refused = post(addr, "/mcp", &later, batch().to_string()).await;
    assert_eq!(refused.status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&refused.body).unwrap(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message":
            "Invalid Request: JSON-RPC batches are part of protocol version 2025-03-26 only, not 2025-11-25"}})
    );
    // Members rmcp refuses with a plain status (here an unknown session) still get answers.
    let lost = [("mcp-session-id", "no-such-session")];
    let refused = post(
        addr,
        "/mcp",
        &lost,
        json!([{"jsonrpc": "2.0", "id": 50, "method": "ping"}]).to_string(),
    )
    .await;
    assert_eq!(refused.status, 200, "{refused:?}");
    let answers: Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(answers[0]["id"], 50, "{answers}");
    assert_eq!(answers[0]["error"]["code"], -32600);
    assert!(
        answers[0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid Request: HTTP 404"),
        "{answers}"
    );
    // At most 256 members.
    let huge: Vec<Value> = (0..257)
        .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .collect();
    let refused = post(addr, "/mcp", &headers, Value::Array(huge).to_string()).await;
    assert_eq!(refused.status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&refused.body).unwrap()["error"]["message"],
        "Invalid Request: a batch may hold 256 messages, not 257"
    );
    let empty = post(addr, "/mcp", &headers, "[]").await;
    assert_eq!(empty.status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&empty.body).unwrap()["error"]["message"],
        "Invalid Request: an empty batch"
    );
}

static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Count a write.
#[ability(semantic = "CREATE")]
fn write_once(title: String) -> usize {
    let _ = title;
    WRITES.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
}

/// A 2025-03-26 HTTP session on `addr`; its headers' session id.
async fn http_2025_03_26(addr: std::net::SocketAddr) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "batcher", "version": "1"}
    }});
    let response = post(addr, "/mcp", &[], init.to_string()).await;
    let session = response.header("mcp-session-id").expect("a session id");
    let ack = post(
        addr,
        "/mcp",
        &[("mcp-session-id", session.as_str())],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    )
    .await;
    assert_eq!(ack.status, 202);
    session
}

#[tokio::test]
async fn http_refuses_a_repeated_id_in_a_batch_as_stdio_does() {
    let addr = serve_http(&server()).await;
    let session = http_2025_03_26(addr).await;
    let headers = [("mcp-session-id", session.as_str())];
    let before = WRITES.load(std::sync::atomic::Ordering::SeqCst);
    let call = |title: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "write_once", "arguments": {"title": title}}})
    };
    // The support's `post` fails the test past 20 s: a hang is a failure.
    let answered = post(
        addr,
        "/mcp",
        &headers,
        json!([call("dup-a"), call("dup-b")]).to_string(),
    )
    .await;
    assert_eq!(answered.status, 200, "{answered:?}");
    let answers = by_id(&serde_json::from_str(&answered.body).expect("a JSON array"));
    assert_eq!(answers.keys().collect::<Vec<_>>(), ["1"], "{answers:?}");
    let (ran, refused): (Vec<&Value>, Vec<&Value>) =
        answers["1"].iter().partition(|a| a.get("result").is_some());
    assert_eq!((ran.len(), refused.len()), (1, 1), "{answers:?}");
    assert_eq!(
        refused[0]["error"],
        json!({"code": -32600, "message": "Invalid Request: another request of the batch has this id"})
    );
    // One member ran, once.
    assert_eq!(WRITES.load(std::sync::atomic::Ordering::SeqCst), before + 1);

    // Two pings with one id: each answered once, at once.
    let pings = json!([
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
        {"jsonrpc": "2.0", "id": "p", "method": "ping"}
    ]);
    let answered = post(addr, "/mcp", &headers, pings.to_string()).await;
    let answers: Value = serde_json::from_str(&answered.body).expect("a JSON array");
    assert_eq!(answers.as_array().map(Vec::len), Some(2), "{answers}");
    assert_eq!(
        answers[0],
        json!({"jsonrpc": "2.0", "id": "p", "result": {}})
    );
    assert_eq!(answers[1]["error"]["code"], -32600);
}

/// Sleep a little, then count.
#[ability(semantic = "READ")]
async fn slow_count() -> usize {
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    1
}

#[tokio::test]
async fn two_requests_with_one_id_at_once_in_a_session_are_each_answered_once() {
    let addr = serve_http(&server()).await;
    let session = support::http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "slow_count", "arguments": {}}})
    .to_string();
    // The support's `post` fails the test past 20 s: a hang is a failure.
    let (first, second) = tokio::join!(
        post(addr, "/mcp", &headers, call.clone()),
        post(addr, "/mcp", &headers, call.clone())
    );
    let answers: Vec<Value> = [first, second]
        .iter()
        .flat_map(|r| r.messages())
        .filter(|m| m.get("id").is_some())
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    let (ran, refused): (Vec<&Value>, Vec<&Value>) =
        answers.iter().partition(|a| a.get("result").is_some());
    assert_eq!((ran.len(), refused.len()), (1, 1), "{answers:?}");
    assert_eq!(refused[0]["id"], 1);
    assert_eq!(refused[0]["error"]["code"], -32600, "{answers:?}");
    // Once answered, the id is free again.
    let again = post(addr, "/mcp", &headers, call).await;
    assert_eq!(
        again.message()["result"]["structuredContent"],
        json!({"result": 1}),
        "{again:?}"
    );
}

#[tokio::test]
async fn stdio_refuses_a_request_whose_id_is_still_being_answered() {
    let mut lines = support::Lines::initialized(&server()).await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "slow_count", "arguments": {}}})
    .to_string();
    lines.send(&call).await;
    lines.send(&call).await;
    // The refusal comes at once, the answer when the call ends: each request once.
    let first = lines.next().await;
    let second = lines.next().await;
    assert_eq!(
        first["error"],
        json!({"code": -32600, "message": "Invalid Request: a request with this id is still being answered"}),
        "{first}"
    );
    assert_eq!(
        second["result"]["structuredContent"],
        json!({"result": 1}),
        "{second}"
    );
    // Answered: the id is free again.
    let again = lines.call(7, "slow_count", json!({})).await;
    assert_eq!(again["structuredContent"], json!({"result": 1}));
}
