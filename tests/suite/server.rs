//! The native MCP surface on the wire, over the line transport (as stdio), the in-process
//! client and streamable HTTP on 127.0.0.1: exact tool JSON, results, error channels, site
//! identity, callers, panics, time limits, cancellation and concurrency.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Lines, http_session, post, request, serve_http, tool_error};
use abilities::{
    AbilityError, Caller, Context, Server, Site, State, ability, auth::StaticTokens,
    config::HttpConfig,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum PostType {
    Post,
    Page,
}

/// Count published posts of one type.
#[ability(semantic = "READ", flatten, name = "my-plugin/count-posts")]
fn count_posts(post_type: PostType) -> u64 {
    match post_type {
        PostType::Post => 42,
        PostType::Page => 3,
    }
}

/// Rows created through `create_row`, in SQLite.
struct Rows {
    db: Mutex<rusqlite::Connection>,
}

impl Rows {
    fn with(values: &[u64]) -> Self {
        let db = rusqlite::Connection::open_in_memory().expect("in-memory SQLite");
        db.execute_batch("CREATE TABLE rows (n INTEGER NOT NULL)")
            .expect("a table");
        for n in values {
            db.execute("INSERT INTO rows (n) VALUES (?1)", [*n as i64])
                .expect("an insert");
        }
        Self { db: Mutex::new(db) }
    }

    /// (rows, distinct values)
    fn counts(&self) -> (i64, i64) {
        let db = self.db.lock().expect("not poisoned");
        db.query_row("SELECT COUNT(*), COUNT(DISTINCT n) FROM rows", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("a count")
    }
}

/// A created row.
#[derive(Serialize, JsonSchema)]
struct Row {
    n: u64,
}

/// Record a row.
#[ability(semantic = "CREATE")]
async fn create_row(rows: State<Rows>, n: u64) -> Result<Row, AbilityError> {
    tokio::task::yield_now().await;
    let db = rows
        .db
        .lock()
        .map_err(|_| AbilityError::internal("poisoned"))?;
    db.execute("INSERT INTO rows (n) VALUES (?1)", [n as i64])
        .map_err(|e| AbilityError::internal(e.to_string()))?;
    Ok(Row { n })
}

/// Delete everything; needs a scope (and no confirmation: these tests are about scopes).
#[ability(semantic = "DELETE", permission = "rows:delete", confirm = false)]
fn delete_rows(rows: State<Rows>) -> Result<usize, AbilityError> {
    let db = rows
        .db
        .lock()
        .map_err(|_| AbilityError::internal("poisoned"))?;
    db.execute("DELETE FROM rows", [])
        .map_err(|e| AbilityError::internal(e.to_string()))
}

/// Panics.
#[ability(semantic = "EXECUTE")]
fn explode() -> u8 {
    panic!("boom")
}

/// Sleeps for a long time.
#[ability(semantic = "EXECUTE")]
async fn slow() -> u8 {
    tokio::time::sleep(Duration::from_secs(30)).await;
    1
}

static SAW_CANCEL: AtomicBool = AtomicBool::new(false);

/// Waits until the caller cancels.
#[ability(semantic = "EXECUTE")]
async fn wait_for_cancel(ctx: &Context) -> u8 {
    let token = ctx.cancellation().clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        SAW_CANCEL.store(true, Ordering::SeqCst);
    });
    let _ = watcher.await;
    0
}

/// What the context says about the call.
#[derive(Serialize, JsonSchema)]
struct Seen {
    principal: String,
    protocol_version: Option<String>,
    site_id: Option<String>,
    request_id: Option<String>,
}

/// Report the context.
#[ability(semantic = "READ", site = false)]
fn whoami(ctx: &Context) -> Seen {
    Seen {
        principal: ctx.caller().principal().to_owned(),
        protocol_version: ctx.protocol_version().map(str::to_owned),
        site_id: ctx.site().map(|s| s.site_id().to_owned()),
        request_id: ctx.request_id().map(str::to_owned),
    }
}

fn server() -> Server {
    server_with(&Arc::new(Rows::with(&[])))
}

