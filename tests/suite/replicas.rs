//! Stateless and scale-out, over HTTP with protocol 2026-07-28 requests: MCP-AQL confirmation
//! without sessions, tokens and idempotency keys shared by replicas that share a store and a
//! key, per-caller token limits, and HTTP sessions kept within bounds.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{post, request, serve_http};
use abilities::{
    AbilityError, Caller, Server, State, Surface, ability,
    auth::StaticTokens,
    config::{HttpConfig, LedgerConfig},
    protocol::IDEMPOTENCY_META_KEY,
    store::SqliteStore,
};
use serde::Serialize;
use serde_json::{Value, json};

const KEY: &[u8] = b"a shared key of at least 32 bytes, for every replica";

/// Notes, shared by the replicas of a test as a database would be.
#[derive(Clone, Default)]
struct Notes(Arc<NotesInner>);

#[derive(Default)]
struct NotesInner {
    created: AtomicU64,
    removed: Mutex<Vec<u64>>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Note {
    id: u64,
    title: String,
}

/// Add a note.
#[ability(semantic = "CREATE")]
fn add_note(notes: State<Notes>, title: String) -> Result<Note, AbilityError> {
    let id = notes.0.0.created.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(Note { id, title })
}

/// Remove a note.
#[ability(semantic = "DELETE")]
fn remove_note(notes: State<Notes>, id: u64) -> Result<bool, AbilityError> {
    notes.0.0.removed.lock().expect("not poisoned").push(id);
    Ok(true)
}

/// Fail after doing its work, as a handler that wrote and then broke.
#[ability(semantic = "CREATE")]
fn add_note_then_fail(notes: State<Notes>) -> Result<u64, AbilityError> {
    notes.0.0.created.fetch_add(1, Ordering::SeqCst);
    Err(AbilityError::internal(
        "the note was written, then the server failed",
    ))
}

fn replica(notes: &Notes, store: SqliteStore) -> Server {
    builder!()
        .surface(Surface::aql_semantic())
        .state(notes.clone())
        .store(store)
        .ledger(LedgerConfig::default().request_state_key(KEY))
        .build()
        .expect("valid")
}

/// A 2026-07-28 `tools/call` of `tool` from the client `client`.
fn call(id: u64, client: &str, tool: &str, arguments: Value, meta: Value) -> Value {
    let mut meta_map = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1.0"},
    });
    if let (Value::Object(all), Value::Object(extra)) = (&mut meta_map, meta) {
        all.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta_map}})
}

async fn send(addr: SocketAddr, message: &Value) -> Value {
    let name = message["params"]["name"].as_str().unwrap_or_default();
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ];
    let response = post(addr, "/mcp", &headers, message.to_string()).await;
    assert!(response.header("mcp-session-id").is_none(), "no session");
    response.message()
}

/// The MCP-AQL envelope of a 2026-07-28 call of `tool` from `client`, without `_meta` extras.
async fn aql(addr: SocketAddr, id: u64, client: &str, tool: &str, arguments: Value) -> Value {
    envelope(&send(addr, &call(id, client, tool, arguments, json!({}))).await)
}

/// The MCP-AQL envelope of a `tools/call` answer.
fn envelope(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer}"));
    serde_json::from_str(text).expect("JSON")
}

fn delete(id: u64, token: Option<&str>) -> Value {
    let mut params = json!({"id": id});
    if let Some(token) = token {
        params["_confirmation"] = json!(token);
    }
    json!({"operation": "remove_note", "params": params})
}

