//! Protocol 2025 sessions on replicas that share a store, reached as a round-robin balancer
//! would send them: a session opened on one replica is served by every other, ended by a
//! `DELETE` on any (then `404` on all), what its client sets through one replica (its log
//! level, its subscriptions) holds on the others, and its answer to a call's question that
//! lands on another replica reaches the call.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{HttpResponse, Replica, post, request, serve_http};
use abilities::client::LogLevel;
use abilities::resource::ResourceNotifier;
use abilities::store::{SqliteStore, Store as _};
use abilities::{AbilityError, Context, State, ability, protocol::IDEMPOTENCY_META_KEY};
use serde_json::{Value, json};

/// The current motto.
#[ability(semantic = "READ", resource = "site://motto", mime_type = "text/plain")]
fn motto(current: State<Mutex<String>>) -> String {
    current.lock().map(|m| m.clone()).unwrap_or_default()
}

/// The site's name.
#[ability(semantic = "READ", resource = "site://name", mime_type = "text/plain")]
fn site_name() -> &'static str {
    "Replicas"
}

/// Change the motto and tell subscribers.
#[ability(semantic = "UPDATE", flatten)]
async fn set_motto(
    motto: String,
    current: State<Mutex<String>>,
    notifier: State<ResourceNotifier>,
) -> usize {
    if let Ok(mut m) = current.lock() {
        *m = motto;
    }
    notifier.updated("site://motto").await
}

/// Log one line at each of two levels, then answer.
#[ability(semantic = "READ")]
async fn chatty(ctx: &Context) -> &'static str {
    ctx.log(LogLevel::Debug, "a detail").await;
    ctx.log(LogLevel::Warning, "a warning").await;
    "said"
}

/// Ask the user for a name.
#[ability(semantic = "EXECUTE")]
async fn ask_name(ctx: &Context) -> Result<Value, AbilityError> {
    let answer = ctx
        .elicit(
            "Who are you?",
            json!({"type": "object", "properties": {"username": {"type": "string"}}}),
        )
        .await?;
    Ok(json!({"content": answer.content}))
}

/// Count one more (each replica counts from its own hundred).
#[ability(semantic = "CREATE")]
fn bump(counter: State<AtomicU64>) -> u64 {
    counter.fetch_add(1, Ordering::SeqCst) + 1
}

/// Three replicas on one store, each serving `/mcp` on a port of its own.
async fn replicas() -> (Arc<SqliteStore>, Vec<SocketAddr>) {
    let (store, addrs, _) = servers().await;
    (store, addrs)
}

/// Three replicas on one store, and their servers.
async fn servers() -> (Arc<SqliteStore>, Vec<SocketAddr>, Vec<abilities::Server>) {
    servers_with(abilities::config::HttpConfig::default()).await
}

/// Three replicas on one store, each with `http`'s limits, and their servers.
async fn servers_with(
    http: abilities::config::HttpConfig,
) -> (Arc<SqliteStore>, Vec<SocketAddr>, Vec<abilities::Server>) {
    let store = Arc::new(SqliteStore::memory().expect("a store"));
    let (mut addrs, mut servers) = (Vec::new(), Vec::new());
    for (n, replica) in (0..).zip(Replica::set(&store, 3)) {
        let server = builder!()
            .http(http.clone())
            .store(replica)
            .state(Mutex::new("Ship it".to_owned()))
            .state(AtomicU64::new(100 * n))
            .build()
            .expect("valid");
        addrs.push(serve_http(&server).await);
        servers.push(server.clone());
        // The server lives as long as its endpoint does.
        std::mem::forget(server);
    }
    (store, addrs, servers)
}

/// `initialize` on `addr`: the new session's id.
async fn open(addr: SocketAddr) -> String {
    open_with(addr, json!({})).await
}

/// `initialize` on `addr` of a client declaring `capabilities`: the new session's id.
async fn open_with(addr: SocketAddr, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "round-robin", "version": "1"}}});
    let response = post(addr, "/mcp", &[], init.to_string()).await;
    assert_eq!(response.status, 200, "{response:?}");
    response.header("mcp-session-id").expect("a session id")
}