fn server_with(rows: &Arc<Rows>) -> Server {
    builder!()
        .name("test-site", "9.9.9")
        .site(Site::new("main", "https://example.com").with_blog_id(4))
        .shared_state(Arc::clone(rows))
        .timeout(Some(Duration::from_millis(300)))
        .build()
        .expect("the test abilities are valid")
}

#[tokio::test]
async fn tools_list_gives_the_derived_tools() {
    let mut lines = Lines::initialized(&server()).await;
    let list = lines.request(2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<_> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        [
            "get_site_context",
            "create_row",
            "delete_rows",
            "explode",
            "my-plugin-count-posts",
            "slow",
            "wait_for_cancel",
            "whoami"
        ]
    );
    let count = tools
        .iter()
        .find(|t| t["name"] == "my-plugin-count-posts")
        .expect("count-posts");
    assert_eq!(
        count,
        &json!({
            "name": "my-plugin-count-posts",
            "description": "Count published posts of one type.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "input": {"type": "string", "enum": ["post", "page"]},
                    "site_id": {
                        "type": "string",
                        "description": "Optional: the site this call is meant for; a call naming another site is rejected."
                    }
                },
                "required": ["input"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "integer", "minimum": 0}},
                "required": ["result"]
            },
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
        })
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        if let Some(output) = tool.get("outputSchema") {
            assert_eq!(output["type"], "object", "{tool}");
        }
    }
    let whoami = tools
        .iter()
        .find(|t| t["name"] == "whoami")
        .expect("whoami");
    assert!(
        whoami["inputSchema"]["properties"].get("site_id").is_none(),
        "site = false takes no site_id"
    );
}

