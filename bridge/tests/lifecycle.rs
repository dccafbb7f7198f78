//! Upstreams fail; the bridge does not: a crash mid-call, one that never starts or hangs, a
//! tool list that changes, lists in pages.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod support;

use std::time::Duration;

use abilities::{
    Surface,
    aql::{Aql, AqlMode},
};
use abilities_bridge::Timing;
use serde_json::{Value, json};
use support::{bridge, bridge_with, call, connect, error_of, upstream, wait_for};

#[tokio::test]
async fn an_upstream_that_crashes_mid_call_comes_back() {
    let (server, bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, _) = connect(&server, false).await;
    let crashed = error_of(&call(&client, "up-crash", json!({})).await);
    assert_eq!(crashed["code"], "UPSTREAM_UNAVAILABLE", "{crashed}");
    assert_eq!(crashed["details"]["server"], "up");
    assert_eq!(
        crashed["details"]["forwarded"], true,
        "it had the call: the outcome is unknown"
    );
    assert!(
        crashed["message"]
            .as_str()
            .is_some_and(|m| m.contains("whether it took effect is unknown")),
        "{crashed}"
    );
    // It is restarted with backoff, and answers again.
    wait_for(&bridge, "up", "up").await;
    let echoed = call(&client, "up-echo", json!({"text": "back"})).await;
    assert_eq!(
        echoed["structuredContent"],
        json!({"echoed": "back"}),
        "{echoed}"
    );
    let status = call(&client, "bridge-upstreams", json!({})).await;
    let up = &status["structuredContent"]["upstreams"][0];
    assert_eq!(up["status"], "up");
    assert_eq!(up["starts"], 2, "{status}");
    assert_eq!(up["last_stderr"], "crashing on purpose");
}

#[tokio::test]
async fn upstreams_that_never_start_do_not_take_the_others_down() {
    let timing = Timing {
        start_timeout: Duration::from_millis(700),
        ..support::timing()
    };
    let config = json!({"mcpServers": {
        "up": upstream(&[]),
        "broken": upstream(&["--fail-start"]),
        "stuck": upstream(&["--hang"]),
        "missing": {"command": "/nonexistent/server"}
    }});
    let surface = Surface::Aql(Aql::new(AqlMode::Single));
    let (server, bridge) = bridge_with(config, surface, timing).await;
    let (client, _) = connect(&server, false).await;
    let aql = |answer: Value| -> Value {
        serde_json::from_str(answer["content"][0]["text"].as_str().expect("text")).expect("JSON")
    };
    let echoed = aql(call(
        &client,
        "mcp_aql",
        json!({"operation": "up_echo", "params": {"text": "hi"}}),
    )
    .await);
    assert_eq!(echoed["data"], json!({"echoed": "hi"}), "{echoed}");

    // Introspection sees the status ability; it says which are down and why.
    let status = aql(call(&client, "mcp_aql", json!({"operation": "bridge_upstreams"})).await);
    let of = |name: &str| -> Value {
        status["data"]["upstreams"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["server"] == name).cloned())
            .unwrap_or_else(|| panic!("{name} in {status}"))
    };
    assert_eq!(of("up")["status"], "up");
    let broken = of("broken");
    assert_ne!(broken["status"], "up");
    assert_eq!(
        broken["last_stderr"], "fatal: cannot open the database at /nonexistent",
        "{broken}"
    );
    let stuck = of("stuck");
    assert_ne!(stuck["status"], "up");
    assert!(
        stuck["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("did not answer initialize")),
        "{stuck}"
    );
    assert!(
        of("missing")["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("/nonexistent/server"))
    );
    // They keep being retried.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        bridge.status()[1]["starts"]
            .as_u64()
            .is_some_and(|n| n >= 2),
        "{}",
        bridge.status()
    );
}

#[tokio::test]
async fn a_down_upstream_answers_upstream_unavailable_on_every_surface() {
    // A long wait before the restart, so the upstream is surely down when called.
    let timing = Timing {
        backoff: Duration::from_secs(3),
        ..support::timing()
    };
    let (server, _bridge) = bridge_with(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
        timing,
    )
    .await;
    let (client, _) = connect(&server, false).await;
    let up = |server: &abilities::Server| {
        server
            .metrics()
            .expect("counted")
            .encode()
            .lines()
            .find_map(|l| l.strip_prefix(r#"abilities_upstream_up{upstream="up"} "#))
            .map(str::to_owned)
    };
    assert_eq!(up(&server).as_deref(), Some("1"), "the upstream is up");
    let _ = call(&client, "up-crash", json!({})).await;
    let refusal = error_of(&call(&client, "up-echo", json!({"text": "x"})).await);
    assert_eq!(refusal["code"], "UPSTREAM_UNAVAILABLE", "{refusal}");
    assert_eq!(up(&server).as_deref(), Some("0"), "the upstream is down");
    assert_eq!(
        refusal["details"]["forwarded"], false,
        "never reached it: safe to retry"
    );
    assert_eq!(refusal["details"]["last_stderr"], "crashing on purpose");
    assert!(
        server.tools().iter().any(|t| t.name == "up-echo"),
        "still listed"
    );
    // The standard surface answers with a JSON-RPC error, -32000, the code in its data.
    let standard = server.with_surface(Surface::Standard).expect("a surface");
    let (client, _) = connect(&standard, false).await;
    let error = client
        .call_tool(
            abilities::protocol::rmcp::model::CallToolRequestParams::new("up-echo").with_arguments(
                json!({"text": "x"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect_err("a JSON-RPC error");
    let text = error.to_string();
    assert!(
        text.contains("-32000") && text.contains("upstream \"up\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_changed_tool_list_is_read_again_and_announced() {
    let (server, bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, seen) = connect(&server, false).await;
    assert!(!server.tools().iter().any(|t| t.name == "up-grown"));
    let grew = call(&client, "up-grow", json!({})).await;
    assert_eq!(grew["isError"], false, "{grew}");
    let mut listed = false;
    for _ in 0..100 {
        if server.tools().iter().any(|t| t.name == "up-grown") {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(listed, "the new upstream tool is served");
    let grown = call(&client, "up-grown", json!({})).await;
    assert_eq!(
        grown["structuredContent"],
        json!({"grown": true}),
        "{grown}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        seen.lock().expect("unpoisoned").tools_changed >= 1,
        "downstream clients are told"
    );
    assert!(bridge.listing().iter().any(|r| r.ability == "up/grown"));
}

#[tokio::test]
async fn paginated_lists_are_read_to_the_end() {
    let config =
        json!({"mcpServers": {"paged": upstream(&["--page-size", "2"]), "whole": upstream(&[])}});
    let (_server, bridge) = bridge(config, Surface::Native).await;
    let rows = bridge.listing();
    let count = |server: &str| {
        rows.iter()
            .filter(|r| r.server == server && r.kind == "tool")
            .count()
    };
    assert!(count("whole") > 10, "{rows:?}");
    assert_eq!(count("paged"), count("whole"), "every page of tools");
    let kinds = |server: &str| {
        rows.iter()
            .filter(|r| r.server == server && r.kind != "tool")
            .count()
    };
    assert_eq!(
        kinds("paged"),
        kinds("whole"),
        "every page of resources and prompts"
    );
}