/// `message` in `session`, sent to `addr`.
async fn send(addr: SocketAddr, session: &str, message: Value) -> HttpResponse {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post(addr, "/mcp", &headers, message.to_string()).await
}

/// The request `method` with `params` and `id` in `session`, sent to `addr`: its messages.
async fn ask(addr: SocketAddr, session: &str, id: u64, method: &str, params: Value) -> Vec<Value> {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let response = send(addr, session, message).await;
    assert_eq!(response.status, 200, "{method} on {addr}: {response:?}");
    response.messages()
}

/// The answer (the message with `id`) among `messages`.
fn answer(messages: &[Value], id: u64) -> &Value {
    messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no answer {id} in {messages:?}"))
}

/// The headers of a `GET` of `session`'s stream.
fn stream_headers(session: &str) -> [(&str, &str); 3] {
    [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
        ("accept", "text/event-stream"),
    ]
}

/// `DELETE` of `session` at `addr`.
async fn delete(addr: SocketAddr, session: &str) -> HttpResponse {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    request(addr, "DELETE", "/mcp", &headers, "").await
}

#[tokio::test]
async fn a_session_opened_on_one_replica_is_served_by_every_other() {
    let (store, r) = replicas().await;
    let session = open(r[0]).await;
    // The record is in the store, with the client's `initialize`.
    let record = store
        .session(&session, 0)
        .await
        .expect("the store answers")
        .expect("the session is kept");
    assert_eq!(
        record.state["initialize"]["clientInfo"]["name"],
        "round-robin"
    );
    assert_eq!(record.state["anonymous"], true);

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(r[1], &session, initialized).await.status, 202);
    let listed = ask(r[2], &session, 1, "tools/list", json!({})).await;
    let names: Vec<&str> = answer(&listed, 1)["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"chatty"), "{names:?}");
    let called = ask(
        r[1],
        &session,
        2,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(
        answer(&called, 2)["result"]["structuredContent"],
        json!({"result": "said"})
    );
    // The replica that opened it still serves it.
    let listed = ask(r[0], &session, 3, "tools/list", json!({})).await;
    assert!(answer(&listed, 3)["result"]["tools"].is_array());
}

#[tokio::test]
async fn a_session_ended_on_any_replica_is_gone_from_all() {
    let (store, r) = replicas().await;
    let session = open(r[0]).await;
    // Served on the second replica too, so both hold it.
    let listed = ask(r[1], &session, 1, "tools/list", json!({})).await;
    assert!(answer(&listed, 1)["result"]["tools"].is_array());

    let ended = delete(r[2], &session).await;
    assert_eq!(ended.status, 204, "{ended:?}");
    assert_eq!(
        store.session(&session, 0).await.expect("the store answers"),
        None
    );
    // The replicas that held it hear of its end (the store's fan-out takes a moment).
    for addr in [r[0], r[1], r[2]] {
        let mut status = 0;
        for _ in 0..40 {
            let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
            status = send(addr, &session, message).await.status;
            if status == 404 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(status, 404, "the ended session on {addr}");
    }
    // A second `DELETE`, on any replica: there is no such session.
    assert_eq!(delete(r[1], &session).await.status, 404);
    assert_eq!(delete(r[0], &session).await.status, 404);
}

#[tokio::test]
async fn an_unknown_session_is_404_on_every_replica() {
    let (_store, r) = replicas().await;
    for addr in r {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let response = send(addr, "no-such-session", message).await;
        assert_eq!(response.status, 404, "{response:?}");
        assert_eq!(delete(addr, "no-such-session").await.status, 404);
    }
}

/// The levels of the log messages a call of `chatty` in `session` on `addr` sends to the
/// session's stream there.
async fn levels_logged(addr: SocketAddr, session: &str, id: u64) -> Vec<String> {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
        ("accept", "text/event-stream"),
    ];
    let mut stream = crate::support::get_streaming(addr, "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    let called = ask(
        addr,
        session,
        id,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(
        answer(&called, id)["result"]["structuredContent"],
        json!({"result": "said"})
    );
    levels_heard(&mut stream).await
}

#[tokio::test]
async fn the_log_level_set_through_one_replica_holds_on_another() {
    let (store, r) = replicas().await;
    let session = open(r[0]).await;
    // The default level (info) leaves the detail out.
    assert_eq!(levels_logged(r[2], &session, 1).await, ["warning"]);

    let set = ask(
        r[1],
        &session,
        2,
        "logging/setLevel",
        json!({"level": "debug"}),
    )
    .await;
    assert_eq!(answer(&set, 2)["result"], json!({}));
    let record = store
        .session(&session, 0)
        .await
        .expect("answers")
        .expect("kept");
    assert_eq!(record.state["logLevel"], "debug");
    // The replica that served the session before hears of the change (the store's fan-out
    // takes a moment); one that never did reads it with the session.
    for (id, addr) in [(3, r[2]), (13, r[0])] {
        let mut seen = Vec::new();
        for attempt in 0..10 {
            seen = levels_logged(addr, &session, id + attempt).await;
            if seen.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(seen, ["debug", "warning"], "on {addr}");
    }
}

#[tokio::test]
async fn a_subscription_made_through_one_replica_is_heard_on_the_stream_of_another() {
    let (_store, r) = replicas().await;
    // The client's stream is on the second replica; it subscribes through the third.
    subscription_heard(&r, 1, 2).await;
}

#[tokio::test]
async fn a_subscription_made_through_the_replica_holding_the_stream_is_heard_at_once() {
    let (_store, r) = replicas().await;
    // The stream and the subscription on the second replica, the change on the first: the
    // stream follows the resource from the subscription on, not from its next quiet read.
    subscription_heard(&r, 1, 1).await;
}

/// A session opened on the first replica, its stream on `streamed`, subscribed through
/// `subscribed`, hears a change made through the first replica in another session (within
/// a few seconds, less than a quiet stream's wait before it reads the store again).
async fn subscription_heard(r: &[SocketAddr], streamed: usize, subscribed: usize) {
    let session = open(r[0]).await;
    let headers = stream_headers(&session);
    let mut stream = crate::support::get_streaming(r[streamed], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    let subscribed = ask(
        r[subscribed],
        &session,
        1,
        "resources/subscribe",
        json!({"uri": "site://motto"}),
    )
    .await;
    assert_eq!(answer(&subscribed, 1)["result"], json!({}));
    // A change made through the first replica, in another session.
    let other = open(r[0]).await;
    let mut heard = None;
    for id in 2..20 {
        let set = json!({"name": "set_motto", "arguments": {"input": format!("motto {id}")}});
        ask(r[0], &other, id, "tools/call", set).await;
        let next = tokio::time::timeout(Duration::from_millis(300), stream.next_message()).await;
        if let Ok(Some(message)) = next {
            heard = Some(message);
            break;
        }
    }
    assert_eq!(
        heard,
        Some(
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "site://motto"}})
        )
    );
}

#[tokio::test]
async fn an_answer_to_a_question_that_lands_on_another_replica_reaches_the_call() {
    let (store, r) = replicas().await;
    let session = open_with(r[0], json!({"elicitation": {}})).await;
    // The call runs on the second replica; its question arrives on the call's stream.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask_name", "arguments": {}}});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut stream = crate::support::post_streaming(r[1], "/mcp", &headers, call.to_string()).await;
    assert_eq!(stream.status, 200);
    let question = stream.next_message().await.expect("the question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    // The answer lands on the third replica, which holds no call waiting for it.
    let reply = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"username": "ada"}}});
    let accepted = send(r[2], &session, reply).await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let answer = stream.next_message().await.expect("the call's answer");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"result": {"content": {"username": "ada"}}})
    );
    // Taken: nothing is left behind in the store for that copy.
    let (mark, _) = question["id"]
        .as_str()
        .and_then(|id| id.rsplit_once('-'))
        .expect("the question's id names the copy that asked");
    let copy = format!("{session}/{mark}");
    assert!(
        store
            .take_forwarded(&copy)
            .await
            .expect("answers")
            .is_empty()
    );
    // An answer nobody waits for, in a session no replica holds, is not kept.
    let stray = json!({"jsonrpc": "2.0", "id": 7, "result": {}});
    assert_eq!(send(r[2], "no-such-session", stray).await.status, 404);
}