#[tokio::test]
async fn initialize_names_the_application() {
    let mut lines = Lines::start(&server());
    let init = lines
        .request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert_eq!(
        init["result"]["serverInfo"],
        json!({"name": "test-site", "version": "9.9.9"})
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(init["result"]["capabilities"]["tools"].is_object());
}

#[tokio::test]
async fn success_is_one_text_block_plus_structured_content() {
    let mut lines = Lines::initialized(&server()).await;
    assert_eq!(
        lines
            .call(2, "my-plugin-count-posts", json!({"input": "post"}))
            .await,
        json!({"content": [{"type": "text", "text": "{\"result\":42}"}], "structuredContent": {"result": 42}, "isError": false})
    );
    let row = lines
        .call(3, "create_row", json!({"n": 5, "undescribed": true}))
        .await;
    assert_eq!(row["structuredContent"], json!({"n": 5}));
}

#[tokio::test]
async fn failures_are_is_error_results_with_a_code() {
    let mut lines = Lines::initialized(&server()).await;
    let missing = lines.call(2, "my-plugin-count-posts", json!({})).await;
    assert_eq!(missing["content"].as_array().map(Vec::len), Some(1));
    assert!(missing.get("structuredContent").is_none());
    assert_eq!(tool_error(&missing)["code"], "VALIDATION_MISSING_PARAM");
    let wrong = lines.call(3, "create_row", json!({"n": "five"})).await;
    assert_eq!(tool_error(&wrong)["code"], "VALIDATION_INVALID_TYPE");
    let bad_enum = lines
        .call(4, "my-plugin-count-posts", json!({"input": "video"}))
        .await;
    assert_eq!(tool_error(&bad_enum)["code"], "VALIDATION_INVALID_VALUE");
    assert_eq!(
        tool_error(&bad_enum)["details"]["violations"][0]["pointer"],
        "/input"
    );
}

#[tokio::test]
async fn protocol_failures_stay_json_rpc_errors() {
    let mut lines = Lines::initialized(&server()).await;
    let unknown = lines
        .request(2, "tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "unknown tool: nope");
    let no_method = lines.request(3, "tools/nothing", json!({})).await;
    assert_eq!(no_method["error"]["code"], -32601);
}

#[tokio::test]
async fn bad_lines_get_their_json_rpc_error_and_the_server_keeps_serving() {
    let mut lines = Lines::initialized(&server()).await;
    lines.send("garbage").await;
    assert_eq!(
        lines.next().await,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: expected value at line 1 column 1"}})
    );
    lines.send("[1, 2]").await;
    assert_eq!(lines.next().await["error"]["code"], -32600);
    lines.send("42").await;
    assert_eq!(lines.next().await["error"]["code"], -32600);
    lines.send(r#"{"id": 7, "method": "ping"}"#).await;
    let wrong_version = lines.next().await;
    assert_eq!(
        (
            wrong_version["id"].clone(),
            wrong_version["error"]["code"].clone()
        ),
        (json!(7), json!(-32600))
    );
    lines.send(r#"{"jsonrpc": "2.0", "id": 8}"#).await;
    assert_eq!(lines.next().await["error"]["code"], -32600);
    lines.send("").await;
    lines
        .send(r#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": 5}}"#)
        .await;
    let bad_params = lines.response(&json!(9)).await;
    assert!(
        bad_params["error"]["code"].as_i64().is_some(),
        "{bad_params}"
    );
    let ok = lines
        .call(10, "my-plugin-count-posts", json!({"input": "page"}))
        .await;
    assert_eq!(ok["structuredContent"], json!({"result": 3}));
}

#[tokio::test]
async fn an_oversized_line_is_refused_and_skipped() {
    let mut lines = Lines::initialized(&server()).await;
    let pad = "x".repeat(17 << 20);
    let huge =
        format!(r#"{{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {{"pad": "{pad}"}}}}"#);
    lines.send(&huge).await;
    let refused = lines.next().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["id"], Value::Null);
    let ok = lines
        .call(3, "my-plugin-count-posts", json!({"input": "post"}))
        .await;
    assert_eq!(ok["structuredContent"], json!({"result": 42}));
}

#[tokio::test]
async fn site_identity_is_checked_before_the_handler() {
    let mut lines = Lines::initialized(&server()).await;
    let context = lines.call(2, "get_site_context", json!({})).await;
    assert_eq!(
        context["structuredContent"],
        json!({
            "contract_version": 3,
            "framework": {"name": "abilities", "version": env!("CARGO_PKG_VERSION")},
            "site": {"site_id": "main", "site_url": "https://example.com", "blog_id": 4}
        })
    );
    let same = lines
        .call(
            3,
            "my-plugin-count-posts",
            json!({"input": "post", "site_id": "main"}),
        )
        .await;
    assert_eq!(same["structuredContent"], json!({"result": 42}));
    let other = lines
        .call(4, "create_row", json!({"n": 1, "site_id": "other"}))
        .await;
    assert_eq!(
        tool_error(&other),
        json!({
            "code": "SITE_MISMATCH",
            "message": "this server serves site 'main', not 'other'",
            "details": {"expected_site_id": "main", "site_id": "other"}
        })
    );
    let not_a_string = lines
        .call(5, "create_row", json!({"n": 1, "site_id": 3}))
        .await;
    assert_eq!(tool_error(&not_a_string)["code"], "VALIDATION_INVALID_TYPE");
    let opted_out = lines.call(6, "whoami", json!({"site_id": "other"})).await;
    assert_eq!(opted_out["isError"], false, "site = false ignores site_id");
}

#[tokio::test]
async fn the_context_carries_caller_site_protocol_and_request_id() {
    let mut lines = Lines::initialized(&server()).await;
    let seen = lines.call(77, "whoami", json!({})).await;
    assert_eq!(
        seen["structuredContent"],
        json!({"principal": "local", "protocol_version": "2025-11-25", "site_id": "main", "request_id": "77"})
    );
}

#[tokio::test]
async fn scopes_are_enforced_per_caller() {
    let server = builder!()
        .state(Rows::with(&[1, 2]))
        .local_scopes(["rows:read"])
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let denied = lines.call(2, "delete_rows", json!({})).await;
    assert_eq!(tool_error(&denied)["code"], "PERMISSION_DENIED");
    let admin = server
        .connect_as(Some(Caller::new("admin", ["rows:delete"])))
        .await
        .expect("connects");
    let allowed = admin.call("delete_rows", json!({})).await.expect("answers");
    assert_eq!(allowed.structured_content, Some(json!({"result": 2})));
}

#[tokio::test]
async fn a_panicking_handler_is_an_internal_error_and_the_server_lives_on() {
    let mut lines = Lines::initialized(&server()).await;
    let panicked = lines.call(2, "explode", json!({})).await;
    assert_eq!(
        tool_error(&panicked),
        json!({"code": "INTERNAL_ERROR", "message": "'explode' failed unexpectedly"})
    );
    let ok = lines
        .call(3, "my-plugin-count-posts", json!({"input": "post"}))
        .await;
    assert_eq!(ok["isError"], false);
}

#[tokio::test]
async fn a_slow_handler_times_out() {
    let mut lines = Lines::initialized(&server()).await;
    let slow = lines.call(2, "slow", json!({})).await;
    assert_eq!(
        tool_error(&slow),
        json!({"code": "TIMEOUT", "message": "'slow' did not finish within 300 ms"})
    );
}

#[tokio::test]
async fn cancellation_reaches_the_handler() {
    let server = builder!()
        .state(Rows::with(&[]))
        .timeout(None)
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    lines.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "wait_for_cancel"}}).to_string()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    lines.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}).to_string()).await;
    for _ in 0..100 {
        if SAW_CANCEL.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        SAW_CANCEL.load(Ordering::SeqCst),
        "the handler saw the cancellation"
    );
    let pong = lines.request(6, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}

