//! Tasks on a store replicas share: a task whose replica stopped reads failed, and what a
//! task running on another replica is asked (`tasks/cancel`) is refused, not acknowledged.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abilities::{Server, SqliteStore, Store as _, ability};
use serde_json::{Value, json};
use support::{Shared, post, serve_http};

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
    let server = Server::builder()
        .store(Shared(Arc::clone(&store)))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let now = now_ms();
    let record = |id: &str, alive_at_ms: u64| abilities::TaskRecord {
        id: id.to_owned(),
        owner: "anonymous".to_owned(),
        status: abilities::TaskStatus::Working,
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
            abilities::TaskLimits::NONE,
        )
        .await
        .expect("inserted");
    store
        .insert_task(record("elsewhere", now), abilities::TaskLimits::NONE)
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
        abilities::TaskStatus::Failed,
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
