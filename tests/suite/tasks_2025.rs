//! Tasks of protocol 2025-11-25 (its experimental tasks utility) over the wire: the
//! capability in `initialize`, `execution.taskSupport` in `tools/list`, a `tools/call` with
//! `params.task` answered with the task, `tasks/get`, `tasks/result` (which waits),
//! `tasks/list` (paged), `tasks/cancel`, `notifications/tasks/status`, and this version's
//! own error codes, on stdio and over HTTP.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::time::Duration;

use crate::support::{Lines, get_streaming, http_session, post, serve_http};
use abilities::{AbilityError, Context, Server, ability};
use serde_json::{Value, json};

/// Sleep `ms`, then say so.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn nap(ctx: &Context, ms: u64) -> Result<Value, AbilityError> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!({"slept": ms})),
        () = ctx.cancellation().cancelled() => Err(AbilityError::new(abilities::ErrorCode::Cancelled, "stopped")),
    }
}

/// Runs only as a task.
#[ability(semantic = "EXECUTE", task = "required")]
async fn export(rows: u64) -> Value {
    json!({"exported": rows})
}

/// Fails as a tool error.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn broken() -> Result<Value, AbilityError> {
    Err(AbilityError::invalid("nothing to do"))
}

/// Asks whether to go on.
#[ability(semantic = "EXECUTE", task = "required")]
async fn ask_first(ctx: &Context) -> Result<Value, AbilityError> {
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let answer = ctx.ask("go").elicit("Go on?", schema).await?;
    Ok(json!({"answer": answer.content}))
}

/// Works on through a cancellation, then says it finished.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn stubborn() -> Value {
    tokio::time::sleep(Duration::from_millis(300)).await;
    json!({"finished": true})
}

/// Never a task.
#[ability(semantic = "READ")]
fn plain() -> Value {
    json!({"plain": true})
}

fn server() -> Server {
    builder!().build().expect("valid")
}

/// A 2025-11-25 HTTP session of a client declaring `capabilities`, initialized: its id and
/// the `initialize` answer.
async fn http_2025(addr: std::net::SocketAddr, capabilities: Value) -> (String, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"}
    }});
    let opened = post(addr, "/mcp", &[], init.to_string()).await;
    let session = opened.header("mcp-session-id").expect("a session");
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(addr, "/mcp", &headers, initialized.to_string()).await;
    (session, opened.message())
}

/// A stdio session's `initialize` of protocol `version`, and its answer.
async fn opened(server: &Server, version: &str) -> (Lines, Value) {
    let mut lines = Lines::start(server);
    let init = lines
        .request(
            1,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    (lines, init)
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args, "task": {"ttl": 60000}})
}

/// A task started on `lines` with `id`: its `task`.
async fn start(lines: &mut Lines, id: u64, name: &str, args: Value) -> Value {
    let created = lines.request(id, "tools/call", call(name, args)).await;
    assert!(created.get("error").is_none(), "{created}");
    created["result"]["task"].clone()
}

#[tokio::test]
async fn the_session_is_told_of_tasks_and_which_tools_run_as_one() {
    let server = server();
    let (mut lines, init) = opened(&server, "2025-11-25").await;
    assert_eq!(
        init["result"]["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{init}"
    );
    lines
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await;
    let listed = lines.request(2, "tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let support = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t.get("execution").cloned())
            .expect("listed")
    };
    assert_eq!(support("nap"), Some(json!({"taskSupport": "optional"})));
    assert_eq!(support("export"), Some(json!({"taskSupport": "required"})));
    assert_eq!(support("plain"), None, "absent means forbidden");

    // Another version is told of none of it.
    let (_, init) = opened(&server, "2025-06-18").await;
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "{init}"
    );
}

