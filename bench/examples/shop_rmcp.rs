// cargo run --release -p abilities-bench --example shop_rmcp -- --http 127.0.0.1:8102
//! The shop workload's three tools (`bench/shared/shop.rs`) written by hand with rmcp's own
//! macros, as a user of rmcp would: the baseline `shop_site` (abilities) is measured against.

#[path = "../shared/shop.rs"]
#[allow(dead_code, reason = "the seed and the catalog are the API's")]
mod shop;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use shop::{CartArgs, CheckoutArgs, SearchArgs, Shop, ShopError};

/// Serve the hand-written shop.
#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6390")]
    redis: String,
    /// The shop API (the `shop_api` example).
    #[arg(long, default_value = "http://127.0.0.1:8100")]
    api: String,
}

/// The hand-written server.
#[derive(Clone)]
struct RmcpShop {
    shop: Shop,
    tool_router: ToolRouter<Self>,
}

/// A tool's answer: the JSON as text and as `structuredContent`, as abilities answers; a
/// failure as an error result.
fn answer<T: serde::Serialize>(result: Result<T, ShopError>) -> Result<CallToolResult, ErrorData> {
    Ok(match result {
        Ok(value) => CallToolResult::structured(
            serde_json::to_value(value)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
        ),
        Err(error) => {
            CallToolResult::error(vec![rmcp::model::ContentBlock::text(error.to_string())])
        }
    })
}

#[tool_router]
impl RmcpShop {
    /// Search the catalog: a category's products in a price range, cheapest first, with the
    /// ten most popular products' ids.
    #[tool]
    async fn search_products(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.shop.search_products(args).await)
    }

    /// A user's cart, with their five most recent orders.
    #[tool]
    async fn get_user_cart(
        &self,
        Parameters(args): Parameters<CartArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.shop.get_user_cart(args).await)
    }

    /// Check out a cart: price it, count the user's orders and record the order.
    #[tool]
    async fn checkout(
        &self,
        Parameters(args): Parameters<CheckoutArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.shop.checkout(args).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RmcpShop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    // The same logging set-up as `shop_site`, so both pay the same for it.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp=error".into()),
        )
        .init();
    let args = Args::parse();
    let run = async {
        let server = RmcpShop {
            shop: Shop::connect(&args.redis, &args.api, "rmcp").await?,
            tool_router: RmcpShop::tool_router(),
        };
        match args.http {
            Some(addr) => {
                let service = StreamableHttpService::new(
                    move || Ok(server.clone()),
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                );
                let router = abilities::http::axum::Router::new().nest_service("/mcp", service);
                let listener = tokio::net::TcpListener::bind(addr).await?;
                println!("http://{}/mcp", listener.local_addr()?);
                abilities::http::serve_router(listener, router).await?;
            }
            None => {
                server
                    .serve((tokio::io::stdin(), tokio::io::stdout()))
                    .await?
                    .waiting()
                    .await?;
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
