//! Metrics (feature `metrics`): calls counted by ability, surface and outcome, never under a
//! name a client made up; confirmation tokens and rate-limit refusals; tasks and the store's
//! latency; the exposition and the live view over HTTP only where configured, and sessions
//! counted against their cap.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::{Lines, confirmation_token, http_session, post, request, serve_http};
use abilities::metrics::{CONTENT_TYPE, MetricsConfig};
use abilities::{AbilityError, Context, ErrorCode, Server, Surface, ability};
use serde_json::{Value, json};

/// Count the posts of a type.
#[ability(semantic = "READ", flatten)]
fn count_posts(post_type: String) -> Result<u64, AbilityError> {
    match post_type.as_str() {
        "post" => Ok(3),
        _ => Err(AbilityError::new(
            ErrorCode::ExecutionFailed,
            "no such post type",
        )),
    }
}

/// Delete a post.
#[ability(semantic = "DELETE")]
fn delete_post(id: u64) -> u64 {
    id
}

/// Publish, at most once a minute.
#[ability(semantic = "EXECUTE", rate = "1/min")]
fn publish() -> bool {
    true
}

/// Answer at once, though it may run as a task.
#[ability(semantic = "READ", task = "optional")]
fn quick() -> u64 {
    1
}

/// Nap for a while, as a task when the client can run one.
#[ability(semantic = "READ", task = "optional")]
async fn nap(ctx: &Context, ms: u64) -> Value {
    let _ = ctx;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    json!({"slept": ms})
}

fn server(surface: Surface, config: MetricsConfig) -> Server {
    builder!()
        .surface(surface)
        .metrics(config)
        .build()
        .expect("valid server")
}

/// The value of the sample `name{labels}` in `text`, exactly those labels in that order.
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    let key = if labels.is_empty() {
        format!("{name} ")
    } else {
        format!("{name}{{{labels}}} ")
    };
    text.lines()
        .find_map(|line| line.strip_prefix(&key))
        .map(|value| value.parse().expect("a number"))
}

#[tokio::test]
async fn calls_are_counted_by_ability_surface_and_outcome() {
    let server = server(Surface::Native, MetricsConfig::default());
    let mut client = Lines::initialized(&server).await;
    client
        .call(1, "count_posts", json!({"input": "post"}))
        .await;
    client
        .call(2, "count_posts", json!({"input": "post"}))
        .await;
    client.call(3, "count_posts", json!({"input": 7})).await;
    client
        .call(4, "count_posts", json!({"input": "page"}))
        .await;
    let unknown = client
        .request(
            5,
            "tools/call",
            json!({"name": "made_up_tool_4711", "arguments": {}}),
        )
        .await;
    assert_eq!(
        unknown["error"]["data"]["code"], "NOT_FOUND_ABILITY",
        "{unknown}"
    );

    let text = server.metrics().expect("configured").encode();
    let calls = |outcome: &str| {
        sample(
            &text,
            "abilities_calls_total",
            &format!(r#"ability="count_posts",surface="native",outcome="{outcome}""#),
        )
    };
    assert_eq!(calls("OK"), Some(2.0), "{text}");
    assert_eq!(calls("VALIDATION_INVALID_TYPE"), Some(1.0), "{text}");
    assert_eq!(calls("EXECUTION_FAILED"), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            "abilities_call_duration_seconds_count",
            r#"ability="count_posts""#
        ),
        Some(4.0),
        "every call is timed, however it ended: {text}"
    );
    let sum = sample(
        &text,
        "abilities_call_duration_seconds_sum",
        r#"ability="count_posts""#,
    )
    .expect("a sum");
    assert!(sum > 0.0 && sum < 5.0, "{sum}");
    // A name a client made up is never a label.
    assert!(!text.contains("made_up_tool_4711"), "{text}");
    // The text format Prometheus reads: each family typed once.
    assert_eq!(
        text.matches("# TYPE abilities_calls_total counter").count(),
        1
    );
    assert!(text.contains("# TYPE abilities_call_duration_seconds histogram"));
}

