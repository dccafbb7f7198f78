//! Confirmation on every surface: an ability that must be confirmed (a `DELETE` by default,
//! `confirm` declared, not with `confirm = false`) runs once the user said so: asked directly
//! where the client can answer (2025: `elicitation/create`; 2026-07-28: a round of
//! `input_required`), otherwise refused with `CONFIRMATION_REQUIRED` and a single-use token its
//! retry carries as `_confirmation`, the same tool error on both protocol versions.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::{Lines, post, serve_http, tool_error};
use abilities::middleware::{Builtin, Chain};
use abilities::{Context, Server, State, Surface, ability, config::LedgerConfig};
use serde_json::{Value, json};

/// Delete a note.
#[ability(semantic = "DELETE", public)]
fn delete_note(deleted: State<AtomicUsize>, id: u64) -> u64 {
    deleted.fetch_add(1, Ordering::SeqCst);
    id
}

/// Archive a note: reversible, and still declared to need the user's word.
#[ability(semantic = "UPDATE", confirm)]
fn archive_note(id: u64) -> u64 {
    id
}

/// Forget a note: the host confirms it itself.
#[ability(semantic = "DELETE", confirm = false)]
fn forget_note(id: u64) -> u64 {
    id
}

/// Clear the cache: an UPDATE, raised to `dangerous` by its name (`purge_*`), as MCP-AQL
/// raises it.
#[ability(name = "purge-cache", semantic = "UPDATE")]
fn purge_cache() -> bool {
    true
}

/// Delete an archive, at most once an hour for each caller.
#[ability(semantic = "DELETE", rate = "1/hour")]
fn delete_archive(id: u64) -> u64 {
    id
}

/// Empty a folder, asking which one to keep first: confirmed, then asking its own question.
#[ability(semantic = "DELETE")]
async fn empty_folder(ctx: &Context, folder: String) -> Result<Value, abilities::AbilityError> {
    let schema = json!({"type": "object", "properties": {"keep": {"type": "string"}}});
    let keep = ctx.ask("keep").elicit("Keep which file?", schema).await?;
    Ok(json!({"emptied": folder, "kept": keep.content}))
}

/// What the caller's client can answer.
#[ability(semantic = "READ")]
fn can_ask(ctx: &Context) -> Value {
    json!({"elicit": ctx.can_elicit(), "sample": ctx.can_sample(), "roots": ctx.can_list_roots()})
}

const KEY: &[u8] = b"a shared key of at least 32 bytes!!";

/// A server of this module's abilities, and how many notes it deleted.
fn server_with(surface: Surface, chain: Chain) -> (Server, Arc<AtomicUsize>) {
    let deleted = Arc::new(AtomicUsize::new(0));
    let server = builder!()
        .shared_state(Arc::clone(&deleted))
        .surface(surface)
        .chain(chain)
        .ledger(LedgerConfig::default().request_state_key(KEY))
        .build()
        .expect("valid");
    (server, deleted)
}

fn server() -> (Server, Arc<AtomicUsize>) {
    server_with(Surface::Native, Chain::default())
}

/// A 2025-11-25 session over the line transport whose client declares `capabilities`.
async fn session(server: &Server, capabilities: Value) -> Lines {
    Lines::initialized_with(server, capabilities).await
}

fn deleted(count: &AtomicUsize) -> usize {
    count.load(Ordering::SeqCst)
}

fn token_of(error: &Value) -> String {
    error["details"]["confirmation_token"]
        .as_str()
        .unwrap_or_else(|| panic!("a token: {error}"))
        .to_owned()
}

#[tokio::test]
async fn a_destructive_tool_runs_only_with_the_token_its_refusal_offered() {
    let (server, count) = server();
    let mut lines = session(&server, json!({})).await;
    let refused = tool_error(&lines.call(2, "delete_note", json!({"id": 7})).await);
    assert_eq!(refused["code"], "CONFIRMATION_REQUIRED", "{refused}");
    assert_eq!(refused["details"]["operation"], "delete_note");
    assert_eq!(refused["details"]["danger_level"], "destructive");
    assert_eq!(
        refused["details"]["confirmation_message"],
        r#"Confirm destructive operation 'delete_note' with {"id":7}"#
    );
    let message = refused["message"].as_str().expect("a message");
    assert!(
        message.contains("'_confirmation'") && message.contains("ask the user"),
        "{message}"
    );
    assert_eq!(deleted(&count), 0, "refused: nothing deleted");
    let token = token_of(&refused);
    assert!(token.starts_with("conf_"), "{token}");

    let done = lines
        .call(3, "delete_note", json!({"id": 7, "_confirmation": token}))
        .await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["structuredContent"], json!({"result": 7}));
    assert_eq!(deleted(&count), 1);

    // Spent once: the same retry again is refused, and deletes nothing.
    let replayed = tool_error(
        &lines
            .call(4, "delete_note", json!({"id": 7, "_confirmation": token}))
            .await,
    );
    assert_eq!(replayed["code"], "TOKEN_ALREADY_USED", "{replayed}");
    assert_eq!(deleted(&count), 1);

    // A token confirms the arguments it was issued for, not others.
    let other = token_of(&tool_error(
        &lines.call(5, "delete_note", json!({"id": 8})).await,
    ));
    let moved = tool_error(
        &lines
            .call(6, "delete_note", json!({"id": 9, "_confirmation": other}))
            .await,
    );
    assert_eq!(moved["code"], "TOKEN_SCOPE_MISMATCH", "{moved}");
    let forged = tool_error(
        &lines
            .call(
                7,
                "delete_note",
                json!({"id": 9, "_confirmation": "conf_nothing"}),
            )
            .await,
    );
    assert_eq!(forged["code"], "TOKEN_INVALID", "{forged}");
    assert_eq!(deleted(&count), 1);
}

