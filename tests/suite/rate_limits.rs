//! Rate limits as a caller meets them: an ability's own rate, the server's default, a budget
//! per caller, the budget coming back, the refusal on each surface (an `isError` result, the
//! MCP-AQL envelope, and on the standard surface over HTTP `429` with `Retry-After`), and a
//! budget that replicas sharing a store share.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{Replica, post, tool_error};
use abilities::{
    Caller, Registry, Server, Surface, ability,
    auth::StaticTokens,
    config::{HttpConfig, Rate},
    store::SqliteStore,
};
use serde_json::{Value, json};

/// Publish a post (two per minute for each caller).
#[ability(semantic = "CREATE", rate = "2/min")]
fn publish(title: String) -> String {
    format!("published {title}")
}

/// Say hello (three per second for each caller).
#[ability(semantic = "READ", rate = "3/s")]
fn hello() -> String {
    "hello".to_owned()
}

/// Remove a post (once an hour, and confirmed on MCP-AQL).
#[ability(semantic = "DELETE", rate = "1/hour")]
fn remove_post(id: u64) -> u64 {
    id
}

/// Ping (no rate of its own).
#[ability(semantic = "READ")]
fn ping() -> String {
    "pong".to_owned()
}

fn registry() -> Registry {
    Registry::collect_in(module_path!()).expect("valid abilities")
}

fn as_json(result: &abilities::protocol::rmcp::model::CallToolResult) -> Value {
    serde_json::to_value(result).expect("a result serializes")
}

#[tokio::test]
async fn an_ability_rate_refuses_past_the_burst_with_retry_after() {
    let server = builder!().registry(registry()).build().unwrap();
    let client = server.connect().await.unwrap();
    for n in 0..2 {
        let ok = as_json(
            &client
                .call("publish", json!({"title": n.to_string()}))
                .await
                .unwrap(),
        );
        assert_eq!(ok["isError"], json!(false), "{ok}");
    }
    let refused = as_json(&client.call("publish", json!({"title": "3"})).await.unwrap());
    let error = tool_error(&refused);
    assert_eq!(error["code"], "RATE_LIMITED");
    let retry = error["details"]["retry_after"]
        .as_u64()
        .expect("whole seconds");
    // The third call of 2/min comes back after one interval (30 s), less what has passed.
    assert!((1..=30).contains(&retry), "{error}");
    assert_eq!(error["details"]["limit"], 2);
    assert_eq!(error["details"]["period_s"], 60.0);
    assert_eq!(
        error["message"],
        format!("'publish' allows 2 calls per 60 s for each caller; retry in {retry} s")
    );
    // Another ability has its own budget.
    let other = as_json(&client.call("hello", json!({})).await.unwrap());
    assert_eq!(other["isError"], json!(false));
}

#[tokio::test]
async fn each_caller_has_a_budget_of_its_own() {
    let server = builder!().registry(registry()).build().unwrap();
    let alice = server
        .connect_as(Some(Caller::trusted("alice")))
        .await
        .unwrap();
    let bob = server
        .connect_as(Some(Caller::trusted("bob")))
        .await
        .unwrap();
    for _ in 0..2 {
        let ok = as_json(&alice.call("publish", json!({"title": "a"})).await.unwrap());
        assert_eq!(ok["isError"], json!(false));
    }
    let refused = as_json(&alice.call("publish", json!({"title": "a"})).await.unwrap());
    assert_eq!(tool_error(&refused)["code"], "RATE_LIMITED");
    let ok = as_json(&bob.call("publish", json!({"title": "b"})).await.unwrap());
    assert_eq!(ok["isError"], json!(false), "bob's budget is his own: {ok}");
}