#[tokio::test]
async fn a_task_is_created_polled_listed_and_its_result_read() {
    let mut lines = Lines::initialized(&server()).await;
    let task = start(&mut lines, 2, "nap", json!({"ms": 300})).await;
    assert_eq!(task["status"], "working", "{task}");
    assert_eq!(task["ttl"], 3_600_000);
    assert_eq!(task["pollInterval"], 500);
    for key in ["createdAt", "lastUpdatedAt"] {
        let at = task[key].as_str().expect("a time");
        assert!(at.ends_with('Z') && at.contains('T'), "{key}: {at}");
    }
    assert!(task.get("statusMessage").is_none(), "{task}");
    let id = task["taskId"].as_str().expect("an id").to_owned();

    let polled = lines.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(polled["result"]["taskId"], id, "flat: {polled}");
    assert_eq!(polled["result"]["status"], "working");

    // `tasks/result` waits for the end, and carries the task it belongs to.
    let (before, result) = result_of(&mut lines, 4, &id).await;
    let result = &result["result"];
    assert_eq!(
        result["structuredContent"],
        json!({"result": {"slept": 300}}),
        "{result}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"],
        json!({"taskId": id})
    );
    assert!(
        result.get("resultType").is_none(),
        "not this version's: {result}"
    );
    lines
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/list", "params": {}}).to_string())
        .await;
    let (after, listed) = lines.until(5).await;
    // The session hears that the task ended (before or after the result: it is a hint).
    let status = before
        .iter()
        .chain(&after)
        .find(|m| m["method"] == "notifications/tasks/status")
        .expect("the status notification");
    assert_eq!(status["params"]["taskId"], id);
    assert_eq!(status["params"]["status"], "completed");

    let tasks = listed["result"]["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{listed}");
    assert_eq!(tasks[0]["taskId"], id);
    assert_eq!(tasks[0]["status"], "completed");
    assert!(listed["result"].get("nextCursor").is_none());
}

/// Send `tasks/result` with request id `n` and read until its answer: what came first,
/// and the answer.
async fn result_of(lines: &mut Lines, n: u64, id: &str) -> (Vec<Value>, Value) {
    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": n, "method": "tasks/result",
                    "params": {"taskId": id}})
            .to_string(),
        )
        .await;
    lines.until(n).await
}

#[tokio::test]
async fn a_tool_error_is_a_failed_task_whose_result_is_the_error() {
    let mut lines = Lines::initialized(&server()).await;
    let task = start(&mut lines, 2, "broken", json!({})).await;
    let id = task["taskId"].as_str().expect("an id").to_owned();
    let (_, result) = result_of(&mut lines, 3, &id).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let polled = lines.request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(polled["result"]["status"], "failed", "{polled}");
}

#[tokio::test]
async fn a_task_is_cancelled_once_and_has_no_result() {
    let mut lines = Lines::initialized(&server()).await;
    let task = start(&mut lines, 2, "nap", json!({"ms": 60000})).await;
    let id = task["taskId"].as_str().expect("an id").to_owned();
    let cancelled = lines
        .request(3, "tasks/cancel", json!({"taskId": id}))
        .await;
    assert_eq!(cancelled["result"]["taskId"], id, "{cancelled}");
    assert_eq!(cancelled["result"]["status"], "cancelled");
    let polled = lines.request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(polled["result"]["status"], "cancelled");
    let again = lines
        .request(5, "tasks/cancel", json!({"taskId": id}))
        .await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let (_, result) = result_of(&mut lines, 6, &id).await;
    assert_eq!(
        result["error"]["data"]["code"], "TASK_CANCELLED",
        "{result}"
    );
}

