//! Run one call path `N` times, for an instruction counter: `valgrind --tool=callgrind` counts
//! the same total for the same binary and input whatever else the machine does, so two
//! builds compare where wall-clock benches drown in noise. `scripts/instructions.sh` runs it
//! at two counts and prints instructions per call (the difference, so set-up cancels out).
//!
//! ```text
//! call_instructions <path> <n>
//!   path: flattened   Registry::call of a flattened ability (the pipeline alone)
//!         object      Registry::call of an ability with named parameters
//!         handler     ServerHandler::call_tool of a server (what a transport calls)
//!         rmcp        ServerHandler::call_tool of the same tool written with rmcp's macros
//!
//! call_instructions sizes
//!   the size in bytes of the future `ServerHandler::call_tool` returns, and of rmcp's
//!   dispatch of a request to it (`Service::handle_request`, as large as the handler's
//!   largest method: what a transport spawns), for the server and for the tool written with
//!   rmcp's macros
//! ```

use std::hint::black_box;

use abilities::{Context, Registry, Server, ability};
use futures_util::FutureExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolRequestParams, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
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

/// A server-side peer from a live in-memory session.
async fn peer<S: ServerHandler>(handler: S) -> Peer<RoleServer> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server, client) = tokio::join!(handler.serve(server_io), ().serve(client_io));
    let server = server.unwrap_or_else(|e| panic!("server: {e}"));
    let peer = server.peer().clone();
    std::mem::forget(client);
    std::mem::forget(server);
    peer
}

fn params() -> CallToolRequestParams {
    serde_json::from_value(json!({"name": "my-plugin-count-posts", "arguments": {"input": "post"}}))
        .unwrap_or_else(|e| panic!("params: {e}"))
}

fn registry_calls(n: u64, name: &str, args: &Value) {
    let registry = Registry::collect().unwrap_or_else(|e| panic!("registry: {e}"));
    let ctx = Context::new();
    for _ in 0..n {
        let out = registry
            .call(ctx.clone(), name, black_box(args.clone()))
            .now_or_never();
        assert!(matches!(out, Some(Ok(_))), "the call succeeds at once");
    }
}

fn handler_calls<S: ServerHandler + Clone>(n: u64, handler: S) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let peer = rt.block_on(peer(handler.clone()));
    for _ in 0..n {
        let ctx = RequestContext::new(rmcp::model::NumberOrString::Number(1), peer.clone());
        let out = rt.block_on(ServerHandler::call_tool(&handler, black_box(params()), ctx));
        assert!(out.is_ok(), "the call succeeds");
    }
}

/// The sizes of the futures `call_tool` and `handle_request` return for `handler`.
fn call_future_sizes<S: ServerHandler + Clone>(handler: S) -> (usize, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let peer = rt.block_on(peer(handler.clone()));
    let ctx = || RequestContext::new(rmcp::model::NumberOrString::Number(1), peer.clone());
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(params()));
    (
        std::mem::size_of_val(&ServerHandler::call_tool(&handler, params(), ctx())),
        std::mem::size_of_val(&rmcp::Service::handle_request(&handler, request, ctx())),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    match path.as_str() {
        "flattened" => registry_calls(n, "my-plugin/count-posts", &json!({"input": "post"})),
        "object" => registry_calls(
            n,
            "create_post",
            &json!({"title": "Hello", "dry_run": true}),
        ),
        "handler" => {
            let server = Server::builder()
                .build()
                .unwrap_or_else(|e| panic!("server: {e}"));
            handler_calls(n, server.handler(None));
        }
        "rmcp" => handler_calls(
            n,
            RmcpCount {
                tool_router: RmcpCount::tool_router(),
            },
        ),
        "sizes" => {
            let server = Server::builder()
                .build()
                .unwrap_or_else(|e| panic!("server: {e}"));
            let ours = call_future_sizes(server.handler(None));
            let rmcp = call_future_sizes(RmcpCount {
                tool_router: RmcpCount::tool_router(),
            });
            println!("call_tool: handler {} bytes, rmcp {} bytes", ours.0, rmcp.0);
            println!(
                "handle_request: handler {} bytes, rmcp {} bytes",
                ours.1, rmcp.1
            );
        }
        other => {
            eprintln!("unknown path '{other}': flattened, object, handler, rmcp or sizes");
            std::process::exit(2);
        }
    }
}
