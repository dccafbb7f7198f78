//! Tasks on a store replicas share: a task whose replica stopped reads failed; what a task
//! running on another replica is asked (`tasks/update`, `tasks/cancel`) reaches it through
//! the store, and a listen stream on a third replica hears it; a store that carries no
//! signals refuses what it cannot deliver instead of acknowledging it.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{Replica, post, post_streaming, serve_http};
use abilities::{
    AbilityError, Context, ability,
    store::{SqliteStore, Store as _},
};
use serde_json::{Value, json};

/// Wait a little, then answer: slow enough to run in the background.
#[ability(semantic = "READ", task = "optional")]
async fn slow_answer() -> u64 {
    tokio::time::sleep(Duration::from_millis(50)).await;
    42
}

fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("in range")
}

/// A raw 2026-07-28 request of a client declaring the tasks extension.
async fn tasks_request(addr: SocketAddr, id: u64, method: &str, task: &str) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"taskId": task,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {
                      "extensions": {"io.modelcontextprotocol/tasks": {}}}}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", task),
    ];
    post(addr, "/mcp", &headers, message.to_string())
        .await
        .message()
}

#[tokio::test]
async fn a_task_whose_replica_stopped_reads_failed_and_one_running_elsewhere_is_not_acknowledged() {
    let store = Arc::new(SqliteStore::memory().expect("a store"));
    let server = builder!()
        .store(Replica::alone(Arc::clone(&store)))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let now = now_ms();
    let record = |id: &str, alive_at_ms: u64| abilities::store::TaskRecord {
        id: id.to_owned(),
        owner: "anonymous".to_owned(),
        status: abilities::store::TaskStatus::Working,
        status_message: None,
        created_at_ms: now - 60_000,
        updated_at_ms: now - 60_000,
        alive_at_ms,
        ttl_ms: 3_600_000,
        poll_interval_ms: 500,
        input_requests: None,
        result: None,
        error: None,
    };
    // One replica stopped a minute ago; another marked its task alive just now.
    store
        .insert_task(
            record("abandoned", now - 60_000),
            abilities::store::TaskLimits::NONE,
        )
        .await
        .expect("inserted");
    store
        .insert_task(record("elsewhere", now), abilities::store::TaskLimits::NONE)
        .await
        .expect("inserted");

    let abandoned = tasks_request(addr, 1, "tasks/get", "abandoned").await;
    assert_eq!(abandoned["result"]["status"], "failed", "{abandoned}");
    let message = abandoned["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("stopped"), "{abandoned}");
    let stored = store.task("abandoned").await.expect("read").expect("kept");
    assert_eq!(
        stored.status,
        abilities::store::TaskStatus::Failed,
        "recorded as failed"
    );

    let elsewhere = tasks_request(addr, 2, "tasks/get", "elsewhere").await;
    assert_eq!(elsewhere["result"]["status"], "working", "{elsewhere}");
    let cancel = tasks_request(addr, 3, "tasks/cancel", "elsewhere").await;
    assert_eq!(cancel["error"]["code"], -32000, "{cancel}");
    assert_eq!(cancel["error"]["data"]["code"], "TASK_ON_ANOTHER_REPLICA");
    // A finished task is answered wherever it ran.
    let cancel = tasks_request(addr, 4, "tasks/cancel", "abandoned").await;
    assert!(cancel.get("error").is_none(), "{cancel}");
}

/// Ask whether to go on, as a task; then answer with what was said.
#[ability(semantic = "EXECUTE", task = "required")]
async fn ask_then_answer(ctx: &Context) -> Result<Value, AbilityError> {
    ctx.background().await;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let answer = ctx.ask("go").elicit("Go on?", schema).await?;
    Ok(json!({"answer": answer.content}))
}

/// Sleep for a minute, as a task.
#[ability(semantic = "EXECUTE", task = "required")]
async fn sleep_a_minute(ctx: &Context) -> u8 {
    ctx.background().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    1
}

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}}}"#;

/// A raw 2026-07-28 request with `params`, of a client declaring tasks and elicitation.
async fn request(addr: SocketAddr, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = serde_json::from_str(META).expect("JSON");
    let name = ["name", "taskId"]
        .iter()
        .find_map(|k| params[*k].as_str())
        .unwrap_or_default()
        .to_owned();
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    post(addr, "/mcp", &headers, message.to_string())
        .await
        .message()
}

/// Poll `tasks/get` through `addr` until the task's status is `status`, for at most 10 s.
async fn until(addr: SocketAddr, task: &str, status: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = request(addr, 99, "tasks/get", json!({"taskId": task})).await;
        let result = got["result"].clone();
        if result["status"] == status {
            return result;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still not {status} after 10 s: {got}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn update_cancel_and_listen_reach_a_task_on_another_replica() {
    let store = Arc::new(SqliteStore::memory().expect("a store"));
    let mut replicas = Replica::set(&store, 3).into_iter();
    let mut serve = || {
        let server = builder!()
            .store(replicas.next().expect("a replica"))
            .build()
            .expect("valid");
        async move { serve_http(&server).await }
    };
    let (a, b, c) = (serve().await, serve().await, serve().await);

    // Started on A; followed from C.
    let created = request(a, 1, "tools/call", json!({"name": "ask_then_answer"})).await;
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    let mut meta: Value = serde_json::from_str(META).expect("JSON");
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let listen = json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
        "params": {"notifications": {"taskIds": [task]}, "_meta": meta}});
    let mut stream = post_streaming(
        c,
        "/mcp",
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ],
        listen.to_string(),
    )
    .await;
    until(b, &task, "input_required").await;

    // Answered through B: A's handler gets the answer and finishes.
    let answers = json!({"go": {"action": "accept", "content": {"go": true}}});
    let updated = request(
        b,
        3,
        "tasks/update",
        json!({"taskId": task, "inputResponses": answers}),
    )
    .await;
    assert!(updated.get("error").is_none(), "{updated}");
    let done = until(c, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": {"answer": {"go": true}}}),
        "{done}"
    );
    // The listen stream on C heard the task, which ran on A, to its end.
    let mut heard = Vec::new();
    while let Some(message) = stream.next_message().await {
        if message["method"] == "notifications/tasks" {
            let status = message["params"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            heard.push(status.clone());
            if status == "completed" {
                break;
            }
        }
    }
    assert_eq!(
        heard.last().map(String::as_str),
        Some("completed"),
        "{heard:?}"
    );
    drop(stream);

    // Cancelled through B, read through C.
    let created = request(a, 4, "tools/call", json!({"name": "sleep_a_minute"})).await;
    let task = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let cancelled = request(b, 5, "tasks/cancel", json!({"taskId": task})).await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let ended = until(c, &task, "cancelled").await;
    assert_eq!(ended["status"], "cancelled");
}
