//! Idempotency keys under a hostile client: a key is freed by every refusal that happens
//! before a handler starts, on every surface, and one key means one thing per caller
//! whether it came in `_meta` or among MCP-AQL's parameters.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::support::{post, serve_http};
use abilities::{Server, State, Surface, ability, protocol::IDEMPOTENCY_META_KEY};
use serde::Serialize;
use serde_json::{Value, json};

/// Rows written, shared by the abilities as a database would be.
#[derive(Clone, Default)]
struct Rows(Arc<AtomicU64>);

#[derive(Serialize, schemars::JsonSchema)]
struct Row {
    id: u64,
    title: String,
}

/// Write a row.
#[ability(semantic = "CREATE")]
fn write_row(rows: State<Rows>, title: String) -> Row {
    let id = rows.0.0.fetch_add(1, Ordering::SeqCst) + 1;
    Row { id, title }
}

/// Wipe every row (destructive: MCP-AQL asks for confirmation).
#[ability(semantic = "DELETE")]
fn wipe_rows(rows: State<Rows>, scope: String) -> u64 {
    let _ = scope;
    rows.0.0.swap(0, Ordering::SeqCst)
}

fn server(rows: &Rows, surface: Surface) -> Server {
    builder!()
        .surface(surface)
        .state(rows.clone())
        .state(Started::default())
        .build()
        .expect("valid")
}

/// A 2026-07-28 `tools/call` of `tool` with an idempotency key in `_meta`, if any.
fn call(id: u64, tool: &str, arguments: Value, key: Option<&str>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "retrier", "version": "1.0"},
    });
    if let Some(key) = key {
        meta[IDEMPOTENCY_META_KEY] = json!(key);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta}})
}

async fn send(addr: SocketAddr, message: &Value) -> Value {
    let name = message["params"]["name"].as_str().unwrap_or_default();
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ];
    post(addr, "/mcp", &headers, message.to_string())
        .await
        .message()
}

/// The JSON of a result's text block.
fn text(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer}"));
    serde_json::from_str(text).expect("JSON")
}

#[tokio::test]
async fn invalid_arguments_free_the_key_on_the_native_and_standard_surfaces() {
    for surface in [Surface::Native, Surface::Standard] {
        let rows = Rows::default();
        let addr = serve_http(&server(&rows, surface.clone())).await;
        let refused = send(
            addr,
            &call(1, "write_row", json!({"title": 5}), Some("k-1")),
        )
        .await;
        let code = match surface {
            Surface::Standard => refused["error"]["data"]["code"].clone(),
            _ => text(&refused)["code"].clone(),
        };
        assert_eq!(code, "VALIDATION_INVALID_TYPE", "{surface:?}: {refused}");
        // The corrected retry with the same key runs, once.
        let done = send(
            addr,
            &call(2, "write_row", json!({"title": "a"}), Some("k-1")),
        )
        .await;
        assert_eq!(
            done["result"]["structuredContent"],
            json!({"id": 1, "title": "a"}),
            "{surface:?}: {done}"
        );
        let again = send(
            addr,
            &call(3, "write_row", json!({"title": "a"}), Some("k-1")),
        )
        .await;
        assert_eq!(again["result"], done["result"]);
        assert_eq!(rows.0.load(Ordering::SeqCst), 1, "{surface:?}");
        // An unknown tool frees the key too.
        let unknown = send(addr, &call(4, "no_such_tool", json!({}), Some("k-2"))).await;
        assert!(unknown["error"].is_object(), "{unknown}");
        let done = send(
            addr,
            &call(5, "write_row", json!({"title": "b"}), Some("k-2")),
        )
        .await;
        assert_eq!(done["result"]["structuredContent"]["id"], 2, "{done}");
    }
}

