//! A running server adds and removes abilities: every connected client is told
//! (`notifications/*/list_changed`, to an initialized rmcp client and to a 2026-07-28
//! `subscriptions/listen` stream), and lists paginate with cursors that survive a change.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use std::time::Duration;

use crate::support::{Lines, tool_error};
use abilities::protocol::rmcp::model::{ServerNotification, SubscriptionFilter};
use abilities::protocol::rmcp::service::NotificationContext;
use abilities::protocol::rmcp::{ClientHandler, RoleClient, ServiceExt};
use abilities::{Ability, Context, Semantic, ServerError, Surface, ability};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Say hello.
#[ability(semantic = "READ")]
fn hello() -> String {
    "hello".to_owned()
}

fn tool(name: &'static str) -> Ability {
    Ability::builder(name, Semantic::Read)
        .description("A tool added at run time.")
        .input_schema(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .handler(move |_ctx: Context, args: Value| async move {
            Ok(json!({"name": name, "n": args["n"]}))
        })
        .build()
        .expect("the ability builds")
}

/// A client that reports every list-changed notification it receives.
#[derive(Clone)]
struct Watching(mpsc::UnboundedSender<&'static str>);

impl ClientHandler for Watching {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("tools");
    }
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("resources");
    }
    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("prompts");
    }
}

async fn next(changes: &mut mpsc::UnboundedReceiver<&'static str>) -> &'static str {
    tokio::time::timeout(Duration::from_secs(10), changes.recv())
        .await
        .expect("a notification in time")
        .expect("the client runs")
}

#[tokio::test]
async fn an_added_ability_is_served_and_connected_clients_are_told() {
    let server = builder!().build().expect("the server builds");
    let client_io = support::session(&server);
    let (sender, mut changes) = mpsc::unbounded_channel();
    let client = Watching(sender).serve(client_io).await.expect("connects");
    let before: Vec<String> = client
        .list_all_tools()
        .await
        .expect("lists")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!before.contains(&"live-one".to_owned()), "{before:?}");

    server.abilities().add(tool("live/one")).expect("added");
    assert_eq!(next(&mut changes).await, "tools");
    let tools = client.list_all_tools().await.expect("lists");
    let added = tools
        .iter()
        .find(|t| t.name == "live-one")
        .expect("the new tool is listed");
    assert_eq!(
        serde_json::to_value(&*added.input_schema).expect("JSON")["required"],
        json!(["n"])
    );
    let call = abilities::protocol::rmcp::model::CallToolRequestParams::new("live-one")
        .with_arguments(serde_json::Map::from_iter([("n".to_owned(), json!(7))]));
    let result = client.call_tool(call).await.expect("answers");
    assert_eq!(
        result.structured_content,
        Some(json!({"name": "live/one", "n": 7}))
    );

    // A resource ability touches the resource list only, which this session was never
    // offered (the server had no resources when it initialized): it is not told.
    let resource = |name: &'static str, uri: &'static str| {
        Ability::builder(name, Semantic::Read)
            .description("A resource added at run time.")
            .resource(uri, None)
            .handler(|_ctx: Context, _args: Value| async move { Ok("Less is more".to_owned()) })
            .build()
            .expect("builds")
    };
    server
        .abilities()
        .add(resource("motto", "site://motto"))
        .expect("added");

    let removed = server.abilities().remove("live-one").expect("removed");
    assert_eq!(removed.name(), "live/one");
    assert_eq!(next(&mut changes).await, "tools");

    // A session that starts now is offered resources, and told when they change.
    let client_io = support::session(&server);
    let (sender, mut later) = mpsc::unbounded_channel();
    let second = Watching(sender).serve(client_io).await.expect("connects");
    // One round trip: the server has taken in the session's `initialized` by then.
    second.list_all_tools().await.expect("lists");
    server
        .abilities()
        .add(resource("slogan", "site://slogan"))
        .expect("added");
    assert_eq!(next(&mut later).await, "resources");
    let gone = client
        .call_tool(abilities::protocol::rmcp::model::CallToolRequestParams::new("live-one"))
        .await
        .expect_err("the tool is gone");
    assert!(
        gone.to_string().contains("unknown tool: live-one"),
        "{gone}"
    );
    assert!(matches!(
        server.abilities().remove("live-one"),
        Err(ServerError::UnknownAbility(name)) if name == "live-one"
    ));
}