#[tokio::test]
async fn the_budget_comes_back_one_interval_at_a_time() {
    let server = builder!().registry(registry()).build().unwrap();
    let client = server.connect().await.unwrap();
    for _ in 0..3 {
        let ok = as_json(&client.call("hello", json!({})).await.unwrap());
        assert_eq!(ok["isError"], json!(false));
    }
    let refused = as_json(&client.call("hello", json!({})).await.unwrap());
    assert_eq!(tool_error(&refused)["code"], "RATE_LIMITED");
    // 3/s: one call comes back every 333 ms.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let ok = as_json(&client.call("hello", json!({})).await.unwrap());
    assert_eq!(ok["isError"], json!(false), "one interval later: {ok}");
    let refused = as_json(&client.call("hello", json!({})).await.unwrap());
    assert_eq!(
        tool_error(&refused)["code"],
        "RATE_LIMITED",
        "only one came back"
    );
}

#[tokio::test]
async fn the_server_default_covers_abilities_without_a_rate() {
    let server = builder!()
        .registry(registry())
        .rate_limit("1/hour".parse::<Rate>().unwrap())
        .build()
        .unwrap();
    let client = server.connect().await.unwrap();
    let ok = as_json(&client.call("ping", json!({})).await.unwrap());
    assert_eq!(ok["isError"], json!(false));
    let refused = as_json(&client.call("ping", json!({})).await.unwrap());
    let error = tool_error(&refused);
    assert_eq!(error["code"], "RATE_LIMITED");
    assert_eq!(error["details"]["limit"], 1);
    assert_eq!(error["details"]["period_s"], 3600.0);
    // An ability's own rate wins over the default: publish still allows two.
    for _ in 0..2 {
        let ok = as_json(&client.call("publish", json!({"title": "x"})).await.unwrap());
        assert_eq!(ok["isError"], json!(false));
    }
}

#[tokio::test]
async fn mcp_aql_refuses_in_its_envelope() {
    let server = builder!()
        .registry(registry())
        .surface(Surface::aql_single())
        .build()
        .unwrap();
    let client = server.connect().await.unwrap();
    let call = json!({"operation": "publish", "params": {"title": "t"}});
    for _ in 0..2 {
        let ok = as_json(&client.call("mcp_aql", call.clone()).await.unwrap());
        let envelope: Value =
            serde_json::from_str(ok["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(envelope["success"], true, "{envelope}");
    }
    let refused = as_json(&client.call("mcp_aql", call).await.unwrap());
    let envelope: Value =
        serde_json::from_str(refused["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["success"], false);
    assert_eq!(envelope["error"]["code"], "RATE_LIMITED");
    assert!(
        envelope["error"]["details"]["retry_after"]
            .as_u64()
            .is_some()
    );
    // The caller can recover by waiting: not a tool execution error.
    assert_eq!(refused["isError"], false, "{refused}");
}

/// The abilities served on MCP-AQL's single tool.
fn aql_server() -> Server {
    builder!()
        .registry(registry())
        .surface(Surface::aql_single())
        .build()
        .unwrap()
}

/// The MCP-AQL envelope a result carries as its text.
fn envelope(result: &abilities::protocol::rmcp::model::CallToolResult) -> Value {
    serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap()
}

#[tokio::test]
async fn a_confirmed_retry_is_not_counted_again() {
    let server = aql_server();
    let client = server.connect().await.unwrap();
    // The first call takes the hour's one unit and asks for confirmation.
    let asked = envelope(
        &client
            .call(
                "mcp_aql",
                json!({"operation": "remove_post", "params": {"id": 1}}),
            )
            .await
            .unwrap(),
    );
    assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let token = asked["error"]["details"]["confirmation_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its confirmed retry is the same call: it runs.
    let done = envelope(
        &client
            .call(
                "mcp_aql",
                json!({"operation": "remove_post", "params": {"id": 1, "_confirmation": token}}),
            )
            .await
            .unwrap(),
    );
    assert_eq!(done["success"], true, "{done}");
    // A new call is over the rate.
    let refused = envelope(
        &client
            .call(
                "mcp_aql",
                json!({"operation": "remove_post", "params": {"id": 2}}),
            )
            .await
            .unwrap(),
    );
    assert_eq!(refused["error"]["code"], "RATE_LIMITED", "{refused}");
}

#[tokio::test]
async fn a_refused_confirmation_token_counts_against_the_rate() {
    let server = aql_server();
    let client = server.connect().await.unwrap();
    let bogus =
        json!({"operation": "remove_post", "params": {"id": 1, "_confirmation": "made-up"}});
    // A made-up token goes on as a retry, is refused at the gate, and takes the hour's unit.
    let first = envelope(&client.call("mcp_aql", bogus.clone()).await.unwrap());
    assert_eq!(first["success"], false, "{first}");
    assert_ne!(first["error"]["code"], "RATE_LIMITED", "{first}");
    let second = envelope(&client.call("mcp_aql", bogus).await.unwrap());
    assert_eq!(second["error"]["code"], "RATE_LIMITED", "{second}");
}

async fn listen(server: Server) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { server.serve_listener(listener).await });
    addr
}

fn call_body(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
    "params": {"name": name, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "rate-test", "version": "1.0"},
    }}})
    .to_string()
}

