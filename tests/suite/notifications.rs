//! Handlers talk back to the client: progress notifications when the request carries a
//! progress token, log messages at or above the level set with `logging/setLevel`.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support::Lines;
use abilities::{Context, Server, ability, client::LogLevel};
use serde_json::{Value, json};

/// Work in three steps, reporting each.
#[ability(semantic = "EXECUTE")]
async fn work(ctx: &Context) -> &'static str {
    for (step, message) in [(0.0, "started"), (50.0, "halfway"), (100.0, "done")] {
        ctx.progress(step, Some(100.0), Some(message)).await;
    }
    ctx.log(LogLevel::Debug, "debug detail").await;
    ctx.log(LogLevel::Info, json!({"stage": "info"})).await;
    ctx.log(LogLevel::Error, "an error line").await;
    "finished"
}

fn server() -> Server {
    builder!().build().expect("the test abilities are valid")
}

/// Call `work` (optionally with a progress token) and collect what arrives before the answer.
async fn call_work(lines: &mut Lines, id: u64, token: Option<&str>) -> (Vec<Value>, Value) {
    let mut params = json!({"name": "work", "arguments": {}});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                .to_string(),
        )
        .await;
    lines.until(id).await
}

fn of_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}

#[tokio::test]
async fn progress_is_reported_when_asked_for() {
    let mut lines = Lines::initialized(&server()).await;
    let (notes, answer) = call_work(&mut lines, 2, Some("p-1")).await;
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"result": "finished"})
    );
    let progress: Vec<_> = of_method(&notes, "notifications/progress")
        .into_iter()
        .map(|m| m["params"].clone())
        .collect();
    assert_eq!(
        progress,
        [
            json!({"progressToken": "p-1", "progress": 0.0, "total": 100.0, "message": "started"}),
            json!({"progressToken": "p-1", "progress": 50.0, "total": 100.0, "message": "halfway"}),
            json!({"progressToken": "p-1", "progress": 100.0, "total": 100.0, "message": "done"}),
        ]
    );
    let (notes, _) = call_work(&mut lines, 3, None).await;
    assert!(
        of_method(&notes, "notifications/progress").is_empty(),
        "no token, no progress"
    );
}

#[tokio::test]
async fn log_messages_honour_the_session_level() {
    let mut lines = Lines::initialized(&server()).await;
    let init = lines.request(9, "ping", json!({})).await;
    assert_eq!(init["result"], json!({}));

    let (notes, _) = call_work(&mut lines, 2, None).await;
    let levels: Vec<_> = of_method(&notes, "notifications/message")
        .iter()
        .map(|m| m["params"]["level"].clone())
        .collect();
    assert_eq!(
        levels,
        [json!("info"), json!("error")],
        "the default level is info"
    );
    assert_eq!(
        of_method(&notes, "notifications/message")[0]["params"]["data"],
        json!({"stage": "info"})
    );

    assert_eq!(
        lines
            .request(3, "logging/setLevel", json!({"level": "debug"}))
            .await["result"],
        json!({})
    );
    let (notes, _) = call_work(&mut lines, 4, None).await;
    assert_eq!(of_method(&notes, "notifications/message").len(), 3);

    assert_eq!(
        lines
            .request(5, "logging/setLevel", json!({"level": "critical"}))
            .await["result"],
        json!({})
    );
    let (notes, _) = call_work(&mut lines, 6, None).await;
    assert!(of_method(&notes, "notifications/message").is_empty());
}

#[tokio::test]
async fn the_server_declares_logging() {
    let mut lines = Lines::start(&server());
    let init = lines
        .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}))
        .await;
    assert!(
        init["result"]["capabilities"]["logging"].is_object(),
        "{init}"
    );
}

#[tokio::test]
async fn in_process_calls_without_a_client_ignore_notifications() {
    let registry = abilities::Registry::collect_in(module_path!()).expect("valid");
    assert_eq!(
        registry.call(Context::new(), "work", Value::Null).await,
        Ok(json!({"result": "finished"}))
    );
}