#[tokio::test]
async fn confirmation_works_without_sessions_on_2026_07_28() {
    let notes = Notes::default();
    let addr = serve_http(&replica(&notes, SqliteStore::memory().expect("a store"))).await;
    let asked = aql(addr, 1, "agent", "mcp_aql_delete", delete(7, None)).await;
    assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let token = asked["confirmation"]["token"].as_str().expect("a token");
    assert!(token.starts_with("conf_") && token.len() <= 80, "{token}");
    assert!(notes.0.removed.lock().expect("lock").is_empty());
    // Another client (another binding) cannot spend it.
    let stolen = aql(addr, 2, "other", "mcp_aql_delete", delete(7, Some(token))).await;
    assert_eq!(stolen["error"]["code"], "TOKEN_INVALID", "{stolen}");
    let other = aql(addr, 3, "agent", "mcp_aql_delete", delete(8, Some(token))).await;
    assert_eq!(other["error"]["code"], "TOKEN_SCOPE_MISMATCH", "{other}");
    // The same client's retry, in a new request without a session, goes through, once.
    let done = aql(addr, 4, "agent", "mcp_aql_delete", delete(7, Some(token))).await;
    assert_eq!(done, json!({"success": true, "data": true}));
    let again = aql(addr, 5, "agent", "mcp_aql_delete", delete(7, Some(token))).await;
    assert_eq!(again["error"]["code"], "TOKEN_ALREADY_USED", "{again}");
    assert_eq!(*notes.0.removed.lock().expect("lock"), [7]);
}