#[tokio::test]
async fn this_versions_errors_have_this_versions_codes() {
    let mut lines = Lines::initialized(&server()).await;
    let unknown = lines
        .request(2, "tasks/get", json!({"taskId": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let unknown = lines
        .request(3, "tasks/result", json!({"taskId": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let cursor = lines
        .request(4, "tasks/list", json!({"cursor": "made-up"}))
        .await;
    assert_eq!(cursor["error"]["code"], -32602, "{cursor}");
    let forbidden = lines
        .request(5, "tools/call", call("plain", json!({})))
        .await;
    assert_eq!(forbidden["error"]["code"], -32601, "{forbidden}");
    let required = lines
        .request(
            6,
            "tools/call",
            json!({"name": "export", "arguments": {"rows": 1}}),
        )
        .await;
    assert_eq!(required["error"]["code"], -32601, "{required}");
    // A plain call of an optional tool runs in its request.
    let plain = lines.call(7, "nap", json!({"ms": 1})).await;
    assert_eq!(
        plain["structuredContent"],
        json!({"result": {"slept": 1}}),
        "{plain}"
    );
}

#[tokio::test]
async fn a_callers_tasks_are_its_own() {
    let server = server();
    let mut mine = Lines::initialized(&server).await;
    let task = start(&mut mine, 2, "export", json!({"rows": 3})).await;
    let id = task["taskId"].as_str().expect("an id").to_owned();
    // Another caller (a 2025 HTTP session, authenticated as no one in particular, is a
    // different principal from stdio's local caller) sees nothing of it.
    let addr = serve_http(&server).await;
    let session = http_session(addr).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let get = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": id}});
    let theirs = post(addr, "/mcp", &headers, get.to_string())
        .await
        .message();
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/list", "params": {}});
    let listed = post(addr, "/mcp", &headers, list.to_string())
        .await
        .message();
    assert!(
        listed["result"]["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .all(|t| t["taskId"] != id),
        "{listed}"
    );
}

#[tokio::test]
async fn over_http_a_session_runs_a_task_to_its_result() {
    let addr = serve_http(&server()).await;
    let (session, init) = http_2025(addr, json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["tasks"]["requests"],
        json!({"tools": {"call": {}}}),
        "{init}"
    );
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let listed = post(addr, "/mcp", &headers, list.to_string())
        .await
        .message();
    let export = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "export")
        .cloned()
        .expect("export");
    assert_eq!(export["execution"]["taskSupport"], "required", "{export}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": call("export", json!({"rows": 7}))});
    let created = post(addr, "/mcp", &headers, body.to_string())
        .await
        .message();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let result = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
                        "params": {"taskId": id}});
    let result = post(addr, "/mcp", &headers, result.to_string())
        .await
        .message();
    assert_eq!(
        result["result"]["structuredContent"],
        json!({"result": {"exported": 7}}),
        "{result}"
    );
    let get = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": id}});
    let polled = post(addr, "/mcp", &headers, get.to_string())
        .await
        .message();
    assert_eq!(polled["result"]["status"], "completed", "{polled}");
}

#[tokio::test]
async fn the_list_is_paged_in_the_order_tasks_were_made() {
    let mut lines = Lines::initialized(&server()).await;
    let mut made = Vec::new();
    for n in 0..55 {
        let task = start(&mut lines, 10 + n, "export", json!({"rows": n})).await;
        made.push(task["taskId"].as_str().expect("an id").to_owned());
    }
    let first = lines.request(2, "tasks/list", json!({})).await;
    let page = first["result"]["tasks"].as_array().expect("tasks");
    assert_eq!(page.len(), 50, "{first}");
    let cursor = first["result"]["nextCursor"].as_str().expect("a next page");
    let second = lines
        .request(3, "tasks/list", json!({"cursor": cursor}))
        .await;
    let rest = second["result"]["tasks"].as_array().expect("tasks");
    assert_eq!(rest.len(), 5, "{second}");
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    let listed: Vec<&str> = page
        .iter()
        .chain(rest)
        .map(|t| t["taskId"].as_str().expect("an id"))
        .collect();
    let mut sorted = made.clone();
    sorted.sort();
    let mut seen: Vec<&str> = listed.clone();
    seen.sort_unstable();
    assert_eq!(
        seen,
        sorted.iter().map(String::as_str).collect::<Vec<_>>(),
        "each once"
    );
}

#[tokio::test]
async fn a_task_asks_its_session_and_waits_in_input_required() {
    let mut lines = Lines::initialized_with(&server(), json!({"elicitation": {}})).await;
    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": call("ask_first", json!({}))})
            .to_string(),
        )
        .await;
    let (mut before, created) = lines.until(2).await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("an id")
        .to_owned();
    // The question reaches the session as a request of its own, marked as the task's.
    let asked = loop {
        let message = match before.pop() {
            Some(message) => message,
            None => lines.next().await,
        };
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"],
        json!({"taskId": id}),
        "{asked}"
    );
    let polled = lines.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(polled["result"]["status"], "input_required", "{polled}");
    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": asked["id"],
                    "result": {"action": "accept", "content": {"go": true}}})
            .to_string(),
        )
        .await;
    let (_, result) = result_of(&mut lines, 4, &id).await;
    assert_eq!(
        result["result"]["structuredContent"],
        json!({"result": {"answer": {"go": true}}}),
        "{result}"
    );
}