#[tokio::test]
async fn confirm_declared_decides_over_the_danger_level() {
    let (server, _) = server();
    let mut lines = session(&server, json!({})).await;
    let archive = tool_error(&lines.call(2, "archive_note", json!({"id": 1})).await);
    assert_eq!(archive["code"], "CONFIRMATION_REQUIRED", "{archive}");
    assert_eq!(archive["details"]["danger_level"], "reversible");
    assert_eq!(
        archive["details"]["reasons"],
        json!(["this operation is declared to need confirmation"])
    );
    let forget = lines.call(3, "forget_note", json!({"id": 1})).await;
    assert_eq!(
        forget["structuredContent"],
        json!({"result": 1}),
        "{forget}"
    );
    let registry = server.registry();
    assert!(
        registry
            .get("delete_note")
            .expect("listed")
            .needs_confirmation()
    );
    assert!(
        registry
            .get("archive_note")
            .expect("listed")
            .needs_confirmation()
    );
    assert!(
        !registry
            .get("forget_note")
            .expect("listed")
            .needs_confirmation()
    );
    assert!(
        !registry
            .get("can_ask")
            .expect("listed")
            .needs_confirmation()
    );
}

/// Answer the next `elicitation/create` the server sends with `answer`; the question.
async fn answer_question(lines: &mut Lines, answer: Value) -> Value {
    let asked = lines.next().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    lines
        .send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}).to_string())
        .await;
    asked
}

#[tokio::test]
async fn a_client_that_can_answer_is_asked_and_its_answer_decides() {
    let (server, count) = server();
    let mut lines = session(&server, json!({"elicitation": {}})).await;
    let can = lines.call(2, "can_ask", json!({})).await;
    assert_eq!(
        can["structuredContent"],
        json!({"result": {"elicit": true, "sample": false, "roots": false}})
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "delete_note", "arguments": {"id": 5}}});
    lines.send(&call.to_string()).await;
    let asked = answer_question(
        &mut lines,
        json!({"action": "accept", "content": {"confirm": true}}),
    )
    .await;
    assert_eq!(
        asked["params"]["message"],
        r#"Confirm destructive operation 'delete_note' with {"id":5}"#
    );
    let done = lines.response(&json!(3)).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": 5}),
        "{done}"
    );
    assert_eq!(deleted(&count), 1);

    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "delete_note", "arguments": {"id": 6}}});
    lines.send(&call.to_string()).await;
    answer_question(&mut lines, json!({"action": "decline"})).await;
    let declined = lines.response(&json!(4)).await;
    let refused = tool_error(&declined["result"]);
    assert_eq!(refused["code"], "PERMISSION_DENIED", "{refused}");
    assert_eq!(refused["details"]["reason"], "not confirmed");
    assert_eq!(deleted(&count), 1, "declined: nothing deleted");
}

/// A 2026-07-28 `tools/call` over HTTP from a client declaring `capabilities`.
async fn call_2026(addr: SocketAddr, id: u64, params: Value, capabilities: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", name.as_str()),
    ];
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let response = post(addr, "/mcp", &headers, message.to_string()).await;
    assert_eq!(response.status, 200, "{:?}", response);
    response.message()
}