#[tokio::test]
async fn replicas_sharing_a_store_and_a_key_share_tokens_and_idempotency_keys() {
    let dir = std::env::temp_dir().join(format!("abilities-replicas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let db = dir.join("shared.db");
    let _ = std::fs::remove_file(&db);
    let notes = Notes::default();
    let store = || SqliteStore::open(&db).expect("the shared store");
    let a = serve_http(&replica(&notes, store())).await;
    let b = serve_http(&replica(&notes, store())).await;
    let c = serve_http(&replica(&notes, store())).await;

    // Issued by A, redeemed through B, refused when replayed through C.
    let asked = aql(a, 1, "agent", "mcp_aql_delete", delete(3, None)).await;
    let token = asked["confirmation"]["token"].as_str().expect("a token");
    let done = aql(b, 2, "agent", "mcp_aql_delete", delete(3, Some(token))).await;
    assert_eq!(done["success"], true, "{done}");
    let replayed = aql(c, 3, "agent", "mcp_aql_delete", delete(3, Some(token))).await;
    assert_eq!(
        replayed["error"]["code"], "TOKEN_ALREADY_USED",
        "{replayed}"
    );

    // A tools/call carrying an idempotency key runs once; its retry through another replica
    // gets the first answer; the key with other arguments is refused.
    let create = |title: &str| json!({"operation": "add_note", "params": {"title": title}});
    let key = json!({IDEMPOTENCY_META_KEY: "create-groceries-1"});
    let first = send(
        a,
        &call(
            4,
            "agent",
            "mcp_aql_create",
            create("groceries"),
            key.clone(),
        ),
    )
    .await;
    let retry = send(
        b,
        &call(
            5,
            "agent",
            "mcp_aql_create",
            create("groceries"),
            key.clone(),
        ),
    )
    .await;
    assert_eq!(first["result"], retry["result"]);
    assert_eq!(
        envelope(&first)["data"],
        json!({"id": 1, "title": "groceries"})
    );
    assert_eq!(notes.0.created.load(Ordering::SeqCst), 1);
    let conflict = send(
        c,
        &call(6, "agent", "mcp_aql_create", create("chores"), key),
    )
    .await;
    assert_eq!(conflict["error"]["code"], -32602, "{conflict}");
    assert_eq!(conflict["error"]["data"]["code"], "IDEMPOTENCY_CONFLICT");
    // Another client's same key is its own.
    let key = json!({IDEMPOTENCY_META_KEY: "create-groceries-1"});
    let theirs = send(
        c,
        &call(7, "other", "mcp_aql_create", create("chores"), key),
    )
    .await;
    assert_eq!(envelope(&theirs)["data"]["id"], 2);

    // MCP-AQL's own key, in the parameters: once across replicas, its retry answered alike.
    let keyed = |title: &str| json!({"operation": "add_note", "params": {"title": title, "_idempotency_key": "k-9"}});
    let first = aql(b, 8, "agent", "mcp_aql_create", keyed("laundry")).await;
    let retry = aql(c, 9, "agent", "mcp_aql_create", keyed("laundry")).await;
    assert_eq!(first, retry);
    assert_eq!(first["data"], json!({"id": 3, "title": "laundry"}));
    assert_eq!(notes.0.created.load(Ordering::SeqCst), 3);
    let other = aql(a, 10, "agent", "mcp_aql_create", keyed("dishes")).await;
    assert_eq!(other["error"]["code"], "IDEMPOTENCY_CONFLICT", "{other}");
    // A confirmation refusal frees its key: the confirmed retry with the same key runs.
    let del = |token: Option<&str>| {
        let mut op = delete(11, token);
        op["params"]["_idempotency_key"] = json!("del-11");
        op
    };
    let asked = aql(a, 11, "agent", "mcp_aql_delete", del(None)).await;
    let token = asked["confirmation"]["token"].as_str().expect("a token");
    let done = aql(b, 12, "agent", "mcp_aql_delete", del(Some(token))).await;
    assert_eq!(done["success"], true, "{done}");
    let retry = aql(c, 13, "agent", "mcp_aql_delete", del(Some(token))).await;
    assert_eq!(
        retry, done,
        "the retry gets the first outcome, not TOKEN_ALREADY_USED"
    );
    assert_eq!(*notes.0.removed.lock().expect("lock"), [3, 11]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `send`, as the caller of bearer `token`.
async fn send_as(addr: SocketAddr, token: &str, message: &Value) -> Value {
    let name = message["params"]["name"].as_str().unwrap_or_default();
    let bearer = format!("Bearer {token}");
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
        ("authorization", bearer.as_str()),
    ];
    post(addr, "/mcp", &headers, message.to_string())
        .await
        .message()
}

#[tokio::test]
async fn one_caller_cannot_use_up_another_callers_tokens() {
    let server = builder!()
        .surface(Surface::aql_semantic())
        .state(Notes::default())
        .authenticator(
            StaticTokens::new()
                .with_token("patient-secret", Caller::trusted("patient"))
                .with_token("greedy-secret", Caller::trusted("greedy"))
                .allow_anonymous(Caller::anonymous()),
        )
        .ledger(LedgerConfig::default().max_tokens_per_caller(3))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let ask =
        |id: u64, client: &str| call(id, client, "mcp_aql_delete", delete(id, None), json!({}));
    let theirs = envelope(&send_as(addr, "patient-secret", &ask(1, "app")).await);
    let token = theirs["confirmation"]["token"]
        .as_str()
        .expect("a token")
        .to_owned();
    for id in 2..=4 {
        let asked = envelope(&send_as(addr, "greedy-secret", &ask(id, "app")).await);
        assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED");
    }
    let refused = envelope(&send_as(addr, "greedy-secret", &ask(5, "app")).await);
    assert_eq!(refused["error"]["code"], "LIMIT_EXCEEDED", "{refused}");
    assert_eq!(refused["error"]["details"]["limit"], 3);
    let redeem = call(
        6,
        "app",
        "mcp_aql_delete",
        delete(1, Some(&token)),
        json!({}),
    );
    assert_eq!(
        envelope(&send_as(addr, "patient-secret", &redeem).await)["success"],
        true
    );

    // Anonymous callers of one client application cannot be told apart: none of them
    // holds a budget another could use up. The tokens stay bound to their client info.
    for id in 10..=15 {
        let asked = envelope(&send(addr, &ask(id, "phantom")).await);
        assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    }
    let another_user = envelope(&send(addr, &ask(16, "phantom")).await);
    let token = another_user["confirmation"]["token"]
        .as_str()
        .expect("a token, not LIMIT_EXCEEDED");
    let other_app = call(
        17,
        "other-app",
        "mcp_aql_delete",
        delete(16, Some(token)),
        json!({}),
    );
    assert_eq!(
        envelope(&send(addr, &other_app).await)["error"]["code"],
        "TOKEN_INVALID"
    );
    let redeem = call(
        18,
        "phantom",
        "mcp_aql_delete",
        delete(16, Some(token)),
        json!({}),
    );
    assert_eq!(envelope(&send(addr, &redeem).await)["success"], true);
}

fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
    }})
    .to_string()
}

