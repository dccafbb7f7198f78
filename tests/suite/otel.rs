//! Traces (feature `otel`), read from an in-memory exporter: a request's span joins the
//! client's trace (`traceparent`/`tracestate` in `_meta`, else the HTTP header; a malformed
//! one starts a new trace and fails nothing), an ability call's span is its child with the
//! surface, semantic and outcome, the store's operations and a task's run are children of
//! the request's span, failures mark the spans, and the principal and arguments are recorded
//! only when configured, never a sensitive one.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::time::Duration;

use crate::support::{Lines, post, serve_http};
use abilities::otel::OtelConfig;
use abilities::otel::opentelemetry::trace::{SpanId, SpanKind, Status};
use abilities::otel::opentelemetry_sdk::trace::{
    InMemorySpanExporter, SdkTracerProvider, SpanData,
};
use abilities::{AbilityError, Context, ErrorCode, Server, ability};
use serde_json::{Value, json};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

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

/// Sign in.
#[ability(semantic = "EXECUTE")]
fn sign_in(user: String, #[param(sensitive)] password: String) -> String {
    format!("{user}:{}", password.len())
}

/// Unlock with a PIN, the whole input sensitive.
#[ability(semantic = "EXECUTE", flatten)]
fn unlock(#[param(sensitive)] pin: u32) -> bool {
    pin == 1234
}

/// Nap, as a task when the client can run one.
#[ability(semantic = "READ", task = "optional")]
async fn nap(ctx: &Context, ms: u64) -> Value {
    let _ = ctx;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    json!({"slept": ms})
}

/// What a request to another server would carry from inside a span of the handler's.
#[ability(semantic = "READ")]
async fn forward() -> Result<Value, AbilityError> {
    use abilities::otel::opentelemetry::trace::SpanKind;
    abilities::otel::in_span("upstream call", SpanKind::Client, async {
        let mut meta = serde_json::Map::new();
        abilities::otel::inject(&mut meta);
        Ok::<_, AbilityError>(Value::Object(meta))
    })
    .await
}

fn traced(config: impl FnOnce(OtelConfig) -> OtelConfig) -> (Server, InMemorySpanExporter) {
    traced_by(builder!(), config)
}

/// `builder` traced as `config` says, into an exporter the test reads.
fn traced_by(
    builder: abilities::ServerBuilder,
    config: impl FnOnce(OtelConfig) -> OtelConfig,
) -> (Server, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let server = builder
        .otel(config(OtelConfig::provider(provider)))
        .build()
        .expect("valid server");
    (server, exporter)
}

fn spans(exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    exporter.get_finished_spans().expect("spans")
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name}: {:?}", names(spans)))
}

fn names(spans: &[SpanData]) -> Vec<String> {
    spans.iter().map(|s| s.name.to_string()).collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// `tools/call` in the client's trace (`TRACE`, its span `PARENT`) with more `_meta`; the
/// answer.
async fn call_in_trace(
    client: &mut Lines,
    id: u64,
    name: &str,
    args: Value,
    mut meta: Value,
) -> Value {
    meta["traceparent"] = json!(format!("00-{TRACE}-{PARENT}-01"));
    client.send(&call_with_meta(id, name, args, meta)).await;
    client.response(&json!(id)).await
}

fn call_with_meta(id: u64, name: &str, args: Value, meta: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args, "_meta": meta}})
    .to_string()
}

#[tokio::test]
async fn a_call_joins_the_clients_trace_and_its_ability_span_is_a_child() {
    let (server, exporter) = traced(|c| c);
    let mut client = Lines::initialized(&server).await;
    let answer = call_in_trace(
        &mut client,
        7,
        "count_posts",
        json!({"input": "post"}),
        json!({"tracestate": "vendor=1"}),
    )
    .await;
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 3}));

    let spans = spans(&exporter);
    let request = named(&spans, "tools/call count_posts");
    assert_eq!(request.span_kind, SpanKind::Server);
    assert_eq!(request.span_context.trace_id().to_string(), TRACE);
    assert_eq!(request.parent_span_id.to_string(), PARENT);
    assert!(request.parent_span_is_remote);
    assert_eq!(request.span_context.trace_state().header(), "vendor=1");
    assert_eq!(
        attribute(request, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attribute(request, "gen_ai.tool.name").as_deref(),
        Some("count_posts")
    );
    assert_eq!(
        attribute(request, "jsonrpc.request.id").as_deref(),
        Some("7")
    );
    assert_eq!(request.status, Status::Unset);

    let call = named(&spans, "call count_posts");
    assert_eq!(call.span_kind, SpanKind::Internal);
    assert_eq!(call.span_context.trace_id().to_string(), TRACE);
    assert_eq!(call.parent_span_id, request.span_context.span_id());
    assert_eq!(
        attribute(call, "abilities.surface").as_deref(),
        Some("native")
    );
    assert_eq!(
        attribute(call, "abilities.semantic").as_deref(),
        Some("READ")
    );
    assert_eq!(attribute(call, "abilities.outcome").as_deref(), Some("OK"));
    // Neither the principal nor an argument unless configured.
    assert_eq!(attribute(call, "enduser.id"), None);
    assert!(
        call.attributes
            .iter()
            .all(|kv| !kv.key.as_str().starts_with("abilities.argument.")),
        "{:?}",
        call.attributes
    );
}