#[tokio::test]
async fn a_confirmation_refusal_frees_a_meta_key_on_mcp_aql() {
    let rows = Rows::default();
    let addr = serve_http(&server(&rows, Surface::aql_semantic())).await;
    let write = json!({"operation": "write_row", "params": {"title": "x"}});
    send(addr, &call(1, "mcp_aql_create", write, None)).await;
    let wipe = |token: Option<&str>| {
        let mut params = json!({"scope": "all"});
        if let Some(token) = token {
            params["_confirmation"] = json!(token);
        }
        json!({"operation": "wipe_rows", "params": params})
    };
    let asked = text(&send(addr, &call(2, "mcp_aql_delete", wipe(None), Some("w-1"))).await);
    assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let token = asked["confirmation"]["token"].as_str().expect("a token");
    let done = text(
        &send(
            addr,
            &call(3, "mcp_aql_delete", wipe(Some(token)), Some("w-1")),
        )
        .await,
    );
    assert_eq!(done, json!({"success": true, "data": 1}), "{done}");
    assert_eq!(rows.0.load(Ordering::SeqCst), 0);
    // Its retry is the first answer, not a spent token.
    let retry = text(
        &send(
            addr,
            &call(4, "mcp_aql_delete", wipe(Some(token)), Some("w-1")),
        )
        .await,
    );
    assert_eq!(retry, done);
    // Invalid parameters free an MCP-AQL key as well.
    let invalid =
        json!({"operation": "write_row", "params": {"title": 5, "_idempotency_key": "p-1"}});
    let refused = text(&send(addr, &call(5, "mcp_aql_create", invalid, None)).await);
    assert_eq!(
        refused["error"]["code"], "VALIDATION_INVALID_TYPE",
        "{refused}"
    );
    let valid =
        json!({"operation": "write_row", "params": {"title": "y", "_idempotency_key": "p-1"}});
    let written = text(&send(addr, &call(6, "mcp_aql_create", valid, None)).await);
    assert_eq!(written["data"]["title"], "y", "{written}");
}

#[tokio::test]
async fn one_key_in_both_places_is_one_key() {
    let rows = Rows::default();
    let addr = serve_http(&server(&rows, Surface::aql_semantic())).await;
    let create = |title: &str, key: Option<&str>| {
        let mut params = json!({"title": title});
        if let Some(key) = key {
            params["_idempotency_key"] = json!(key);
        }
        json!({"operation": "write_row", "params": params})
    };
    // The same key in _meta and among the parameters: one claim, the call runs.
    let first = text(
        &send(
            addr,
            &call(1, "mcp_aql_create", create("a", Some("k")), Some("k")),
        )
        .await,
    );
    assert_eq!(first["data"], json!({"id": 1, "title": "a"}), "{first}");
    // Its retries, with the key in either place or both, get that answer.
    for (id, params_key, meta_key) in [
        (2, Some("k"), Some("k")),
        (3, Some("k"), None),
        (4, None, Some("k")),
    ] {
        let retry = text(
            &send(
                addr,
                &call(id, "mcp_aql_create", create("a", params_key), meta_key),
            )
            .await,
        );
        assert_eq!(retry, first, "{params_key:?} {meta_key:?}");
    }
    assert_eq!(rows.0.load(Ordering::SeqCst), 1);
    // The key with other parameters is refused, as a JSON-RPC error when it came in _meta
    // (as on every surface) and in the envelope when among the parameters; two different
    // keys are refused.
    let other = send(
        addr,
        &call(5, "mcp_aql_create", create("b", None), Some("k")),
    )
    .await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    assert_eq!(
        other["error"]["data"]["code"], "IDEMPOTENCY_CONFLICT",
        "{other}"
    );
    let other = text(
        &send(
            addr,
            &call(5, "mcp_aql_create", create("b", Some("k")), None),
        )
        .await,
    );
    assert_eq!(other["error"]["code"], "IDEMPOTENCY_CONFLICT", "{other}");
    let two = send(
        addr,
        &call(6, "mcp_aql_create", create("b", Some("k2")), Some("k3")),
    )
    .await;
    assert_eq!(
        two["error"]["data"]["code"], "VALIDATION_INVALID_VALUE",
        "{two}"
    );
    // A batch under a _meta key whose operation names the same key runs once, and replays.
    let batch = json!({"operations": [
        {"operation": "write_row", "params": {"title": "c", "_idempotency_key": "b-1"}}
    ]});
    let ran = text(&send(addr, &call(7, "mcp_aql_create", batch.clone(), Some("b-1"))).await);
    assert_eq!(ran["success"], true, "{ran}");
    let replay = text(&send(addr, &call(8, "mcp_aql_create", batch, Some("b-1"))).await);
    assert_eq!(replay, ran);
    assert_eq!(rows.0.load(Ordering::SeqCst), 2);
}

/// A row that cannot be written: the handler starts, then fails.
#[ability(semantic = "CREATE")]
fn fail_row(title: String) -> Result<Row, abilities::AbilityError> {
    Err(abilities::AbilityError::internal(format!(
        "the row '{title}' could not be written"
    )))
}