async fn open(addr: SocketAddr, auth: &[(&str, &str)]) -> String {
    let response = post(addr, "/mcp", auth, initialize(1)).await;
    assert_eq!(response.status, 200, "{response:?}");
    response.header("mcp-session-id").expect("a session")
}

#[tokio::test]
async fn sessions_are_capped_expire_and_end_only_by_their_owner() {
    let server = builder!()
        .authenticator(
            StaticTokens::new()
                .with_token("ada-secret", Caller::trusted("ada"))
                .allow_anonymous(Caller::anonymous()),
        )
        .state(Notes::default())
        .http(
            HttpConfig::default()
                .max_sessions(2)
                .session_idle_timeout(Duration::from_millis(600)),
        )
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let ada = [("authorization", "Bearer ada-secret")];
    let adas = open(addr, &ada).await;
    let anonymous = open(addr, &[]).await;
    let full = post(addr, "/mcp", &[], initialize(9)).await;
    assert_eq!(full.status, 503, "{full:?}");
    let error = full.message();
    assert_eq!(error["id"], 9);
    assert_eq!(error["error"]["code"], -32000);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("Too many sessions")
    );
    // Requests that need no session are served as ever.
    let listed = call(2, "agent", "", json!({}), json!({}));
    let listed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                        "params": {"_meta": listed["params"]["_meta"]}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let listed = post(addr, "/mcp", &headers, listed.to_string()).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(listed.message()["result"]["tools"].is_array());

    // Only the caller that opened a session ends it; a second DELETE finds nothing.
    let end = |session: String, auth: Vec<(&'static str, &'static str)>| async move {
        let mut headers = auth;
        headers.push(("mcp-protocol-version", "2025-11-25"));
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (*k, *v))
            .chain([("mcp-session-id", session.as_str())])
            .collect();
        request(addr, "DELETE", "/mcp", &headers, "").await.status
    };
    assert_eq!(
        end(adas.clone(), vec![]).await,
        403,
        "an anonymous caller cannot end Ada's"
    );
    assert_eq!(
        end(adas.clone(), vec![("authorization", "Bearer ada-secret")]).await,
        204
    );
    assert_eq!(
        end(adas, vec![("authorization", "Bearer ada-secret")]).await,
        404
    );
    // A place is free again; idle sessions close by themselves.
    let _third = open(addr, &[]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        end(anonymous, vec![]).await,
        404,
        "the idle session expired"
    );
    let _ = open(addr, &[]).await;
    let _ = open(addr, &[]).await;
}

#[tokio::test]
async fn a_retry_differing_anywhere_is_refused_and_an_internal_error_is_replayed() {
    let notes = Notes::default();
    let addr = serve_http(&replica(&notes, SqliteStore::memory().expect("a store"))).await;
    // MCP-AQL merges top-level parameters in: a retry that changes one is another call.
    let top = |title: &str| json!({"operation": "add_note", "title": title, "params": {"_idempotency_key": "top-1"}});
    let first = aql(addr, 1, "agent", "mcp_aql_create", top("a")).await;
    assert_eq!(first["data"]["title"], "a", "{first}");
    let other = aql(addr, 2, "agent", "mcp_aql_create", top("b")).await;
    assert_eq!(other["error"]["code"], "IDEMPOTENCY_CONFLICT", "{other}");

    // The lenient surface answers a handler's internal error as a JSON-RPC error: the
    // handler may have written, so its retry gets the same error and does not run again.
    let server = builder!()
        .surface(Surface::Standard)
        .state(notes.clone())
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let before = notes.0.created.load(Ordering::SeqCst);
    let key = json!({IDEMPOTENCY_META_KEY: "fail-1"});
    let failing = |id| call(id, "agent", "add_note_then_fail", json!({}), key.clone());
    let first = send(addr, &failing(3)).await;
    assert_eq!(first["error"]["code"], -32603, "{first}");
    let retry = send(addr, &failing(4)).await;
    assert_eq!(retry["error"], first["error"]);
    assert_eq!(
        notes.0.created.load(Ordering::SeqCst),
        before + 1,
        "ran once"
    );
}

