//! A plain protocol 2026-07-28 request over HTTP is answered in place, as one JSON message;
//! one that asks for progress or logs streams them first, and every wire rule holds the same
//! way whichever path answers.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{Lines, post, serve_http};
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
static WAITED: AtomicBool = AtomicBool::new(false);

/// The first time: wait until cancelled, noting the cancellation. Then answer at once.
#[ability(semantic = "READ")]
async fn wait_long(ctx: &Context) -> &'static str {
    if WAITED.swap(true, Ordering::SeqCst) {
        return "at once";
    }
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        token.cancelled().await;
        CANCELLED.store(true, Ordering::SeqCst);
    });
    tokio::time::sleep(Duration::from_secs(60)).await;
    "woke"
}

/// Sleep `ms` milliseconds, or until cancelled.
#[ability(semantic = "READ")]
async fn pause(ctx: &Context, ms: u64) -> &'static str {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => "slept",
        () = ctx.cancellation().cancelled() => "cancelled",
    }
}

static ANSWERED: AtomicBool = AtomicBool::new(false);

/// Answer at once, noting when the request's token fires afterwards.
#[ability(semantic = "READ")]
async fn quick(ctx: &Context) -> &'static str {
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        token.cancelled().await;
        ANSWERED.store(true, Ordering::SeqCst);
    });
    "quick"
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
async fn in_place_and_through_rmcp_the_answers_are_the_same() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let list = |method: &str| {
        json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {"_meta": meta()}})
            .to_string()
    };
    let requests = [
        (
            headers("tools/call", Some("add")),
            call("add", json!({"a": 2, "b": 3}), meta()),
        ),
        (
            headers("tools/call", Some("add")),
            call("add", json!({"a": "x"}), meta()),
        ),
        (
            headers("tools/call", Some("nope")),
            call("nope", json!({}), meta()),
        ),
        (
            headers("tools/call", Some("explode")),
            call("explode", json!({}), meta()),
        ),
        (headers("tools/list", None), list("tools/list")),
        (headers("resources/list", None), list("resources/list")),
        (
            headers("resources/templates/list", None),
            list("resources/templates/list"),
        ),
        (headers("prompts/list", None), list("prompts/list")),
    ];
    for (headers, body) in requests {
        let in_place = post(addr, "/mcp", &headers, body.clone()).await;
        // A weighted `Accept` is rmcp's to read: the same request, answered by rmcp's service.
        let weighted = [headers.clone(), vec![("accept", "application/json;q=1")]].concat();
        let by_rmcp = post(addr, "/mcp", &weighted, body).await;
        assert_eq!(in_place.status, by_rmcp.status, "{headers:?}");
        assert_eq!(
            in_place.header("content-type"),
            by_rmcp.header("content-type"),
            "{headers:?}"
        );
        assert_eq!(in_place.message(), by_rmcp.message(), "{headers:?}");
    }
}

#[tokio::test]
async fn near_misses_get_the_answer_rmcp_gives() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let body = call("add", json!({"a": 1, "b": 2}), meta());
    // The tool's name in Base64: served.
    let encoded = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "=?base64?YWRk?="),
    ];
    let response = post(addr, "/mcp", &encoded, body.clone()).await;
    assert_eq!(
        response.message()["result"]["structuredContent"]["result"],
        3
    );
    // The name twice, even the same name: -32020.
    let twice = [
        headers("tools/call", Some("add")),
        vec![("mcp-name", "add")],
    ]
    .concat();
    let response = post(addr, "/mcp", &twice, body.clone()).await;
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(response.message()["error"]["code"], -32020);
    // A Host that is not an authority: 400.
    let host = [
        headers("tools/call", Some("add")),
        vec![("host", "localhost]")],
    ]
    .concat();
    let response = post(addr, "/mcp", &host, body).await;
    assert_eq!(response.status, 400, "{response:?}");
}