#[tokio::test]
async fn two_replicas_asking_one_session_at_once_each_get_their_own_answer() {
    let (_store, r) = replicas().await;
    let session = open_with(r[0], json!({"elicitation": {}})).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    // Two calls of one session, on two replicas, each asking its first question.
    let mut streams = Vec::new();
    for (id, addr) in [(1, r[0]), (2, r[1])] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_name", "arguments": {}}});
        let stream = crate::support::post_streaming(addr, "/mcp", &headers, call.to_string()).await;
        streams.push(stream);
    }
    let mut questions = Vec::new();
    for stream in &mut streams {
        let question = stream.next_message().await.expect("a question");
        assert_eq!(question["method"], "elicitation/create", "{question}");
        questions.push(question["id"].clone());
    }
    // No id is sent twice in the session.
    assert_ne!(questions[0], questions[1], "{questions:?}");
    // Both answers land on the third replica, the second first.
    for (question, name) in questions.iter().zip(["ada", "grace"]).rev() {
        let reply = json!({"jsonrpc": "2.0", "id": question,
            "result": {"action": "accept", "content": {"username": name}}});
        assert_eq!(send(r[2], &session, reply).await.status, 202);
    }
    for ((stream, id), name) in streams.iter_mut().zip([1, 2]).zip(["ada", "grace"]) {
        let answer = stream.next_message().await.expect("the call's answer");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"],
            json!({"result": {"content": {"username": name}}}),
            "call {id}"
        );
    }
}