/// A 2026-07-28 `tools/call` from `client`, which declares elicitation, with `extra` params
/// (`requestState`, `inputResponses`).
fn eliciting(id: u64, client: &str, tool: &str, arguments: Value, extra: Value) -> Value {
    let capabilities = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let mut message = call(id, client, tool, arguments, capabilities);
    if let (Value::Object(params), Value::Object(extra)) = (&mut message["params"], extra) {
        params.extend(extra);
    }
    message
}

#[tokio::test]
async fn an_elicitation_round_issues_no_token_and_confirms_one_call() {
    let notes = Notes::default();
    // An authenticated caller, whose unspent tokens are counted against its limit.
    let server = builder!()
        .surface(Surface::aql_semantic())
        .state(notes.clone())
        .authenticator(StaticTokens::new().with_token("ada-secret", Caller::trusted("ada")))
        .ledger(LedgerConfig::default().max_tokens_per_caller(3))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let ada = |message: Value| async move { send_as(addr, "ada-secret", &message).await };
    // Ten rounds that ask through elicitation: each answers `input_required`, and none
    // leaves an unspent token behind.
    let mut state = String::new();
    for id in 1..=10 {
        let asked = ada(eliciting(
            id,
            "app",
            "mcp_aql_delete",
            delete(5, None),
            json!({}),
        ))
        .await;
        assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
        state = asked["result"]["requestState"]
            .as_str()
            .expect("a state")
            .to_owned();
    }
    // So the same caller without elicitation still gets a token (three are allowed).
    let plain = envelope(
        &ada(call(
            11,
            "app",
            "mcp_aql_delete",
            delete(6, None),
            json!({}),
        ))
        .await,
    );
    assert_eq!(plain["error"]["code"], "CONFIRMATION_REQUIRED", "{plain}");
    assert!(plain["confirmation"]["token"].is_string(), "{plain}");

    // The user confirms once: the call runs once.
    let confirmed = json!({
        "requestState": state,
        "inputResponses": {"elicitation-0": {"action": "accept", "content": {"confirm": true}}}
    });
    let done = ada(eliciting(
        12,
        "app",
        "mcp_aql_delete",
        delete(5, None),
        confirmed.clone(),
    ))
    .await;
    assert_eq!(envelope(&done), json!({"success": true, "data": true}));
    // Replaying the confirmed round does not run it again.
    let replayed = ada(eliciting(
        13,
        "app",
        "mcp_aql_delete",
        delete(5, None),
        confirmed,
    ))
    .await;
    assert_eq!(
        envelope(&replayed)["error"]["code"],
        "TOKEN_ALREADY_USED",
        "{replayed}"
    );
    assert_eq!(*notes.0.removed.lock().expect("lock"), [5]);
}