#[tokio::test]
async fn confirmations_and_rate_limit_refusals_are_counted() {
    let server = server(Surface::aql_single(), MetricsConfig::default());
    let mut client = Lines::initialized(&server).await;
    let asked = client
        .call(
            1,
            "mcp_aql",
            json!({"operation": "delete_post", "params": {"id": 7}}),
        )
        .await;
    let token = confirmation_token(&asked);
    let call = json!({"operation": "delete_post", "params": {"id": 7, "_confirmation": token}});
    client.call(2, "mcp_aql", call.clone()).await;
    // The same token again: refused.
    client.call(3, "mcp_aql", call).await;
    client
        .call(4, "mcp_aql", json!({"operation": "publish"}))
        .await;
    client
        .call(5, "mcp_aql", json!({"operation": "publish"}))
        .await;

    let text = server.metrics().unwrap().encode();
    for (event, n) in [("issued", 1.0), ("redeemed", 1.0), ("refused", 1.0)] {
        assert_eq!(
            sample(
                &text,
                "abilities_confirmations_total",
                &format!(r#"event="{event}""#)
            ),
            Some(n),
            "{event}: {text}"
        );
    }
    assert_eq!(
        sample(
            &text,
            "abilities_rate_limited_total",
            r#"ability="publish""#
        ),
        Some(1.0),
        "{text}"
    );
    let calls = |ability: &str, outcome: &str| {
        sample(
            &text,
            "abilities_calls_total",
            &format!(r#"ability="{ability}",surface="aql",outcome="{outcome}""#),
        )
    };
    assert_eq!(calls("publish", "OK"), Some(1.0), "{text}");
    assert_eq!(calls("publish", "RATE_LIMITED"), Some(1.0), "{text}");
    assert_eq!(
        calls("delete_post", "CONFIRMATION_REQUIRED"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(calls("delete_post", "OK"), Some(1.0), "{text}");
    // The store's operations are timed: tokens issued and spent.
    for operation in ["issue_token", "spend_token"] {
        assert!(
            sample(
                &text,
                "abilities_store_operation_duration_seconds_count",
                &format!(r#"operation="{operation}""#)
            )
            .is_some_and(|n| n >= 1.0),
            "{operation}: {text}"
        );
    }
}

/// Send a 2026-07-28 request that may run as a task.
async fn call_2026(addr: SocketAddr, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = ["name", "taskId"]
        .iter()
        .find_map(|k| params[*k].as_str())
        .unwrap_or_default()
        .to_owned();
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let response = post(
        addr,
        "/mcp",
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
            ("mcp-name", &name),
        ],
        message.to_string(),
    )
    .await;
    response.message()["result"].clone()
}

#[tokio::test]
async fn tasks_are_counted_while_they_run_and_when_they_end() {
    let server = server(Surface::Native, MetricsConfig::default());
    let addr = serve_http(&server).await;
    // Answered in its request: no task, and none counted as ended.
    let quick = call_2026(
        addr,
        9,
        "tools/call",
        json!({"name": "quick", "arguments": {}}),
    )
    .await;
    assert_eq!(quick["structuredContent"], json!({"result": 1}), "{quick}");
    let text = server.metrics().unwrap().encode();
    assert!(!text.contains("abilities_tasks_ended_total"), "{text}");
    let created = call_2026(
        addr,
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"ms": 400}}),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let text = server.metrics().unwrap().encode();
    assert_eq!(
        sample(&text, "abilities_tasks", r#"status="working""#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(sample(&text, "abilities_tasks_max", ""), Some(1000.0));
    for _ in 0..100 {
        let task = call_2026(addr, 2, "tasks/get", json!({"taskId": id})).await;
        if task["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = server.metrics().unwrap().encode();
    assert_eq!(
        sample(&text, "abilities_tasks", r#"status="working""#),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "abilities_tasks_ended_total",
            r#"status="completed""#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "abilities_calls_total",
            r#"ability="nap",surface="task",outcome="OK""#
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "abilities_store_operation_duration_seconds_count",
            r#"operation="insert_task""#
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
}

async fn get(addr: SocketAddr, path: &str) -> crate::support::HttpResponse {
    request(addr, "GET", path, &[], Vec::new()).await
}

#[tokio::test]
async fn http_serves_the_exposition_and_the_live_view_only_where_configured() {
    // Metrics at the default path, no live view.
    let plain = server(Surface::Native, MetricsConfig::default());
    let addr = serve_http(&plain).await;
    let metrics = get(addr, "/metrics").await;
    assert_eq!(metrics.status, 200, "{metrics:?}");
    assert_eq!(
        metrics.header("content-type").as_deref(),
        Some(CONTENT_TYPE)
    );
    assert_eq!(
        sample(&metrics.body, "abilities_sessions", ""),
        Some(0.0),
        "{}",
        metrics.body
    );
    assert_eq!(get(addr, "/dashboard").await.status, 404);
    // A 2025 session is counted against the endpoint's cap.
    http_session(addr).await;
    let metrics = get(addr, "/metrics").await;
    assert_eq!(sample(&metrics.body, "abilities_sessions", ""), Some(1.0));
    assert_eq!(
        sample(&metrics.body, "abilities_sessions_max", ""),
        Some(1000.0)
    );

    // The live view, and the exposition only beside it.
    let viewed = server(
        Surface::Native,
        MetricsConfig::default().path(None).dashboard("/ops"),
    );
    let addr = serve_http(&viewed).await;
    assert_eq!(get(addr, "/metrics").await.status, 404);
    let page = get(addr, "/ops").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    let policy = page.header("content-security-policy").expect("a policy");
    assert!(policy.contains("default-src 'none'"), "{policy}");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(page.body.contains(r#"const SOURCE = "/ops/metrics";"#));
    assert!(!page.body.contains("http://") && !page.body.contains("https://"));
    let source = get(addr, "/ops/metrics").await;
    assert_eq!(source.status, 200);
    assert!(
        source.body.contains("# TYPE abilities_tasks_max gauge"),
        "{source:?}"
    );

    // A server that counts nothing serves neither, and says so when asked to.
    let none = builder!().build().expect("valid");
    assert!(none.metrics().is_none());
    let addr = serve_http(&none).await;
    assert_eq!(get(addr, "/metrics").await.status, 404);
    let error = none
        .serve_metrics("127.0.0.1:0".parse().unwrap())
        .await
        .expect_err("nothing to serve");
    assert!(
        error.to_string().contains("ServerBuilder::metrics"),
        "{error}"
    );
}

#[tokio::test]
async fn serve_metrics_serves_them_on_an_address_of_their_own() {
    let server = server(Surface::Native, MetricsConfig::default().path(None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve_metrics_on(listener).await });
    let mut client = Lines::initialized(&server).await;
    client
        .call(1, "count_posts", json!({"input": "post"}))
        .await;
    let metrics = get(addr, "/metrics").await;
    assert_eq!(metrics.status, 200);
    assert_eq!(
        sample(
            &metrics.body,
            "abilities_calls_total",
            r#"ability="count_posts",surface="native",outcome="OK""#
        ),
        Some(1.0),
        "{}",
        metrics.body
    );
}

/// A family of the application's own (here the shape the bridge registers for its
/// upstreams, `bridge/tests/lifecycle.rs` reads the bridge's) is served beside the server's,
/// under the same prefix, and promtool-valid text with it.
#[test]
fn a_family_of_the_applications_own_is_served_beside_the_servers() {
    use abilities::metrics::prometheus_client::metrics::{family::Family, gauge::Gauge};
    let server = server(Surface::Native, MetricsConfig::default());
    let metrics = server.metrics().unwrap();
    let up = Family::<Vec<(String, String)>, Gauge>::default();
    metrics
        .register(
            "upstream_up",
            "Whether a bridged upstream server answered its last sync (1) or not (0)",
            up.clone(),
        )
        .unwrap();
    // A name served already, one whose series would clash, one Prometheus cannot read.
    for (name, refused) in [
        ("upstream_up", "would clash with `abilities_upstream_up`"),
        ("calls_total", "would clash with `abilities_calls`"),
        ("tasks", "would clash with `abilities_tasks`"),
        ("my-exports", "is not a Prometheus metric name"),
        ("1st", "is not a Prometheus metric name"),
    ] {
        let error = metrics
            .register(name, "x", Family::<Vec<(String, String)>, Gauge>::default())
            .err()
            .unwrap_or_else(|| panic!("{name} was registered"));
        assert!(error.to_string().contains(refused), "{name}: {error}");
    }
    up.get_or_create(&vec![("upstream".to_owned(), "files".to_owned())])
        .set(1);
    up.get_or_create(&vec![("upstream".to_owned(), "time".to_owned())])
        .set(0);
    let text = metrics.encode();
    assert!(
        text.contains("# TYPE abilities_upstream_up gauge"),
        "{text}"
    );
    assert_eq!(
        sample(&text, "abilities_upstream_up", r#"upstream="files""#),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "abilities_upstream_up", r#"upstream="time""#),
        Some(0.0)
    );
}

#[tokio::test]
async fn the_metrics_link_removed_counts_no_call() {
    use abilities::middleware::{Builtin, Chain};
    let server = builder!()
        .metrics(MetricsConfig::default())
        .chain(Chain::default().without(Builtin::Metrics))
        .build()
        .expect("valid server");
    let mut client = Lines::initialized(&server).await;
    let done = client
        .call(1, "count_posts", json!({"input": "post"}))
        .await;
    assert_eq!(done["isError"], false, "{done}");
    let text = server.metrics().expect("configured").encode();
    assert_eq!(
        sample(
            &text,
            "abilities_call_duration_seconds_count",
            r#"ability="count_posts""#
        ),
        None,
        "{text}"
    );
    assert!(
        !text.contains(r#"ability="count_posts",surface="native""#),
        "{text}"
    );
}