#[tokio::test]
async fn over_http_a_tasks_question_reaches_the_sessions_stream() {
    let addr = serve_http(&server()).await;
    let (session, _) = http_2025(addr, json!({"elicitation": {}})).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut stream = get_streaming(addr, "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": call("ask_first", json!({}))});
    let created = post(addr, "/mcp", &headers, body.to_string())
        .await
        .message();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let asked = loop {
        let message = stream.next_message().await.expect("the question");
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id,
        "{asked}"
    );
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
                        "result": {"action": "accept", "content": {"go": false}}});
    let taken = post(addr, "/mcp", &headers, answer.to_string()).await;
    assert_eq!(taken.status, 202, "{taken:?}");
    let result = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
                        "params": {"taskId": id}});
    let result = post(addr, "/mcp", &headers, result.to_string())
        .await
        .message();
    assert_eq!(
        result["result"]["structuredContent"],
        json!({"result": {"answer": {"go": false}}}),
        "{result}"
    );
}

#[tokio::test]
async fn anonymous_sessions_see_only_their_own_tasks() {
    let addr = serve_http(&server()).await;
    let (mine, _) = http_2025(addr, json!({})).await;
    let (theirs, _) = http_2025(addr, json!({})).await;
    let headers = |session: &str| {
        [
            ("mcp-session-id", session.to_owned()),
            ("mcp-protocol-version", "2025-11-25".to_owned()),
        ]
    };
    let send = |session: String, body: Value| async move {
        let headers = headers(&session);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post(addr, "/mcp", &headers, body.to_string())
            .await
            .message()
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": call("export", json!({"rows": 1}))});
    let created = send(mine.clone(), body).await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/list", "params": {}});
    let listed = send(theirs.clone(), list.clone()).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": id}});
    let got = send(theirs, get.clone()).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    let own = send(mine.clone(), list).await;
    assert_eq!(own["result"]["tasks"][0]["taskId"], id.as_str(), "{own}");
    assert_eq!(send(mine, get).await["result"]["taskId"], id.as_str());
}

#[tokio::test]
async fn a_cancelled_task_stays_cancelled_whatever_its_handler_returns() {
    let mut lines = Lines::initialized(&server()).await;
    let task = start(&mut lines, 2, "stubborn", json!({})).await;
    let id = task["taskId"].as_str().expect("an id").to_owned();
    let cancelled = lines
        .request(3, "tasks/cancel", json!({"taskId": id}))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let polled = lines.request(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(polled["result"]["status"], "cancelled", "{polled}");
}

#[tokio::test]
async fn a_result_wait_the_client_cancels_ends_with_its_request() {
    let mut lines = Lines::initialized(&server()).await;
    let task = start(&mut lines, 2, "nap", json!({"ms": 60000})).await;
    let id = task["taskId"].as_str().expect("an id").to_owned();
    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
                    "params": {"taskId": id}})
            .to_string(),
        )
        .await;
    lines
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 3}})
            .to_string(),
        )
        .await;
    // The id is free again (once the abandoned wait has ended): a new request with it gets
    // its own answer, and nothing of the abandoned wait comes after.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let again = lines.request(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(again["result"]["taskId"], id.as_str(), "{again}");
    let (between, cancelled) = {
        lines
            .send(
                &json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel",
                        "params": {"taskId": id}})
                .to_string(),
            )
            .await;
        lines.until(4).await
    };
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(
        between.iter().all(|m| m["id"] != 3),
        "an answer to the abandoned wait: {between:?}"
    );
}

#[tokio::test]
async fn an_idempotency_key_on_a_task_call_is_refused_not_ignored() {
    let mut lines = Lines::initialized(&server()).await;
    let mut params = call("export", json!({"rows": 1}));
    params["_meta"] = json!({"io.github.abilities-rs/idempotencyKey": "k-1"});
    let refused = lines.request(2, "tools/call", params).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let listed = lines.request(3, "tasks/list", json!({})).await;
    assert_eq!(
        listed["result"]["tasks"],
        json!([]),
        "nothing ran: {listed}"
    );
}
