//! Per-call overhead of the pipeline (normalize, validate, unwrap, call, wrap) against calling
//! the bare function, for a flattened and an object ability, with valid and invalid input; and
//! a whole `tools/call` handler (abilities' against an rmcp `#[tool]` one doing the same work),
//! invoked in process without a transport; and the flattened ability built at run time
//! (`Ability::builder`), which must cost what the macro's does.
//!
//! Run: `cargo bench -p abilities-bench --bench pipeline` (`abilities_metrics` is the same
//! handler counting every call for Prometheus). The handlers are synchronous, so each pipeline call
//! completes on its first poll; the handler group runs each call on a current-thread runtime,
//! the same for both.

use std::hint::black_box;

mod common;

use abilities::{Ability, Context, Registry, Semantic, Server, ability};
use common::peer;
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolRequestParams, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum PostType {
    Post,
    Page,
    Attachment,
}

/// Count published posts of one type.
#[ability(semantic = "READ", flatten, name = "my-plugin/count-posts")]
fn count_posts(post_type: PostType) -> u64 {
    match post_type {
        PostType::Post => 42,
        PostType::Page => 7,
        PostType::Attachment => 0,
    }
}

#[derive(Serialize, JsonSchema)]
struct Post {
    id: u64,
    title: String,
    status: String,
}

/// Create a post.
#[ability(semantic = "CREATE")]
fn create_post(
    title: String,
    #[param(default = "draft".to_owned())] status: String,
    dry_run: Option<bool>,
) -> Post {
    let _ = dry_run;
    Post {
        id: 7,
        title,
        status,
    }
}

fn call(
    registry: &Registry,
    ctx: &Context,
    name: &str,
    args: Value,
) -> Result<Value, abilities::AbilityError> {
    match registry.call(ctx.clone(), name, args).now_or_never() {
        Some(result) => result,
        None => unreachable!("synchronous handlers complete on the first poll"),
    }
}

/// `count_posts` built at run time: the same schema, as JSON, and a closure doing the same work.
fn runtime_count_posts() -> Ability {
    let schema = serde_json::to_value(schemars::schema_for!(PostType)).unwrap_or_default();
    Ability::builder("runtime/count-posts", Semantic::Read)
        .description("Count published posts of one type.")
        .input_schema(schema)
        .output_schema(json!({"type": "integer", "minimum": 0}))
        .handler(|_ctx, input: Value| async move {
            let post_type: PostType = serde_json::from_value(input)
                .map_err(|e| abilities::AbilityError::invalid(e.to_string()))?;
            Ok(count_posts(post_type))
        })
        .build()
        .unwrap_or_else(|e| panic!("the runtime ability is valid: {e}"))
}

fn pipeline(c: &mut Criterion) {
    let registry = match Registry::collect().and_then(|r| r.with(runtime_count_posts())) {
        Ok(registry) => registry,
        Err(e) => panic!("bench abilities are valid: {e}"),
    };
    let ctx = Context::new();

    let mut flattened = c.benchmark_group("flattened");
    flattened.bench_function("bare_fn", |b| {
        b.iter(|| {
            let post_type: PostType =
                serde_json::from_value(black_box(json!("post"))).unwrap_or(PostType::Page);
            black_box(json!({ "result": count_posts(post_type) }))
        })
    });
    flattened.bench_function("pipeline_valid", |b| {
        b.iter(|| {
            call(
                &registry,
                &ctx,
                "my-plugin-count-posts",
                black_box(json!({"input": "post"})),
            )
        })
    });
    flattened.bench_function("runtime_built_valid", |b| {
        b.iter(|| {
            call(
                &registry,
                &ctx,
                "runtime-count-posts",
                black_box(json!({"input": "post"})),
            )
        })
    });
    flattened.bench_function("pipeline_invalid", |b| {
        b.iter(|| {
            call(
                &registry,
                &ctx,
                "my-plugin-count-posts",
                black_box(json!({"input": "video"})),
            )
        })
    });
    flattened.finish();

    let mut object = c.benchmark_group("object");
    object.bench_function("bare_fn", |b| {
        b.iter(|| {
            let args = black_box(json!({"title": "Hello", "dry_run": true}));
            let title = args["title"].as_str().unwrap_or_default().to_owned();
            black_box(serde_json::to_value(create_post(
                title,
                "draft".to_owned(),
                args["dry_run"].as_bool(),
            )))
        })
    });
    object.bench_function("pipeline_valid", |b| {
        b.iter(|| {
            call(
                &registry,
                &ctx,
                "create_post",
                black_box(json!({"title": "Hello", "dry_run": true})),
            )
        })
    });
    object.bench_function("pipeline_invalid", |b| {
        b.iter(|| {
            call(
                &registry,
                &ctx,
                "create_post",
                black_box(json!({"title": 5, "dry_run": "yes"})),
            )
        })
    });
    object.finish();
}

/// The flattened tool, written by hand with rmcp's macros.
#[derive(Clone)]
struct RmcpCount {
    tool_router: ToolRouter<Self>,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    input: PostType,
}

#[derive(Serialize, JsonSchema)]
struct Count {
    result: u64,
}

#[tool_router]
impl RmcpCount {
    /// Count published posts of one type.
    #[tool(name = "my-plugin-count-posts")]
    async fn count_posts(
        &self,
        Parameters(CountArgs { input }): Parameters<CountArgs>,
    ) -> Json<Count> {
        Json(Count {
            result: count_posts(input),
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RmcpCount {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn handler(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let server = Server::builder()
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"));
    let ours = server.handler(None);
    // The same server counting every call for Prometheus (feature `metrics`).
    let counted = Server::builder()
        .metrics(abilities::metrics::MetricsConfig::default())
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"))
        .handler(None);
    let counted_peer = rt.block_on(peer(counted.clone()));
    let theirs = RmcpCount {
        tool_router: RmcpCount::tool_router(),
    };
    let ours_peer = rt.block_on(peer(ours.clone()));
    let theirs_peer = rt.block_on(peer(theirs.clone()));
    let params = || -> CallToolRequestParams {
        serde_json::from_value(
            json!({"name": "my-plugin-count-posts", "arguments": {"input": "post"}}),
        )
        .unwrap_or_else(|e| panic!("params: {e}"))
    };

    let mut group = c.benchmark_group("tools/call handler");
    group.bench_function("abilities", |b| {
        b.iter(|| {
            let ctx = common::request(&ours_peer);
            rt.block_on(ServerHandler::call_tool(&ours, black_box(params()), ctx))
                .map(black_box)
        })
    });
    group.bench_function("abilities_metrics", |b| {
        b.iter(|| {
            let ctx = common::request(&counted_peer);
            rt.block_on(ServerHandler::call_tool(&counted, black_box(params()), ctx))
                .map(black_box)
        })
    });
    group.bench_function("rmcp_tool", |b| {
        b.iter(|| {
            let ctx = common::request(&theirs_peer);
            rt.block_on(ServerHandler::call_tool(&theirs, black_box(params()), ctx))
                .map(black_box)
        })
    });
    group.finish();

    // What counting a call costs, alone: two clock reads, a counter and a histogram.
    let mut group = c.benchmark_group("metrics");
    let metered = Server::builder()
        .metrics(abilities::metrics::MetricsConfig::default())
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"));
    let metrics = metered.metrics().unwrap_or_else(|| panic!("counted"));
    let probe = abilities::__private::MetricsProbe::default();
    group.bench_function("count_one_call", |b| {
        b.iter(|| probe.call(metrics, black_box("my-plugin/count-posts")))
    });
    group.finish();
}

criterion_group!(benches, pipeline, handler);
criterion_main!(benches);