/// Calls that started and never end, and a signal that one has started.
#[derive(Clone, Default)]
struct Started(Arc<tokio::sync::Notify>);

/// Write a row, slowly: it never finishes.
#[ability(semantic = "CREATE")]
async fn slow_row(started: State<Started>, title: String) -> Row {
    started.0.0.notify_one();
    std::future::pending::<()>().await;
    Row { id: 0, title }
}

fn on_store(
    rows: &Rows,
    started: &Started,
    store: crate::support::Replica,
    lease: Duration,
) -> Server {
    builder!()
        .state(rows.clone())
        .state(started.clone())
        .store(store)
        .ledger(abilities::config::LedgerConfig::default().idempotency_lease(lease))
        .build()
        .expect("valid")
}

/// The store fails between the call's effect and the record of its outcome: the answer goes
/// out, the outcome is recorded once the store is back, and a retry gets that first answer
/// (never a second run, and never "in progress" once it is recorded), for a result and for
/// an error alike.
#[tokio::test]
async fn an_outcome_the_store_failed_to_record_is_recorded_once_it_is_back() {
    let failures = Arc::new(std::sync::atomic::AtomicU32::new(3));
    let store = Arc::new(abilities::store::SqliteStore::memory().expect("a store"));
    let rows = Rows::default();
    let replica = crate::support::Replica::failing_settles(store, Arc::clone(&failures));
    let addr = serve_http(&on_store(
        &rows,
        &Started::default(),
        replica,
        Duration::from_secs(30),
    ))
    .await;
    let first = send(
        addr,
        &call(1, "write_row", json!({"title": "a"}), Some("k")),
    )
    .await;
    assert_eq!(
        first["result"]["structuredContent"],
        json!({"id": 1, "title": "a"}),
        "{first}"
    );
    // Until the record lands a retry hears the call is in progress; then it gets the answer.
    let mut replayed = None;
    for attempt in 2..60 {
        let retry = send(
            addr,
            &call(attempt, "write_row", json!({"title": "a"}), Some("k")),
        )
        .await;
        if retry["result"].is_object() {
            replayed = Some(retry);
            break;
        }
        assert_eq!(
            retry["error"]["data"]["code"], "IDEMPOTENCY_IN_PROGRESS",
            "{retry}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let replayed = replayed.expect("the outcome is recorded once the store is back");
    assert_eq!(replayed["result"], first["result"]);
    assert_eq!(rows.0.load(Ordering::SeqCst), 1, "the call ran once");
    assert_eq!(failures.load(Ordering::SeqCst), 0);

    // A handler that failed while the store was down: its retries get the same error.
    failures.store(2, Ordering::SeqCst);
    let failed = send(
        addr,
        &call(70, "fail_row", json!({"title": "b"}), Some("f")),
    )
    .await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let mut same = None;
    for attempt in 71..130 {
        let retry = send(
            addr,
            &call(attempt, "fail_row", json!({"title": "b"}), Some("f")),
        )
        .await;
        if retry["error"]["data"]["code"] != "IDEMPOTENCY_IN_PROGRESS" {
            same = Some(retry);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let same = same.expect("the error is recorded once the store is back");
    assert_eq!(same["result"], failed["result"]);
}

/// The server running a call stops (its runtime is gone, as a process killed with `kill -9`
/// is) before it records the outcome: while its lease lasts a retry on another replica hears
/// the call is in progress; once the lease runs out, that whether the call took effect is
/// unknown, never that it may still be running.
#[tokio::test]
async fn a_claim_whose_server_stopped_is_an_unknown_outcome() {
    let store = Arc::new(abilities::store::SqliteStore::memory().expect("a store"));
    let lease = Duration::from_millis(1500);
    let (rows, started) = (Rows::default(), Started::default());
    let doomed = on_store(
        &rows,
        &started,
        crate::support::Replica::alone(Arc::clone(&store)),
        lease,
    );
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let (kill_tx, kill_rx) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let addr = serve_http(&doomed).await;
            // The call's handler runs on this runtime, and never ends.
            let slow = call(1, "slow_row", json!({"title": "a"}), Some("dies"));
            tokio::spawn(async move { send(addr, &slow).await });
            let _ = addr_tx.send(addr);
            let _ = tokio::task::spawn_blocking(move || kill_rx.recv()).await;
        });
        // Every task of the doomed server ends here, its lease's renewals with them.
        drop(runtime);
    });
    addr_rx.await.expect("the doomed server listens");
    tokio::time::timeout(Duration::from_secs(20), started.0.notified())
        .await
        .expect("the handler starts");
    // Renewed while it runs: past its first lease, still in progress.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let survivor = on_store(
        &rows,
        &Started::default(),
        crate::support::Replica::alone(Arc::clone(&store)),
        lease,
    );
    let addr = serve_http(&survivor).await;
    let retry = call(2, "slow_row", json!({"title": "a"}), Some("dies"));
    let running = send(addr, &retry).await;
    assert_eq!(
        running["error"]["data"]["code"], "IDEMPOTENCY_IN_PROGRESS",
        "{running}"
    );
    kill_tx.send(()).expect("the doomed server waits");
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .expect("joined")
        .expect("the doomed server's thread ends");
    tokio::time::sleep(lease + Duration::from_millis(300)).await;
    let unknown = send(addr, &retry).await;
    assert_eq!(
        unknown["error"]["data"]["code"], "IDEMPOTENCY_OUTCOME_UNKNOWN",
        "{unknown}"
    );
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("whether the call took effect is unknown")
            && message.contains("use a new key"),
        "{message}"
    );
    // Still that call's key: it does not run again.
    let again = send(addr, &retry).await;
    assert_eq!(again["error"], unknown["error"]);
}