#[tokio::test]
async fn failures_mark_the_spans_and_a_malformed_traceparent_starts_a_new_trace() {
    let (server, exporter) = traced(|c| c);
    let mut client = Lines::initialized(&server).await;
    client
        .send(&call_with_meta(
            1,
            "count_posts",
            json!({"input": "page"}),
            json!({"traceparent": "00-not-a-trace-01"}),
        ))
        .await;
    let failed = client.response(&json!(1)).await;
    assert_eq!(
        failed["result"]["isError"], true,
        "the call is still answered"
    );
    let unknown = client
        .request(2, "tools/call", json!({"name": "made_up", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);

    let spans = spans(&exporter);
    let request = named(&spans, "tools/call count_posts");
    assert!(request.span_context.is_valid());
    assert_ne!(request.span_context.trace_id().to_string(), TRACE);
    assert_eq!(request.parent_span_id, SpanId::INVALID, "a new trace");
    assert_eq!(
        attribute(request, "error.type").as_deref(),
        Some("tool_error")
    );
    let call = named(&spans, "call count_posts");
    assert_eq!(
        attribute(call, "error.type").as_deref(),
        Some("EXECUTION_FAILED")
    );
    assert!(
        matches!(call.status, Status::Error { .. }),
        "{:?}",
        call.status
    );
    // A name the client made up names no span.
    let refused = named(&spans, "tools/call");
    assert_eq!(attribute(refused, "error.type").as_deref(), Some("-32602"));
    assert_eq!(attribute(refused, "gen_ai.tool.name"), None);
    assert!(!format!("{spans:?}").contains("made_up"), "{spans:?}");
    assert_eq!(
        spans.iter().filter(|s| s.name.starts_with("call ")).count(),
        1,
        "no ability ran for a tool that does not exist: {:?}",
        names(&spans)
    );
}

#[tokio::test]
async fn the_principal_and_arguments_are_recorded_only_when_configured_never_a_sensitive_one() {
    let (server, exporter) = traced(|c| c.record_principal(true).record_arguments(true));
    let mut client = Lines::initialized(&server).await;
    client
        .call(1, "sign_in", json!({"user": "ada", "password": "hunter2"}))
        .await;
    // A long argument is recorded cut short.
    let long = "é".repeat(2000);
    client
        .call(2, "sign_in", json!({"user": long, "password": "x"}))
        .await;
    let spans = spans(&exporter);
    let cut = spans
        .iter()
        .filter(|s| s.name == "call sign_in")
        .find_map(|s| attribute(s, "abilities.argument.user").filter(|u| u.len() > 100))
        .expect("the long argument's span");
    assert!(
        cut.len() <= 1024 + 3 && cut.ends_with("..."),
        "{}",
        cut.len()
    );
    let call = named(&spans, "call sign_in");
    assert_eq!(attribute(call, "enduser.id").as_deref(), Some("local"));
    assert_eq!(
        attribute(call, "abilities.argument.user").as_deref(),
        Some(r#""ada""#)
    );
    assert_eq!(
        attribute(call, "abilities.argument.password").as_deref(),
        Some(r#""(sensitive)""#)
    );
    let everything = format!("{spans:?}");
    assert!(!everything.contains("hunter2"), "the secret is in a span");

    // A flattened input that is sensitive as a whole: recorded as hidden.
    client.call(3, "unlock", json!({"input": 987654})).await;
    let spans = super::otel::spans(&exporter);
    let unlock = named(&spans, "call unlock");
    assert_eq!(
        attribute(unlock, "abilities.argument.input").as_deref(),
        Some(r#""(sensitive)""#)
    );
    assert!(
        !format!("{spans:?}").contains("987654"),
        "the PIN is in a span"
    );
}

#[tokio::test]
async fn the_http_header_is_the_parent_when_meta_has_none_and_meta_wins() {
    let (server, exporter) = traced(|c| c);
    let addr = serve_http(&server).await;
    let send = |id: u64, meta: Value| {
        let mut meta = meta;
        meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        call_with_meta(id, "count_posts", json!({"input": "post"}), meta)
    };
    let headers = |header: &'static str| {
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "count_posts"),
            ("traceparent", header),
        ]
    };
    let header = "00-11111111111111111111111111111111-2222222222222222-01";
    let answer = post(addr, "/mcp", &headers(header), send(1, json!({}))).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let both = post(
        addr,
        "/mcp",
        &headers(header),
        send(2, json!({"traceparent": format!("00-{TRACE}-{PARENT}-01")})),
    )
    .await;
    assert_eq!(both.status, 200, "{both:?}");

    let spans = spans(&exporter);
    let requests: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call count_posts")
        .collect();
    assert_eq!(requests.len(), 2, "{:?}", names(&spans));
    let by_id = |id: &str| {
        requests
            .iter()
            .find(|s| attribute(s, "jsonrpc.request.id").as_deref() == Some(id))
            .unwrap()
    };
    assert_eq!(
        by_id("1").span_context.trace_id().to_string(),
        "11111111111111111111111111111111"
    );
    assert_eq!(by_id("1").parent_span_id.to_string(), "2222222222222222");
    assert_eq!(by_id("2").span_context.trace_id().to_string(), TRACE);
    assert_eq!(by_id("2").parent_span_id.to_string(), PARENT);
    assert_eq!(
        attribute(by_id("2"), "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
}

#[tokio::test]
async fn the_stores_operations_and_a_tasks_run_are_children_of_the_request() {
    let (server, exporter) = traced(|c| c);
    let mut client = Lines::initialized(&server).await;
    call_in_trace(
        &mut client,
        1,
        "count_posts",
        json!({"input": "post"}),
        json!({"io.github.abilities-rs/idempotencyKey": "key-1"}),
    )
    .await;
    let spans_now = spans(&exporter);
    let request = named(&spans_now, "tools/call count_posts");
    for name in ["store claim", "store settle"] {
        let store = named(&spans_now, name);
        assert_eq!(
            store.parent_span_id,
            request.span_context.span_id(),
            "{name}"
        );
        assert_eq!(store.span_context.trace_id().to_string(), TRACE);
    }

    // A task: its run is a span of its own below the request's, ended when the task is.
    let addr = serve_http(&server).await;
    let meta = json!({
        "traceparent": format!("00-{TRACE}-{PARENT}-01"),
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let created = post(
        addr,
        "/mcp",
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "nap"),
        ],
        call_with_meta(2, "nap", json!({"ms": 200}), meta),
    )
    .await
    .message();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let mut task = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let spans = spans(&exporter);
        if let Some(span) = spans.iter().find(|s| s.name == "task nap") {
            task = Some((span.clone(), spans.clone()));
            break;
        }
    }
    let (task, spans) = task.expect("the task's span ends with the task");
    let request = named(&spans, "tools/call nap");
    assert_eq!(task.parent_span_id, request.span_context.span_id());
    assert_eq!(
        attribute(&task, "mcp.task.id").as_deref(),
        Some(task_id.as_str())
    );
    assert_eq!(attribute(&task, "abilities.outcome").as_deref(), Some("OK"));
    let store = named(&spans, "store insert_task");
    assert_eq!(store.parent_span_id, request.span_context.span_id());
}

#[tokio::test]
async fn a_handler_spans_its_own_work_and_hands_the_trace_on() {
    let (server, exporter) = traced(|c| c);
    let mut client = Lines::initialized(&server).await;
    let answer = call_in_trace(&mut client, 1, "forward", json!({}), json!({})).await;
    let carried = answer["result"]["structuredContent"]["result"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("a traceparent: {answer}"))
        .to_owned();
    assert!(
        answer["result"]["structuredContent"]["result"]
            .get("tracestate")
            .is_none(),
        "no empty tracestate: {answer}"
    );
    let spans = spans(&exporter);
    let call = named(&spans, "call forward");
    let work = named(&spans, "upstream call");
    assert_eq!(work.span_kind, SpanKind::Client);
    assert_eq!(work.parent_span_id, call.span_context.span_id());
    // What the next server is sent names this trace and the work's span as its parent.
    assert_eq!(
        carried,
        format!("00-{TRACE}-{}-01", work.span_context.span_id())
    );

    // Outside a traced request, nothing is injected and the work runs as it is.
    let mut meta = serde_json::Map::new();
    abilities::otel::inject(&mut meta);
    assert!(meta.is_empty());
}

#[tokio::test]
async fn the_traces_link_removed_opens_no_call_span() {
    use abilities::middleware::{Builtin, Chain};
    let without = builder!().chain(Chain::default().without(Builtin::Traces));
    let (server, exporter) = traced_by(without, |c| c);
    let mut client = Lines::initialized(&server).await;
    let answer = call_in_trace(
        &mut client,
        3,
        "count_posts",
        json!({"input": "post"}),
        json!({}),
    )
    .await;
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 3}));
    let spans = spans(&exporter);
    // The request is still traced (the adapter's span); the call's own span is not.
    named(&spans, "tools/call count_posts");
    assert!(
        spans.iter().all(|s| s.name != "call count_posts"),
        "{:?}",
        names(&spans)
    );
}