#[tokio::test]
async fn a_change_that_would_clash_is_refused_and_changes_nothing() {
    let server = builder!()
        .mount("/mcp", Surface::Native)
        .mount("/aql", Surface::aql_single())
        .build()
        .expect("the server builds");
    let before = server.tools();
    let clash = server.abilities().add(
        Ability::builder("hello", Semantic::Read)
            .description("Clashes by name.")
            .handler(|_ctx: Context, _args: Value| async move { Ok(json!(1)) })
            .build()
            .expect("builds alone"),
    );
    assert!(
        matches!(&clash, Err(ServerError::Registry(e)) if e.to_string().starts_with("duplicate ability name `hello`")),
        "{clash:?}"
    );
    // `Hello` is another ability name, but the same MCP-AQL operation as `hello`.
    let operation = server.abilities().add(
        Ability::builder("Hello", Semantic::Read)
            .description("Clashes by operation name.")
            .handler(|_ctx: Context, _args: Value| async move { Ok(json!(1)) })
            .build()
            .expect("builds alone"),
    );
    assert!(
        matches!(&operation, Err(ServerError::AqlOperationCollision { operation, .. }) if operation == "hello"),
        "{operation:?}"
    );
    assert_eq!(server.tools(), before);
    assert!(!server.abilities().contains("Hello"));
}

#[tokio::test]
async fn a_listen_stream_that_asked_for_tool_changes_hears_them() {
    let server = builder!().build().expect("the server builds");
    let client = support::client_2026(&server).await;
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = client.peer().listen(filter).await.expect("acknowledged");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    // The acknowledgement reaches the client before the server's `listen` runs, so a change
    // made at once may precede the listener: change until one is heard (a few at most).
    let mut notification = None;
    for attempt in 0..50 {
        let name: &'static str = Box::leak(format!("live/two-{attempt}").into_boxed_str());
        server.abilities().add(tool(name)).expect("added");
        if let Ok(heard) =
            tokio::time::timeout(Duration::from_millis(200), subscription.next()).await
        {
            notification = Some(heard);
            break;
        }
    }
    let notification = notification
        .expect("a notification within 50 changes")
        .expect("the stream is open")
        .expect("a notification");
    assert!(
        matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ),
        "{notification:?}"
    );
}

#[tokio::test]
async fn lists_paginate_with_cursors_that_survive_a_change() {
    let server = builder!()
        .site(abilities::Site::new("test", "https://example.com"))
        .page_size(2)
        .ability(tool("live/a"))
        .ability(tool("live/c"))
        .ability(tool("live/e"))
        .build()
        .expect("the server builds");
    let mut lines = Lines::initialized(&server).await;
    let names = |page: &Value| -> Vec<String> {
        page["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let first = lines.request(2, "tools/list", json!({})).await;
    assert_eq!(names(&first), ["get_site_context", "hello"]);
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    // Between pages, an ability joins before the cursor and one after it.
    server.abilities().add(tool("alpha")).expect("added");
    server.abilities().add(tool("live/d")).expect("added");
    let second = lines
        .request(3, "tools/list", json!({"cursor": cursor}))
        .await;
    assert_eq!(names(&second), ["live-a", "live-c"]);
    let cursor = second["result"]["nextCursor"].as_str().expect("more");
    let third = lines
        .request(4, "tools/list", json!({"cursor": cursor}))
        .await;
    assert_eq!(names(&third), ["live-d", "live-e"]);
    assert!(third["result"].get("nextCursor").is_none(), "{third}");

    for (id, bad) in [(5, "not base64 ***"), (6, "dG9vbHMvbGlzdA"), (7, "")] {
        let answer = lines
            .request(id, "tools/list", json!({"cursor": bad}))
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{bad}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("is not one this server gave for tools/list")),
            "{answer}"
        );
    }
    // A tools cursor is no prompts cursor.
    let foreign = lines
        .request(8, "prompts/list", json!({"cursor": cursor}))
        .await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");

    // rmcp's client follows the cursors and sees every tool once.
    let client = server.connect().await.expect("connects");
    let all: Vec<String> = client
        .list_tools()
        .await
        .expect("lists")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        all,
        [
            "get_site_context",
            "alpha",
            "hello",
            "live-a",
            "live-c",
            "live-d",
            "live-e"
        ]
    );
    let call = client
        .call("live-d", json!({"n": "x"}))
        .await
        .expect("answers");
    let call = serde_json::to_value(call).expect("JSON");
    assert_eq!(tool_error(&call)["code"], "VALIDATION_INVALID_TYPE");
}