#[tokio::test]
async fn without_the_idempotency_link_a_key_is_refused_never_ignored() {
    use abilities::middleware::{Builtin, Chain};
    let chain = || Chain::default().without(Builtin::Idempotency);
    // The native surface: a key in `_meta` is a JSON-RPC error naming it; nothing runs.
    let rows = Rows::default();
    let native = builder!()
        .state(rows.clone())
        .state(Started::default())
        .chain(chain())
        .build()
        .expect("valid");
    let addr = serve_http(&native).await;
    let refused = send(
        addr,
        &call(1, "write_row", json!({"title": "a"}), Some("k-1")),
    )
    .await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("keeps no idempotency keys") && message.contains(IDEMPOTENCY_META_KEY),
        "{refused}"
    );
    assert_eq!(
        refused["error"]["data"]["details"]["reason"], "idempotency_not_kept",
        "{refused}"
    );
    assert_eq!(
        rows.0.load(Ordering::SeqCst),
        0,
        "a refused call wrote nothing"
    );
    let plain = send(addr, &call(2, "write_row", json!({"title": "a"}), None)).await;
    assert_eq!(plain["result"]["structuredContent"]["id"], 1, "{plain}");

    // MCP-AQL: `_idempotency_key` among the parameters is refused as well.
    let rows = Rows::default();
    let aql = builder!()
        .surface(Surface::aql_semantic())
        .state(rows.clone())
        .state(Started::default())
        .chain(chain())
        .build()
        .expect("valid");
    let addr = serve_http(&aql).await;
    let keyed =
        json!({"operation": "write_row", "params": {"title": "y", "_idempotency_key": "p-1"}});
    let refused = text(&send(addr, &call(3, "mcp_aql_create", keyed, None)).await);
    assert_eq!(
        refused["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{refused}"
    );
    assert_eq!(
        refused["error"]["details"]["reason"], "idempotency_not_kept",
        "{refused}"
    );
    assert_eq!(rows.0.load(Ordering::SeqCst), 0);
    let plain = json!({"operation": "write_row", "params": {"title": "y"}});
    let written = text(&send(addr, &call(4, "mcp_aql_create", plain, None)).await);
    assert_eq!(written["data"]["title"], "y", "{written}");
}

#[tokio::test]
async fn a_key_beside_a_batchs_operations_is_refused_not_dropped() {
    let rows = Rows::default();
    let addr = serve_http(&server(&rows, Surface::aql_single())).await;
    let batch = json!({
        "operations": [{"operation": "write_row", "params": {"title": "a"}}],
        "_idempotency_key": "b-1"
    });
    let refused = text(&send(addr, &call(1, "mcp_aql", batch, None)).await);
    assert_eq!(
        refused["error"]["code"], "VALIDATION_UNKNOWN_PARAM",
        "{refused}"
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("in _meta"), "{refused}");
    assert_eq!(rows.0.load(Ordering::SeqCst), 0, "nothing ran");
}
