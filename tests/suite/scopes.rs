//! A resource server's scopes over a 2025 session, where rmcp answers with an event stream:
//! a call of a tool whose scope the token lacks is `403` with the scope to ask for (as the
//! pipeline's permission check reports it), an anonymous one `401`, and a permitted call's
//! stream opens while its handler still runs (the gate waits for the permission check, not
//! for the answer). A meta tool is served as it is, its refusal inside its result.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::Arc;

use crate::support::{post, post_streaming, serve_http};
use abilities::{
    Caller, Registry, Server, State, Surface, ability,
    auth::{AuthFuture, Authenticator, StaticTokens},
};
use serde_json::json;
use tokio::sync::Notify;

/// Read the notes (needs `notes:read`).
#[ability(semantic = "READ", permission = "notes:read")]
fn read_notes() -> String {
    "notes".to_owned()
}

/// Wait until released, then answer (needs `notes:read`).
#[ability(semantic = "READ", permission = "notes:read")]
async fn slow_notes(release: State<Arc<Notify>>) -> String {
    release.notified().await;
    "late notes".to_owned()
}

/// Static tokens, as a resource server that names its metadata document.
struct Resource(StaticTokens);

impl Authenticator for Resource {
    fn authenticate<'a>(
        &'a self,
        request: &'a abilities::http::axum::http::request::Parts,
    ) -> AuthFuture<'a> {
        self.0.authenticate(request)
    }

    fn resource_metadata_url(&self) -> Option<String> {
        Some("http://127.0.0.1/.well-known/oauth-protected-resource/mcp".to_owned())
    }
}

fn server(surface: Surface, release: Arc<Notify>) -> Server {
    builder!()
        .registry(Registry::collect_in(module_path!()).expect("valid abilities"))
        .surface(surface)
        .state(release)
        .authenticator(Resource(
            StaticTokens::new()
                .with_token("reader", Caller::new("ada", ["notes:read"]))
                .with_token("other", Caller::new("bob", ["other"]))
                .allow_anonymous(Caller::anonymous()),
        ))
        .build()
        .expect("valid")
}

fn call(id: u64, name: &str, arguments: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    .to_string()
}

async fn session(addr: std::net::SocketAddr, token: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
    }});
    let bearer = format!("Bearer {token}");
    let headers: &[(&str, &str)] = if token.is_empty() {
        &[]
    } else {
        &[("authorization", &bearer)]
    };
    let response = post(addr, "/mcp", headers, init.to_string()).await;
    assert_eq!(response.status, 200, "{response:?}");
    response.header("mcp-session-id").expect("a session id")
}

#[tokio::test]
async fn a_lacking_scope_is_403_in_a_session_and_a_permitted_stream_opens_at_once() {
    let release = Arc::new(Notify::new());
    let addr = serve_http(&server(Surface::Native, Arc::clone(&release))).await;

    // A token without the scope, in a session: 403 naming the scope.
    let id = session(addr, "other").await;
    let headers = [
        ("authorization", "Bearer other"),
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = post(addr, "/mcp", &headers, call(1, "read_notes", json!({}))).await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert_eq!(
        answer.message(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001,
            "message": "Forbidden: tool 'read_notes' needs the scope 'notes:read', which the token lacks"}})
    );
    assert!(
        answer
            .header("www-authenticate")
            .is_some_and(|h| h.contains(r#"error="insufficient_scope", scope="notes:read""#)),
        "{answer:?}"
    );
    // The id is free again: the same id with a tool the token may call is answered.
    let unknown = post(addr, "/mcp", &headers, call(1, "nothing", json!({}))).await;
    assert_eq!(unknown.status, 200, "{unknown:?}");

    // Anonymous, in a session: log in first.
    let id = session(addr, "").await;
    let anonymous = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = post(addr, "/mcp", &anonymous, call(2, "read_notes", json!({}))).await;
    assert_eq!(answer.status, 401, "{answer:?}");

    // A permitted call of a tool that waits: the stream opens before the handler ends, and
    // the answer follows on it.
    let id = session(addr, "reader").await;
    let reader = [
        ("authorization", "Bearer reader"),
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut stream = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        post_streaming(addr, "/mcp", &reader, call(3, "slow_notes", json!({}))),
    )
    .await
    .expect("the stream opens while the handler waits");
    assert_eq!(stream.status, 200);
    release.notify_one();
    let message = stream.next_message().await.expect("the answer");
    assert_eq!(
        message["result"]["structuredContent"],
        json!({"result": "late notes"})
    );
}

#[tokio::test]
async fn a_meta_tool_is_served_as_it_is() {
    let addr = serve_http(&server(Surface::meta(), Arc::new(Notify::new()))).await;
    let id = session(addr, "other").await;
    let headers = [
        ("authorization", "Bearer other"),
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let execute = call(
        1,
        "mcp-adapter-execute-ability",
        json!({"ability_name": "read_notes", "parameters": {}}),
    );
    let answer = post(addr, "/mcp", &headers, execute).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let result = &answer.message()["result"];
    assert_eq!(result["isError"], true, "{answer:?}");
}
