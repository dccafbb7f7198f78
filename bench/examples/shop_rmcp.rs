// cargo run --release -p abilities-bench --example shop_rmcp -- --http 127.0.0.1:8102
//! The shop workload's three tools (`bench/shared/shop.rs`) written by hand with rmcp's own
//! macros, as a user of rmcp would: the baseline `shop_site` (abilities) is measured against.

#[path = "../shared/rmcp_serve.rs"]
mod rmcp_serve;
#[path = "../shared/shop.rs"]
#[allow(dead_code, reason = "the seed and the catalog are the API's")]
mod shop;

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use shop::{CartArgs, CheckoutArgs, SearchArgs, Shop, ShopError};

/// Serve the hand-written shop.
#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Answer with plain JSON where rmcp may (`StreamableHttpServerConfig::json_response`,
    /// as the public cross-SDK benchmark and rmcp's docs configure it for request-response
    /// tools), instead of rmcp's default SSE stream.
    #[arg(long)]
    json_response: bool,
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
    rmcp_serve::logging();
    let args = Args::parse();
    let run = async {
        let server = RmcpShop {
            shop: Shop::connect(&args.redis, &args.api, "rmcp").await?,
            tool_router: RmcpShop::tool_router(),
        };
        rmcp_serve::serve(server, args.http, args.json_response).await
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
