//! What the bridge serves for an upstream and how calls go through it: classification and
//! overlay, validation before forwarding, results and errors, progress, logs, cancellation,
//! relayed elicitation, resources and prompts.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

mod support;

use std::time::Duration;

use abilities::protocol::rmcp::model::{
    CallToolRequestParams, ClientRequest, GetPromptRequestParams, ReadResourceRequestParams,
};
use abilities::{
    Surface,
    aql::{Aql, AqlMode},
};
use serde_json::{Value, json};
use support::{bridge, call, connect, error_of, upstream};

fn row<'a>(rows: &'a [abilities_bridge::Row], ability: &str) -> &'a abilities_bridge::Row {
    rows.iter()
        .find(|r| r.ability == ability)
        .unwrap_or_else(|| panic!("{ability} is listed"))
}

#[tokio::test]
async fn classification_overlay_and_names() {
    let config = json!({
        "mcpServers": {"up": upstream(&[])},
        "overlay": {"up": {"tools": {
            "add": {"rename": "sum", "semantic": "READ", "description": "Sum two numbers."},
            "fail": {"hide": true},
            "crash": {"danger": "forbidden"}
        }}}
    });
    let (server, bridge) = bridge(config, Surface::Native).await;
    let rows = bridge.listing();
    let class = |name: &str| {
        let r = row(&rows, name);
        (
            r.semantic.as_str(),
            r.semantic_why.as_str(),
            r.danger.as_str(),
            r.danger_why.as_str(),
        )
    };
    assert_eq!(
        class("up/echo"),
        ("READ", "readOnlyHint", "safe", "the READ default")
    );
    assert_eq!(
        class("up/delete_note"),
        (
            "DELETE",
            "verb \"delete\"",
            "destructive",
            "the DELETE default"
        )
    );
    assert_eq!(
        class("up/purge_cache"),
        ("EXECUTE", "default", "dangerous", "name \"purge_*\"")
    );
    assert_eq!(
        class("up/sum"),
        ("READ", "overlay", "safe", "the READ default")
    );
    assert_eq!(class("up/crash").2, "forbidden");
    assert_eq!(class("up/crash").3, "overlay");
    assert_eq!(
        row(&rows, "fail").skipped.as_deref(),
        Some("hidden by the overlay")
    );
    assert_eq!(row(&rows, "up/readme").kind, "resource");
    assert_eq!(row(&rows, "up/note").kind, "template");
    assert_eq!(row(&rows, "up/greet").kind, "prompt");

    // Native: the upstream's tools as they are, namespaced; its schema unchanged.
    let tools = server.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"up-echo") && names.contains(&"up-sum") && !names.contains(&"up-fail"),
        "{names:?}"
    );
    let sum = tools.iter().find(|t| t.name == "up-sum").expect("listed");
    assert_eq!(sum.description.as_deref(), Some("Sum two numbers."));
    let schema = Value::Object((*sum.input_schema).clone());
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["required"], json!(["a", "b"]));
    // The upstream's own parameters and nothing added (it has no site: no `site_id`).
    assert_eq!(
        schema["properties"].as_object().map(|p| p.len()),
        Some(2),
        "{schema}"
    );
    let echo = tools.iter().find(|t| t.name == "up-echo").expect("listed");
    let hints = serde_json::to_value(&echo.annotations).expect("serializes");
    assert_eq!(hints["readOnlyHint"], true);
    assert_eq!(hints["openWorldHint"], false, "the upstream's own hint");
}