#[tokio::test]
async fn a_confirmation_answered_up_front_confirms_one_call() {
    let notes = Notes::default();
    let addr = serve_http(&replica(&notes, SqliteStore::memory().expect("a store"))).await;
    // The answer sent with the first request, before any question: the call runs once, and
    // the very same request sent again does not run it again.
    let up_front = json!({
        "inputResponses": {"elicitation-0": {"action": "accept", "content": {"confirm": true}}}
    });
    let done = send(
        addr,
        &eliciting(
            1,
            "agent",
            "mcp_aql_delete",
            delete(9, None),
            up_front.clone(),
        ),
    )
    .await;
    assert_eq!(
        envelope(&done),
        json!({"success": true, "data": true}),
        "{done}"
    );
    let replayed = send(
        addr,
        &eliciting(2, "agent", "mcp_aql_delete", delete(9, None), up_front),
    )
    .await;
    assert_eq!(
        envelope(&replayed)["error"]["code"],
        "TOKEN_ALREADY_USED",
        "{replayed}"
    );
    assert_eq!(*notes.0.removed.lock().expect("lock"), [9]);
}

#[tokio::test]
async fn each_confirmation_of_a_batch_confirms_its_own_operation_once() {
    let notes = Notes::default();
    let addr = serve_http(&replica(&notes, SqliteStore::memory().expect("a store"))).await;
    let both = json!({"operations": [
        {"operation": "remove_note", "params": {"id": 1}},
        {"operation": "remove_note", "params": {"id": 2}}
    ]});
    let asked = send(
        addr,
        &eliciting(1, "agent", "mcp_aql_delete", both.clone(), json!({})),
    )
    .await;
    let requests = &asked["result"]["inputRequests"];
    assert!(
        requests["elicitation-0"].is_object() && requests["elicitation-1"].is_object(),
        "{asked}"
    );
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    let confirmed = json!({
        "requestState": asked["result"]["requestState"],
        "inputResponses": {"elicitation-0": yes, "elicitation-1": yes}
    });
    let done = send(
        addr,
        &eliciting(
            2,
            "agent",
            "mcp_aql_delete",
            both.clone(),
            confirmed.clone(),
        ),
    )
    .await;
    let done = envelope(&done);
    assert_eq!(done["success"], true, "{done}");
    assert_eq!(*notes.0.removed.lock().expect("lock"), [1, 2], "{done}");
    // Replayed: neither runs again.
    let again = envelope(
        &send(
            addr,
            &eliciting(3, "agent", "mcp_aql_delete", both, confirmed),
        )
        .await,
    );
    assert_eq!(*notes.0.removed.lock().expect("lock"), [1, 2], "{again}");
}

/// Add a note once the user agrees.
#[ability(semantic = "CREATE")]
async fn add_note_asking(
    ctx: &abilities::Context,
    notes: State<Notes>,
    title: String,
) -> Result<Note, AbilityError> {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    ctx.elicit("Add it?", schema).await?;
    let id = notes.0.0.created.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(Note { id, title })
}

#[tokio::test]
async fn a_key_waits_through_the_rounds_of_its_call() {
    let notes = Notes::default();
    let addr = serve_http(&replica(&notes, SqliteStore::memory().expect("a store"))).await;
    let add = json!({"operation": "add_note_asking", "params": {"title": "asked"}});
    let key = json!({IDEMPOTENCY_META_KEY: "asked-1"});
    let with_key = |id: u64, extra: Value| {
        let mut message = eliciting(id, "agent", "mcp_aql_create", add.clone(), extra);
        message["params"]["_meta"][IDEMPOTENCY_META_KEY] = key[IDEMPOTENCY_META_KEY].clone();
        message
    };
    let asked = send(addr, &with_key(1, json!({}))).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    // The next round, with the answer and the same key, runs: the key did not keep the
    // question as the call's outcome.
    let answered = json!({
        "requestState": asked["result"]["requestState"],
        "inputResponses": {"elicitation-0": {"action": "accept", "content": {"ok": true}}}
    });
    let done = envelope(&send(addr, &with_key(2, answered.clone())).await);
    assert_eq!(done["data"], json!({"id": 1, "title": "asked"}), "{done}");
    // And its retry is that outcome, not a second note.
    let retry = envelope(&send(addr, &with_key(3, answered)).await);
    assert_eq!(retry, done);
    assert_eq!(notes.0.created.load(Ordering::SeqCst), 1);
}