#[tokio::test]
async fn an_anonymous_idempotent_retry_through_another_replica_returns_the_first_result() {
    let (_store, r) = replicas().await;
    let session = open(r[0]).await;
    let call = |id: u64| {
        let mut meta = json!({});
        meta[IDEMPOTENCY_META_KEY] = json!("retry-1");
        json!({"name": "bump", "arguments": {}, "_meta": meta, "id": id})
    };
    let first = ask(r[0], &session, 1, "tools/call", call(1)).await;
    assert_eq!(
        answer(&first, 1)["result"]["structuredContent"],
        json!({"result": 1})
    );
    // The same key in the same session, through another replica: the first outcome, not a
    // second run there (which would count 101).
    let retry = ask(r[1], &session, 2, "tools/call", call(2)).await;
    assert_eq!(
        answer(&retry, 2)["result"]["structuredContent"],
        json!({"result": 1})
    );
    // Another session's key of the same name is its own.
    let other = open(r[1]).await;
    let theirs = ask(r[1], &other, 3, "tools/call", call(3)).await;
    assert_eq!(
        answer(&theirs, 3)["result"]["structuredContent"],
        json!({"result": 101})
    );
}

#[tokio::test]
async fn a_delete_the_server_refuses_ends_the_session_nowhere() {
    let (store, r) = replicas().await;
    let session = open(r[0]).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "1999-01-01"),
    ];
    let refused = request(r[1], "DELETE", "/mcp", &headers, "").await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert!(store.session(&session, 0).await.expect("answers").is_some());
    let listed = ask(r[0], &session, 1, "tools/list", json!({})).await;
    assert!(answer(&listed, 1)["result"]["tools"].is_array());
}

#[tokio::test]
async fn subscriptions_made_at_once_through_two_replicas_are_both_kept() {
    let (store, r) = replicas().await;
    let session = open(r[0]).await;
    let subscribe = |addr, id, uri: &'static str| {
        let session = session.clone();
        async move {
            ask(
                addr,
                &session,
                id,
                "resources/subscribe",
                json!({"uri": uri}),
            )
            .await
        }
    };
    let (a, b) = tokio::join!(
        subscribe(r[1], 1, "site://motto"),
        subscribe(r[2], 2, "site://name")
    );
    assert_eq!(answer(&a, 1)["result"], json!({}));
    assert_eq!(answer(&b, 2)["result"], json!({}));
    let record = store
        .session(&session, 0)
        .await
        .expect("answers")
        .expect("kept");
    let mut kept: Vec<&str> = record.state["subscriptions"]
        .as_array()
        .expect("subscriptions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, ["site://motto", "site://name"]);
}