#[tokio::test]
async fn calls_results_errors_and_validation() {
    let (server, _bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, _) = connect(&server, false).await;

    let echoed = call(&client, "up-echo", json!({"text": "hi"})).await;
    assert_eq!(echoed["structuredContent"], json!({"echoed": "hi"}));
    assert_eq!(echoed["isError"], false);
    assert_eq!(
        echoed["content"].as_array().map(Vec::len),
        Some(1),
        "one JSON text block: {echoed}"
    );

    // Arguments that break the upstream's schema are refused here, every violation listed,
    // and never reach it.
    let refused = error_of(&call(&client, "up-add", json!({"a": "two", "c": 1})).await);
    assert!(
        refused["code"]
            .as_str()
            .is_some_and(|c| c.starts_with("VALIDATION_")),
        "{refused}"
    );
    let text = refused.to_string();
    assert!(text.contains("\"a\"") || text.contains("/a"), "{text}");
    assert!(text.contains("b"), "the missing b is listed too: {text}");
    let counts = call(&client, "up-call_counts", json!({})).await;
    assert!(counts["structuredContent"].get("add").is_none(), "{counts}");
    let summed = call(&client, "up-add", json!({"a": 2, "b": 40})).await;
    assert_eq!(summed["structuredContent"], json!({"sum": 42}));
    let counts = call(&client, "up-call_counts", json!({})).await;
    assert_eq!(counts["structuredContent"]["add"], 1);

    // The upstream's isError result: EXECUTION_FAILED, its own words and content kept.
    let failed = error_of(&call(&client, "up-fail", json!({})).await);
    assert_eq!(failed["code"], "EXECUTION_FAILED");
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("the disk is on fire")),
        "{failed}"
    );
    assert_eq!(failed["details"]["server"], "up");
    assert_eq!(failed["details"]["tool"], "fail");
    assert_eq!(failed["details"]["content"][0]["type"], "text");
}

#[tokio::test]
async fn progress_logs_and_cancellation_cross_the_bridge() {
    let (server, _bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, seen) = connect(&server, false).await;
    let args = json!({"count": 3});
    let request =
        ClientRequest::CallToolRequest(abilities::protocol::rmcp::model::CallToolRequest::new(
            CallToolRequestParams::new("up-steps")
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        ));
    let handle = client
        .peer()
        .send_cancellable_request(request, Default::default())
        .await
        .expect("sent");
    let answer = handle.await_response().await.expect("answered");
    let answer = serde_json::to_value(answer).expect("serializes");
    assert_eq!(answer["structuredContent"], json!({"steps": 3}));
    tokio::time::sleep(Duration::from_millis(100)).await;
    {
        let seen = seen.lock().expect("unpoisoned");
        let progress: Vec<f64> = seen.progress.iter().map(|p| p.0).collect();
        assert_eq!(progress, [1.0, 2.0, 3.0], "progress in order");
        assert_eq!(seen.progress[2].1.as_deref(), Some("step 3"));
        assert_eq!(
            seen.logs,
            [json!({"step": 1}), json!({"step": 2}), json!({"step": 3})]
        );
    }

    // A cancelled call is cancelled upstream too.
    let request =
        ClientRequest::CallToolRequest(abilities::protocol::rmcp::model::CallToolRequest::new(
            CallToolRequestParams::new("up-wait_ms")
                .with_arguments(json!({"ms": 5000}).as_object().cloned().unwrap_or_default()),
        ));
    let handle = client
        .peer()
        .send_cancellable_request(request, Default::default())
        .await
        .expect("sent");
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle
        .cancel(Some("changed my mind".into()))
        .await
        .expect("cancel sent");
    let mut cancelled = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cancelled = call(&client, "up-call_counts", json!({})).await["structuredContent"].clone();
        if cancelled.get("wait_ms cancelled").is_some() {
            break;
        }
    }
    assert_eq!(cancelled["wait_ms cancelled"], 1, "{cancelled}");
    assert!(cancelled.get("wait_ms").is_none());
}