#[tokio::test]
async fn two_hundred_pipelined_calls_are_all_answered_and_persisted_once() {
    let rows = Arc::new(Rows::with(&[]));
    let server = server_with(&rows);
    let mut lines = Lines::initialized(&server).await;
    for i in 0..200u64 {
        let call = json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": {"name": "create_row", "arguments": {"n": i}}});
        lines.send(&call.to_string()).await;
    }
    for i in 0..200u64 {
        let response = lines.response(&json!(1000 + i)).await;
        assert_eq!(
            response["result"]["structuredContent"],
            json!({"n": i}),
            "{response}"
        );
    }
    assert_eq!(
        rows.counts(),
        (200, 200),
        "every row persisted exactly once"
    );
}

#[tokio::test]
async fn the_in_process_client_speaks_the_protocol() {
    let client = server().connect().await.expect("connects");
    let tools = client.list_tools().await.expect("lists");
    assert_eq!(tools.len(), 8);
    let result = client
        .call("my-plugin-count-posts", json!({"input": "post"}))
        .await
        .expect("answers");
    assert_eq!(result.structured_content, Some(json!({"result": 42})));
    assert_eq!(result.is_error, Some(false));
    client.close().await;
}

#[tokio::test]
async fn http_serves_two_hundred_concurrent_calls_over_one_session() {
    let rows = Arc::new(Rows::with(&[]));
    let server = server_with(&rows);
    let addr = serve_http(&server).await;
    let session = http_session(addr).await;
    let calls = (0..200u64).map(|i| {
        let session = session.clone();
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "create_row", "arguments": {"n": i}}});
            let response = post(addr, "/mcp", &[("mcp-session-id", &session), ("mcp-protocol-version", "2025-11-25")], body.to_string()).await;
            assert_eq!(response.status, 200, "{response:?}");
            response.message()
        })
    });
    let mut seen = HashSet::new();
    for call in calls.collect::<Vec<_>>() {
        let message = call.await.expect("the task finishes");
        let id = message["id"].as_u64().expect("an id");
        assert_eq!(message["result"]["structuredContent"], json!({"n": id}));
        seen.insert(id);
    }
    assert_eq!(seen.len(), 200);
    assert_eq!(
        rows.counts(),
        (200, 200),
        "every row persisted exactly once"
    );
}

#[tokio::test]
async fn http_answers_unknown_methods_in_json_rpc_and_ends_sessions() {
    let server = builder!().state(Rows::with(&[])).build().expect("valid");
    let addr = serve_http(&server).await;
    let session = http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let unknown = post(
        addr,
        "/mcp",
        &headers,
        r#"{"jsonrpc":"2.0","id":5,"method":"no/such"}"#,
    )
    .await;
    assert_eq!(unknown.status, 200, "{unknown:?}");
    assert_eq!(unknown.message()["error"]["code"], -32601);
    assert_eq!(unknown.message()["id"], 5);
    let ended = request(addr, "DELETE", "/mcp", &headers, "").await;
    assert_eq!(ended.status, 204, "{ended:?}");
    let after = post(
        addr,
        "/mcp",
        &headers,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
    )
    .await;
    assert_eq!(after.status, 404, "{after:?}");
    // The session's own 404, not the words for a method protocol 2026-07-28 removed.
    assert!(!after.body.contains("not part of protocol"), "{after:?}");
}