/// The levels of the log messages `stream` brings, until a warning.
async fn levels_heard(stream: &mut crate::support::Streaming) -> Vec<String> {
    let mut levels = Vec::new();
    while let Some(message) = stream.next_message().await {
        if message["method"] == "notifications/message" {
            let level = message["params"]["level"].as_str().unwrap_or_default();
            levels.push(level.to_owned());
            if level == "warning" {
                break;
            }
        }
    }
    levels
}

#[tokio::test]
async fn a_log_message_of_a_call_reaches_the_stream_another_replica_holds() {
    let (_store, r) = replicas().await;
    let session = open(r[0]).await;
    let headers = stream_headers(&session);
    let mut stream = crate::support::get_streaming(r[0], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    let called = ask(
        r[1],
        &session,
        1,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(
        answer(&called, 1)["result"]["structuredContent"],
        json!({"result": "said"})
    );
    assert_eq!(levels_heard(&mut stream).await, ["warning"]);
    // Said in a session with no stream open yet: the stream opened next, on a third
    // replica, hears it.
    let quiet = open(r[0]).await;
    let called = ask(
        r[1],
        &quiet,
        2,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(
        answer(&called, 2)["result"]["structuredContent"],
        json!({"result": "said"})
    );
    let headers = stream_headers(&quiet);
    let mut stream = crate::support::get_streaming(r[2], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    assert_eq!(levels_heard(&mut stream).await, ["warning"]);
}

#[tokio::test]
async fn a_draining_replica_ends_a_session_stream_and_another_takes_it() {
    let (_store, r, servers) = servers().await;
    let session = open(r[0]).await;
    let headers = stream_headers(&session);
    let mut stream = crate::support::get_streaming(r[1], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    servers[1].drain();
    // The stream ends (the client opens it again), and a new one there is refused.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while stream.next_message().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ends when its replica drains");
    let refused = crate::support::get_streaming(r[1], "/mcp", &headers).await;
    assert_eq!(refused.status, 503);
    // Another replica takes the stream, and what the session's calls log reaches it.
    let mut stream = crate::support::get_streaming(r[2], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    let called = ask(
        r[0],
        &session,
        1,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(
        answer(&called, 1)["result"]["structuredContent"],
        json!({"result": "said"})
    );
    assert_eq!(levels_heard(&mut stream).await, ["warning"]);
}

#[tokio::test]
async fn a_replica_at_its_session_cap_restores_no_more_sessions() {
    let http = abilities::config::HttpConfig::default().max_sessions(1);
    let (_store, r, _servers) = servers_with(http).await;
    let first = open(r[0]).await;
    let second = open(r[1]).await;
    // The second replica holds its one session: it does not take the first one's copy too.
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let refused = send(r[1], &first, message.clone()).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    assert_eq!(refused.message()["error"]["code"], -32000);
    // Its own session is served, and the first one is, on a replica with room.
    assert_eq!(send(r[1], &second, message.clone()).await.status, 200);
    assert_eq!(send(r[2], &first, message).await.status, 200);
}

#[tokio::test]
async fn a_restore_the_store_cannot_answer_asks_for_a_retry() {
    let store = Arc::new(SqliteStore::memory().expect("a store"));
    let mut addrs = Vec::new();
    let replicas = Replica::set(&store, 2);
    let down = replicas[1].down_switch();
    for replica in replicas {
        let server = builder!()
            .store(replica)
            .state(Mutex::new("Ship it".to_owned()))
            .state(AtomicU64::new(0))
            .build()
            .expect("valid");
        addrs.push(serve_http(&server).await);
        std::mem::forget(server);
    }
    let session = open(addrs[0]).await;
    down.store(true, Ordering::SeqCst);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let refused = send(addrs[1], &session, list.clone()).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    let error = &refused.message()["error"];
    assert_eq!(error["code"], -32603, "{refused:?}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("retry")),
        "{error}"
    );
    // The store is back: the retry restores the session there.
    down.store(false, Ordering::SeqCst);
    let listed = ask(addrs[1], &session, 2, "tools/list", json!({})).await;
    assert!(answer(&listed, 2)["result"]["tools"].is_array());
}

/// What a stream brings within `wait`, as (method, level or uri) pairs.
async fn heard_within(stream: &mut crate::support::Streaming, wait: Duration) -> Vec<String> {
    let mut heard = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(wait, stream.next_message()).await {
        let what = message["params"]["level"]
            .as_str()
            .or(message["params"]["uri"].as_str())
            .unwrap_or_default();
        heard.push(format!(
            "{} {what}",
            message["method"].as_str().unwrap_or_default()
        ));
    }
    heard
}

#[tokio::test]
async fn a_stream_resumed_on_another_replica_gets_what_it_missed_and_nothing_twice() {
    let (_store, r) = replicas().await;
    let session = open(r[0]).await;
    let subscribed = ask(
        r[1],
        &session,
        1,
        "resources/subscribe",
        json!({"uri": "site://motto"}),
    )
    .await;
    assert_eq!(answer(&subscribed, 1)["result"], json!({}));
    let headers = stream_headers(&session);
    let mut stream = crate::support::get_streaming(r[2], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    let chatty = json!({"name": "chatty", "arguments": {}});
    ask(r[0], &session, 2, "tools/call", chatty.clone()).await;
    assert_eq!(levels_heard(&mut stream).await, ["warning"]);
    let seen = stream.last_id.clone().expect("every event has an id");
    // The client loses its stream; meanwhile the session's calls log and a resource it
    // follows changes (in another session, through another replica).
    drop(stream);
    ask(r[1], &session, 3, "tools/call", chatty.clone()).await;
    let other = open(r[0]).await;
    let set = json!({"name": "set_motto", "arguments": {"input": "missed"}});
    ask(r[0], &other, 1, "tools/call", set).await;
    // Resumed on another replica after the last event it saw: what it missed, in order,
    // and nothing it had.
    let resuming = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("accept", "text/event-stream"),
        ("last-event-id", seen.as_str()),
    ];
    let mut resumed = crate::support::get_streaming(r[0], "/mcp", &resuming).await;
    assert_eq!(resumed.status, 200);
    assert_eq!(
        heard_within(&mut resumed, Duration::from_millis(500)).await,
        [
            "notifications/message warning",
            "notifications/resources/updated site://motto"
        ]
    );
    // Opened again without `Last-Event-ID`: it starts where the last stream ended.
    drop(resumed);
    // (The server marks where a stream ended once it sees the client gone.)
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut again = crate::support::get_streaming(r[1], "/mcp", &headers).await;
    assert_eq!(again.status, 200);
    assert!(
        heard_within(&mut again, Duration::from_millis(300))
            .await
            .is_empty()
    );
    ask(r[2], &session, 4, "tools/call", chatty).await;
    assert_eq!(levels_heard(&mut again).await, ["warning"]);
}

/// A tool added at run time.
fn added(name: &'static str) -> abilities::Ability {
    abilities::Ability::builder(name, abilities::Semantic::Read)
        .description("A tool added at run time.")
        .input_schema(json!({"type": "object"}))
        .handler(move |_ctx: Context, _args: Value| async move { Ok(json!({"name": name})) })
        .build()
        .expect("the ability builds")
}

#[tokio::test]
async fn a_list_change_on_a_replica_without_the_session_reaches_its_stream_once() {
    let (_store, r, servers) = servers().await;
    let session = open(r[0]).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(r[1], &session, initialized).await.status, 202);
    // The third replica never serves the session (it holds no copy of it), and once two
    // replicas hold a copy, a change must not be heard once per copy.
    ask(r[0], &session, 1, "tools/list", json!({})).await;
    let headers = stream_headers(&session);
    let mut stream = crate::support::get_streaming(r[1], "/mcp", &headers).await;
    assert_eq!(stream.status, 200);
    servers[2]
        .abilities()
        .add(added("live/one"))
        .expect("added");
    assert_eq!(
        heard_within(&mut stream, Duration::from_millis(500)).await,
        ["notifications/tools/list_changed "]
    );
}