#[tokio::test]
async fn elicitation_and_sampling_are_relayed_to_the_downstream_client() {
    let (server, _bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, _) = connect(&server, true).await;
    let sampled = call(&client, "up-ask_model", json!({"prompt": "hi"})).await;
    assert_eq!(
        sampled["structuredContent"],
        json!({"model_said": "echo: hi"}),
        "{sampled}"
    );
    let answered = call(&client, "up-ask_name", json!({})).await;
    assert_eq!(
        answered["structuredContent"],
        json!({"hello": "ada"}),
        "{answered}"
    );

    // On 2026-07-28 the question comes back as multi-round input; the answer reaches the
    // upstream when the call runs again.
    let (modern, _) = support::connect_with(&server, true, "2026-07-28").await;
    let answered = call(&modern, "up-ask_name", json!({})).await;
    assert_eq!(
        answered["structuredContent"],
        json!({"hello": "ada"}),
        "{answered}"
    );

    // A downstream client without elicitation: the call says so.
    let (plain, _) = connect(&server, false).await;
    let refused = error_of(&call(&plain, "up-ask_name", json!({})).await);
    assert_eq!(refused["code"], "CLIENT_CAPABILITY_MISSING", "{refused}");
    let refused = error_of(&call(&plain, "up-ask_model", json!({"prompt": "hi"})).await);
    assert_eq!(refused["code"], "CLIENT_CAPABILITY_MISSING", "{refused}");
}

#[tokio::test]
async fn resources_and_prompts_are_served_namespaced() {
    let (server, _bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, _) = connect(&server, false).await;
    let read = client
        .read_resource(ReadResourceRequestParams::new("note://readme"))
        .await
        .expect("read");
    let read = serde_json::to_value(read).expect("serializes");
    assert_eq!(
        read["contents"][0]["text"], "Notes are kept here.",
        "{read}"
    );
    assert_eq!(read["contents"][0]["uri"], "note://readme");
    let templated = client
        .read_resource(ReadResourceRequestParams::new("note://7"))
        .await
        .expect("read");
    let templated = serde_json::to_value(templated).expect("serializes");
    assert_eq!(templated["contents"][0]["text"], "note 7", "{templated}");
    let prompts = client.list_all_prompts().await.expect("listed");
    assert!(prompts.iter().any(|p| p.name == "up-greet"), "{prompts:?}");
    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("up-greet").with_arguments(
                json!({"name": "Ada"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect("got");
    let prompt = serde_json::to_value(prompt).expect("serializes");
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Say hello to Ada.",
        "{prompt}"
    );
}

#[tokio::test]
async fn mcp_aql_gates_what_the_upstream_would_destroy() {
    let surface = Surface::Aql(Aql::new(AqlMode::Single));
    let (server, _bridge) = bridge(json!({"mcpServers": {"up": upstream(&[])}}), surface).await;
    let (client, _) = connect(&server, false).await;
    let aql = |params: Value| json!({"operation": "up_delete_note", "params": params});
    let text = |answer: Value| -> Value {
        serde_json::from_str(answer["content"][0]["text"].as_str().expect("text")).expect("JSON")
    };
    let first = text(call(&client, "mcp_aql", aql(json!({"id": 3}))).await);
    assert_eq!(first["success"], false, "{first}");
    assert_eq!(first["error"]["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(first["error"]["details"]["danger_level"], "destructive");
    let counts = text(call(&client, "mcp_aql", json!({"operation": "up_call_counts"})).await);
    assert!(counts["data"].get("delete_note").is_none(), "{counts}");
    let token = first["error"]["details"]["confirmation_token"]
        .as_str()
        .expect("a token");
    let confirmed = text(
        call(
            &client,
            "mcp_aql",
            aql(json!({"id": 3, "_confirmation": token})),
        )
        .await,
    );
    assert_eq!(confirmed["data"], json!({"deleted": 3}), "{confirmed}");
}

#[tokio::test]
async fn an_http_upstream_is_reached_by_its_url() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(support::upstream_bin())
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the upstream runs");
    let mut url = String::new();
    tokio::io::BufReader::new(child.stdout.take().expect("its stdout"))
        .read_line(&mut url)
        .await
        .expect("its URL");
    let config = json!({"mcpServers": {"web": {"type": "http", "url": url.trim(), "headers": {"X-Trace": "bridge"}}}});
    let (server, bridge) = bridge(config, Surface::Native).await;
    assert_eq!(bridge.status()[0]["status"], "up", "{}", bridge.status());
    let (client, _) = connect(&server, false).await;
    let echoed = call(&client, "web-echo", json!({"text": "over http"})).await;
    assert_eq!(
        echoed["structuredContent"],
        json!({"echoed": "over http"}),
        "{echoed}"
    );
}

#[tokio::test]
async fn an_upstreams_skills_are_served_under_its_name() {
    let (server, bridge) = bridge(
        json!({"mcpServers": {"up": upstream(&["--skills"]), "plain": upstream(&[])}}),
        Surface::Native,
    )
    .await;
    let (client, _) = connect(&server, false).await;
    let skills = client.list_all_skills().await.expect("listed");
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, ["skill://up/pdf/SKILL.md"]);
    let abilities::protocol::rmcp::model::SkillResources::Files(files) = &skills[0].resources
    else {
        panic!("files listed: {skills:?}");
    };
    let listed: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        listed,
        [
            "skill://up/pdf/SKILL.md",
            "skill://up/pdf/forms/fields.md",
            "skill://up/pdf/logo.png"
        ]
    );
    // Every file reads back with the bytes the upstream served, as its digest says.
    for file in files {
        let read = client
            .read_resource(ReadResourceRequestParams::new(file.uri.as_str()))
            .await
            .expect("read");
        let bytes = match &read.contents[0] {
            abilities::protocol::rmcp::model::ResourceContents::TextResourceContents {
                text,
                ..
            } => text.as_bytes().to_vec(),
            abilities::protocol::rmcp::model::ResourceContents::BlobResourceContents {
                blob,
                ..
            } => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .expect("base64")
            }
            other => panic!("text or blob: {other:?}"),
        };
        file.verify(&bytes).expect("the digest and size hold");
    }
    // The status says how many each upstream has: none is 0.
    let status = bridge.status();
    let count = |name: &str| {
        status
            .as_array()
            .and_then(|all| all.iter().find(|u| u["server"] == name))
            .map(|u| u["skills"].clone())
    };
    assert_eq!(count("up"), Some(json!(1)), "{status}");
    assert_eq!(count("plain"), Some(json!(0)), "{status}");
}