const HEADERS: [(&str, &str); 3] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "publish"),
];

#[tokio::test]
async fn the_standard_surface_over_http_answers_429_with_retry_after() {
    let tokens = StaticTokens::new()
        .with_token("alice-token", Caller::new("alice", Vec::<String>::new()))
        .with_token("bob-token", Caller::new("bob", Vec::<String>::new()));
    let server = builder!()
        .registry(registry())
        .surface(Surface::Standard)
        .authenticator(tokens)
        .http(HttpConfig::default().stateless(true))
        .build()
        .unwrap();
    let addr = listen(server).await;
    let alice = [
        HEADERS[0],
        HEADERS[1],
        HEADERS[2],
        ("authorization", "Bearer alice-token"),
    ];
    for id in 1..=2 {
        let ok = post(
            addr,
            "/mcp",
            &alice,
            call_body(id, "publish", json!({"title": "t"})),
        )
        .await;
        assert_eq!(ok.status, 200, "{}", ok.body);
        assert!(ok.message()["result"].is_object(), "{}", ok.body);
    }
    let refused = post(
        addr,
        "/mcp",
        &alice,
        call_body(3, "publish", json!({"title": "t"})),
    )
    .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    let message = refused.message();
    let retry = message["error"]["data"]["details"]["retry_after"]
        .as_u64()
        .expect("whole seconds");
    assert_eq!(refused.header("retry-after"), Some(retry.to_string()));
    assert_eq!(message["id"], 3);
    assert_eq!(message["error"]["code"], -32000);
    assert_eq!(message["error"]["data"]["code"], "RATE_LIMITED");
    // Bob is another caller; and another request of Alice's (a list) is no call.
    let bob = [
        HEADERS[0],
        HEADERS[1],
        HEADERS[2],
        ("authorization", "Bearer bob-token"),
    ];
    let ok = post(
        addr,
        "/mcp",
        &bob,
        call_body(4, "publish", json!({"title": "t"})),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.header("retry-after").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_a_store_share_the_budget() {
    let store = Arc::new(SqliteStore::memory().unwrap());
    let replica = || {
        builder!()
            .registry(registry())
            .store(Replica::alone(Arc::clone(&store)))
            .build()
            .unwrap()
    };
    let (a, b) = (replica(), replica());
    let (a, b) = (a.connect().await.unwrap(), b.connect().await.unwrap());
    let ok = as_json(&a.call("publish", json!({"title": "1"})).await.unwrap());
    assert_eq!(ok["isError"], json!(false));
    let ok = as_json(&b.call("publish", json!({"title": "2"})).await.unwrap());
    assert_eq!(ok["isError"], json!(false));
    // The third call of 2/min, on either replica, is over the shared budget.
    for client in [&a, &b] {
        let refused = as_json(&client.call("publish", json!({"title": "3"})).await.unwrap());
        let error = tool_error(&refused);
        assert_eq!(error["code"], "RATE_LIMITED", "{refused}");
        assert!((1..=30).contains(&error["details"]["retry_after"].as_u64().unwrap()));
    }
}