#[tokio::test]
async fn the_request_token_fires_once_the_answer_is_made() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let response = post(
        addr,
        "/mcp",
        &headers("tools/call", Some("quick")),
        call("quick", json!({}), meta()),
    )
    .await;
    assert_eq!(
        response.message()["result"]["structuredContent"]["result"],
        "quick"
    );
    for _ in 0..100 {
        if ANSWERED.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the request's token did not fire within 5 s of its answer");
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_call_and_its_key_is_settled() {
    let addr = serve_http(&builder!().build().expect("valid")).await;
    let mut keyed = meta();
    keyed["io.github.abilities-rs/idempotencyKey"] = json!("k-gone");
    let body = call("wait_long", json!({}), keyed);
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
    let mut cancelled = false;
    for _ in 0..100 {
        if CANCELLED.load(Ordering::SeqCst) {
            cancelled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        cancelled,
        "the call was not cancelled within 5 s of its client going away"
    );
    // The call ran on to its end and settled its key: a retry is not told it is still running.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let retry = post(
        addr,
        "/mcp",
        &headers("tools/call", Some("wait_long")),
        body,
    )
    .await;
    let message = retry.message();
    assert!(
        !message.to_string().contains("IN_PROGRESS"),
        "the key is still held: {message}"
    );
}

fn line(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments}})
    .to_string()
}

#[tokio::test]
async fn over_stdio_a_repeated_id_is_refused_while_its_call_runs() {
    let server = builder!().build().expect("valid");
    let mut lines = Lines::initialized(&server).await;
    lines.send(&line(9, "pause", json!({"ms": 300}))).await;
    lines.send(&line(9, "add", json!({"a": 1, "b": 1}))).await;
    let refused = lines.next().await;
    assert_eq!(refused["id"], 9);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let answered = lines.next().await;
    assert_eq!(answered["id"], 9);
    assert_eq!(answered["result"]["structuredContent"]["result"], "slept");
    // Answered: the id is free again.
    let again = lines.call(9, "add", json!({"a": 1, "b": 1})).await;
    assert_eq!(again["structuredContent"]["result"], 2);
}

#[tokio::test]
async fn over_stdio_a_cancelled_call_gets_no_answer_and_its_id_is_free_again() {
    let server = builder!().build().expect("valid");
    let mut lines = Lines::initialized(&server).await;
    lines.send(&line(7, "pause", json!({"ms": 10_000}))).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    lines
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 7}})
            .to_string(),
        )
        .await;
    lines.send(&line(7, "add", json!({"a": 1, "b": 2}))).await;
    lines.send(&line(8, "add", json!({"a": 2, "b": 2}))).await;
    let (before, last) = lines.until(8).await;
    assert_eq!(last["result"]["structuredContent"]["result"], 4);
    let sevens: Vec<&Value> = before.iter().filter(|m| m["id"] == 7).collect();
    assert_eq!(
        sevens.len(),
        1,
        "one answer for id 7, the second call's: {before:?}"
    );
    assert_eq!(sevens[0]["result"]["structuredContent"]["result"], 3);
}

#[tokio::test]
async fn over_stdio_answers_being_made_when_the_input_closes_are_written() {
    let server = builder!().build().expect("valid");
    let mut lines = Lines::initialized(&server).await;
    lines.send(&line(11, "pause", json!({"ms": 200}))).await;
    lines.send(&line(12, "add", json!({"a": 3, "b": 4}))).await;
    let rest = lines.close_and_read_the_rest().await;
    let answer = |id: u64| {
        rest.iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {rest:?}"))["result"]["structuredContent"]
            ["result"]
            .clone()
    };
    assert_eq!(answer(11), "slept");
    assert_eq!(answer(12), 7);
}