#[tokio::test]
async fn a_traced_call_spans_the_upstream_call_below_its_own() {
    use abilities::otel::OtelConfig;
    use abilities::otel::opentelemetry::trace::SpanKind;
    use abilities::otel::opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let config =
        abilities_bridge::Config::parse(&json!({"mcpServers": {"up": upstream(&[])}}).to_string())
            .expect("a valid configuration");
    let server = abilities::Server::builder()
        .name("bridge", "1")
        .otel(OtelConfig::provider(provider))
        .build()
        .expect("builds");
    let _bridge = abilities_bridge::Bridge::start(config, server.clone(), support::timing()).await;
    let (client, _) = connect(&server, false).await;
    let echoed = call(&client, "up-echo", json!({"text": "hi"})).await;
    assert_eq!(echoed["structuredContent"]["echoed"], "hi", "{echoed}");
    let spans = exporter.get_finished_spans().expect("spans");
    let named = |name: &str| {
        spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
            panic!(
                "no {name}: {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        })
    };
    let request = named("tools/call up-echo");
    let ability = named("call up/echo");
    let upstream_call = named("tools/call echo");
    assert_eq!(ability.parent_span_id, request.span_context.span_id());
    assert_eq!(upstream_call.parent_span_id, ability.span_context.span_id());
    assert_eq!(upstream_call.span_kind, SpanKind::Client);
    assert_eq!(
        upstream_call.span_context.trace_id(),
        request.span_context.trace_id()
    );
}