#[tokio::test]
async fn http_rejects_bad_bodies_hosts_and_tokens_with_json_rpc_errors() {
    let server = builder!()
        .state(Rows::with(&[]))
        .http(HttpConfig::default().max_body_bytes(1024))
        .authenticator(
            StaticTokens::new()
                .with_token("good", Caller::trusted("t"))
                .allow_anonymous(Caller::anonymous()),
        )
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let garbage = post(addr, "/mcp", &[], "not json").await;
    assert_eq!(garbage.status, 400);
    assert_eq!(garbage.message()["error"]["code"], -32700);
    assert_eq!(garbage.message()["id"], Value::Null);
    let not_a_message = post(addr, "/mcp", &[], r#"{"id": 3}"#).await;
    assert_eq!(
        (not_a_message.status, not_a_message.message()["id"].clone()),
        (400, json!(3))
    );
    let big = post(addr, "/mcp", &[], "x".repeat(4096)).await;
    assert_eq!(big.status, 413);
    assert_eq!(big.message()["error"]["code"], -32600);
    let token = post(addr, "/mcp", &[("authorization", "Bearer wrong")], "{}").await;
    assert_eq!(token.status, 401);
    assert_eq!(
        token.header("www-authenticate").as_deref(),
        Some(r#"Bearer error="invalid_token""#)
    );
    let rebinding = post(
        addr,
        "/mcp",
        &[("host", "evil.example:80")],
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(rebinding.status, 403);
    // The refusal names the setting that allows a name.
    assert!(
        rebinding
            .body
            .contains(r#"Host 'evil.example:80' is not allowed"#)
            && rebinding
                .body
                .contains(r#"HttpConfig::default().allowed_hosts(["evil.example"])"#),
        "{}",
        rebinding.body
    );
    let foreign_page = post(
        addr,
        "/mcp",
        &[("origin", "http://evil.example")],
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(foreign_page.status, 403, "{foreign_page:?}");
    let session = http_session(addr).await;
    let after = post(
        addr,
        "/mcp",
        &[("mcp-session-id", &session), ("mcp-protocol-version", "2025-11-25"), ("authorization", "Bearer good")],
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "my-plugin-count-posts", "arguments": {"input": "post"}}}).to_string(),
    )
    .await;
    assert_eq!(
        after.message()["result"]["structuredContent"],
        json!({"result": 42})
    );
}

#[tokio::test]
async fn http_callers_get_scopes_from_their_token() {
    let server = builder!()
        .state(Rows::with(&[7]))
        .authenticator(
            StaticTokens::new()
                .with_token("admin", Caller::new("admin", ["rows:delete"]))
                .allow_anonymous(Caller::anonymous()),
        )
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let session = http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "delete_rows"}}).to_string();
    let anonymous = post(addr, "/mcp", &headers, call.clone()).await.message();
    assert_eq!(
        tool_error(&anonymous["result"])["code"],
        "PERMISSION_DENIED"
    );
    let mut with_token = headers.to_vec();
    with_token.push(("authorization", "Bearer admin"));
    let admin = post(addr, "/mcp", &with_token, call).await.message();
    assert_eq!(admin["result"]["structuredContent"], json!({"result": 1}));
}

#[tokio::test]
async fn stateless_http_answers_each_request_on_its_own() {
    let server = builder!()
        .state(Rows::with(&[]))
        .http(HttpConfig::default().stateless(true))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "my-plugin-count-posts", "arguments": {"input": "post"}}});
    let response = post(
        addr,
        "/mcp",
        &[("mcp-protocol-version", "2025-11-25")],
        call.to_string(),
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.message()["result"]["structuredContent"],
        json!({"result": 42})
    );
}