#[tokio::test]
async fn a_2026_client_gets_the_same_refusal_and_the_same_token() {
    let (server, count) = server();
    let addr = serve_http(&server).await;
    let call = json!({"name": "delete_note", "arguments": {"id": 3}});
    let answer = call_2026(addr, 1, call, json!({})).await;
    // A tool error, as on 2025: never a JSON-RPC error the model does not see.
    assert!(answer.get("error").is_none(), "{answer}");
    let refused = tool_error(&answer["result"]);
    assert_eq!(refused["code"], "CONFIRMATION_REQUIRED", "{refused}");
    let token = token_of(&refused);
    let retry = json!({"name": "delete_note", "arguments": {"id": 3, "_confirmation": token}});
    let done = call_2026(addr, 2, retry, json!({})).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": 3}),
        "{done}"
    );
    assert_eq!(deleted(&count), 1);
}

#[tokio::test]
async fn a_2026_client_that_can_answer_confirms_in_a_round_once() {
    let (server, count) = server();
    let addr = serve_http(&server).await;
    let elicits = json!({"elicitation": {}});
    let call = json!({"name": "delete_note", "arguments": {"id": 4}});
    let first = call_2026(addr, 1, call.clone(), elicits.clone()).await;
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    let (key, question) = first["inputRequests"]
        .as_object()
        .and_then(|q| q.iter().next())
        .expect("one question");
    assert_eq!(question["method"], "elicitation/create");
    let state = first["requestState"].as_str().expect("a state");
    let mut retry = call.clone();
    retry["inputResponses"] = json!({ key: {"action": "accept", "content": {"confirm": true}} });
    retry["requestState"] = json!(state);
    let done = call_2026(addr, 2, retry.clone(), elicits.clone()).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": 4}),
        "{done}"
    );
    assert_eq!(deleted(&count), 1);
    // The answer sealed in the state confirms one call: a replay is refused.
    let replayed = call_2026(addr, 3, retry, elicits).await;
    let refused = tool_error(&replayed["result"]);
    assert_eq!(refused["code"], "TOKEN_ALREADY_USED", "{refused}");
    assert_eq!(deleted(&count), 1);
}

#[tokio::test]
async fn the_meta_and_standard_surfaces_confirm_alike() {
    let (meta, count) = server_with(Surface::meta(), Chain::default());
    let mut lines = session(&meta, json!({})).await;
    let execute = |id: u64, extra: Value| {
        let mut args = json!({"ability_name": "delete_note", "parameters": {"id": 2}});
        if let (Value::Object(args), Value::Object(extra)) = (&mut args, extra) {
            args.extend(extra);
        }
        (id, args)
    };
    let (id, args) = execute(2, json!({}));
    let refused = tool_error(&lines.call(id, "mcp-adapter-execute-ability", args).await);
    assert_eq!(refused["code"], "CONFIRMATION_REQUIRED", "{refused}");
    let (id, args) = execute(3, json!({"_confirmation": token_of(&refused)}));
    let done = lines.call(id, "mcp-adapter-execute-ability", args).await;
    assert_eq!(
        done["structuredContent"],
        json!({"success": true, "data": 2}),
        "{done}"
    );
    assert_eq!(deleted(&count), 1);

    // The lenient standard surface answers errors as JSON-RPC errors: the token travels in
    // their data.
    let (standard, count) = server_with(Surface::Standard, Chain::default());
    let mut lines = session(&standard, json!({})).await;
    let refused = lines
        .request(
            2,
            "tools/call",
            json!({"name": "delete_note", "arguments": {"id": 2}}),
        )
        .await;
    assert_eq!(
        refused["error"]["data"]["code"], "CONFIRMATION_REQUIRED",
        "{refused}"
    );
    let token = refused["error"]["data"]["details"]["confirmation_token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let done = lines
        .call(3, "delete_note", json!({"id": 2, "_confirmation": token}))
        .await;
    assert_eq!(done["structuredContent"], json!({"result": 2}), "{done}");
    assert_eq!(deleted(&count), 1);
}

#[tokio::test]
async fn a_chain_without_the_confirmation_link_confirms_nothing() {
    let (server, count) = server_with(
        Surface::Native,
        Chain::default().without(Builtin::Confirmation),
    );
    let mut lines = session(&server, json!({})).await;
    let done = lines.call(2, "delete_note", json!({"id": 1})).await;
    assert_eq!(done["structuredContent"], json!({"result": 1}), "{done}");
    assert_eq!(deleted(&count), 1);
}

#[tokio::test]
async fn a_name_that_raises_the_danger_level_is_confirmed_on_every_surface() {
    let (server, _) = server();
    assert!(
        server
            .registry()
            .get("purge-cache")
            .expect("listed")
            .needs_confirmation()
    );
    let mut lines = session(&server, json!({})).await;
    let refused = tool_error(&lines.call(2, "purge-cache", json!({})).await);
    assert_eq!(refused["code"], "CONFIRMATION_REQUIRED", "{refused}");
    assert_eq!(refused["details"]["danger_level"], "dangerous");
    assert_eq!(
        refused["details"]["reasons"],
        json!(["dangerous operations need confirmation"])
    );
}

#[tokio::test]
async fn a_made_up_token_on_a_call_refused_before_the_gate_still_counts_against_the_rate() {
    let (server, _) = server();
    let mut lines = session(&server, json!({})).await;
    // A retry carrying a token skips the rate until the gate looks at the token; refused
    // before (its arguments are invalid), it counts like any call.
    let invalid = json!({"id": "seven", "_confirmation": "conf_made_up"});
    let refused = tool_error(&lines.call(2, "delete_archive", invalid).await);
    assert_eq!(refused["code"], "VALIDATION_INVALID_TYPE", "{refused}");
    let limited = tool_error(&lines.call(3, "delete_archive", json!({"id": 7})).await);
    assert_eq!(limited["code"], "RATE_LIMITED", "{limited}");
}

#[tokio::test]
async fn a_confirmed_2026_call_whose_handler_asks_too_completes_once() {
    let (server, _) = server();
    let addr = serve_http(&server).await;
    let elicits = json!({"elicitation": {}});
    let call = json!({"name": "empty_folder", "arguments": {"folder": "tmp"}});
    // Round 1: the gate asks.
    let first = call_2026(addr, 1, call.clone(), elicits.clone()).await;
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    let gate_key = first["inputRequests"]
        .as_object()
        .and_then(|q| q.keys().next().cloned())
        .expect("the gate's question");
    // Round 2: confirmed; the handler asks its own question.
    let mut second = call.clone();
    second["inputResponses"] =
        json!({ gate_key: {"action": "accept", "content": {"confirm": true}} });
    second["requestState"] = first["requestState"].clone();
    let asked = call_2026(addr, 2, second, elicits.clone()).await;
    let asked = &asked["result"];
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"]["keep"]["params"]["message"],
        "Keep which file?"
    );
    // Round 3: the confirmation travels in the state; the call completes.
    let mut third = call.clone();
    third["inputResponses"] = json!({"keep": {"action": "accept", "content": {"keep": "a.txt"}}});
    third["requestState"] = asked["requestState"].clone();
    let done = call_2026(addr, 3, third.clone(), elicits.clone()).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": {"emptied": "tmp", "kept": {"keep": "a.txt"}}}),
        "{done}"
    );
    // The last round again: its confirmation was spent.
    let replayed = call_2026(addr, 4, third, elicits).await;
    let refused = tool_error(&replayed["result"]);
    assert_eq!(refused["code"], "TOKEN_ALREADY_USED", "{refused}");
}