#[tokio::test]
async fn over_stdio_a_batch_may_not_reuse_the_id_of_a_call_being_answered() {
    let server = builder!().build().expect("valid");
    let mut lines = Lines::start(&server);
    // 2025-03-26, whose sessions take batches.
    let init = lines
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");
    lines
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await;
    // Answered by the session first, so the next call is served in place.
    lines.call(2, "add", json!({"a": 0, "b": 0})).await;
    lines.send(&line(5, "pause", json!({"ms": 300}))).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 2}}}
    ]);
    lines.send(&batch.to_string()).await;
    // Cancelling the call does not strand the batch.
    lines
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 5}})
            .to_string(),
        )
        .await;
    let answer = lines.next().await;
    let answers = answer
        .as_array()
        .unwrap_or_else(|| panic!("a batch answer: {answer}"));
    let of = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answer}"))
    };
    assert_eq!(of(5)["error"]["code"], -32600, "{answer}");
    assert_eq!(
        of(6)["result"]["structuredContent"]["result"],
        4,
        "{answer}"
    );
    // And nothing more for id 5: the cancelled call is not answered.
    lines.send(&line(8, "add", json!({"a": 4, "b": 4}))).await;
    let (before, last) = lines.until(8).await;
    assert_eq!(last["result"]["structuredContent"]["result"], 8);
    assert!(before.is_empty(), "{before:?}");
}

/// A value a client might put in an argument, an id or a cursor.
fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-3i64..40).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z0-9 ]{0,6}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A request the in-place path takes: a call of a tool (real, made up, or one that panics)
/// with arguments of any shape, or a list with any cursor, under any id.
fn in_place_request() -> impl proptest::strategy::Strategy<Value = (String, Option<String>, String)>
{
    use proptest::prelude::*;
    let id = prop_oneof![
        (0i64..1_000_000).prop_map(Value::from),
        "[a-z0-9-]{1,12}".prop_map(Value::from),
    ];
    let tool = prop::sample::select(vec!["add", "explode", "chatty", "quick", "nope", "ADD"]);
    let arguments = prop_oneof![
        (any_value(), any_value()).prop_map(|(a, b)| json!({"a": a, "b": b})),
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| json!({"a": a, "b": b})),
        prop::collection::btree_map("[a-z]{1,3}", any_value(), 0..4)
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        any_value(),
    ];
    let call = (id.clone(), tool, arguments).prop_map(|(id, tool, arguments)| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": meta()}});
        (
            "tools/call".to_owned(),
            Some(tool.to_owned()),
            body.to_string(),
        )
    });
    let method = prop::sample::select(vec![
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ]);
    let cursor = prop::option::of(any_value());
    let list = (id, method, cursor).prop_map(|(id, method, cursor)| {
        let mut params = json!({"_meta": meta()});
        if let Some(cursor) = cursor {
            params["cursor"] = cursor;
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (method.to_owned(), None, body.to_string())
    });
    prop_oneof![3 => call, 1 => list]
}

/// Generated requests, each sent twice: as it is (answered in place) and with a weighted
/// `Accept` (rmcp's to read, so answered by rmcp's service). The status, the content type and
/// the message are the same every time.
#[test]
fn in_place_answers_equal_rmcps_over_generated_requests() {
    use proptest::test_runner::{Config, TestRunner};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = builder!().build().expect("valid");
    let addr = runtime.block_on(serve_http(&server));
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&in_place_request(), |(method, name, body)| {
            let headers = headers(&method, name.as_deref());
            let weighted = [headers.clone(), vec![("accept", "application/json;q=1")]].concat();
            let (in_place, by_rmcp) = runtime.block_on(async {
                let in_place = post(addr, "/mcp", &headers, body.clone()).await;
                (in_place, post(addr, "/mcp", &weighted, body.clone()).await)
            });
            proptest::prop_assert_eq!(in_place.status, by_rmcp.status, "{}", body);
            proptest::prop_assert_eq!(
                in_place.header("content-type"),
                by_rmcp.header("content-type"),
                "{}",
                body
            );
            proptest::prop_assert_eq!(in_place.message(), by_rmcp.message(), "{}", body);
            Ok(())
        })
        .expect("every generated request gets the same answer on both paths");
}