/// An anonymous 2025-11-25 HTTP session of the client `name`: its id.
async fn anonymous_session(addr: SocketAddr, name: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": name, "version": "1"}
    }});
    let opened = post(addr, "/mcp", &[], init.to_string()).await;
    let session = opened.header("mcp-session-id").expect("a session");
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(addr, "/mcp", &headers, initialized.to_string()).await;
    session
}

/// `delete_note` of `id` in `session`, with `token` when given: the tool result.
async fn delete_in(addr: SocketAddr, session: &str, id: u64, token: Option<&str>) -> Value {
    let mut arguments = json!({"id": id});
    if let Some(token) = token {
        arguments["_confirmation"] = json!(token);
    }
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "delete_note", "arguments": arguments}});
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post(addr, "/mcp", &headers, call.to_string())
        .await
        .message()["result"]
        .clone()
}

#[tokio::test]
async fn an_anonymous_clients_token_holds_in_its_next_session() {
    // A command-line client opens a session per command: the refusal in one, the retry in
    // the next. Its token is bound to its client info (and the tool and arguments).
    let (server, count) = server();
    let addr = serve_http(&server).await;
    let first = anonymous_session(addr, "inspector-cli").await;
    let refused = tool_error(&delete_in(addr, &first, 7, None).await);
    assert_eq!(refused["code"], "CONFIRMATION_REQUIRED", "{refused}");
    let token = token_of(&refused);
    // Another client's session cannot spend it.
    let other = anonymous_session(addr, "another-app").await;
    let stolen = tool_error(&delete_in(addr, &other, 7, Some(&token)).await);
    assert_eq!(stolen["code"], "TOKEN_INVALID", "{stolen}");
    assert_eq!(deleted(&count), 0);
    let next = anonymous_session(addr, "inspector-cli").await;
    let done = delete_in(addr, &next, 7, Some(&token)).await;
    assert_eq!(done["structuredContent"], json!({"result": 7}), "{done}");
    assert_eq!(deleted(&count), 1);
    let again = tool_error(&delete_in(addr, &next, 7, Some(&token)).await);
    assert_eq!(again["code"], "TOKEN_ALREADY_USED", "{again}");
}
