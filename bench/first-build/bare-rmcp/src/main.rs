//! The quick start's two tools with rmcp's macros: stdio by default, streamable HTTP at `/mcp`
//! with `--http ADDR`.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone)]
struct Hello {
    tool_router: ToolRouter<Self>,
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct DivideArgs {
    dividend: f64,
    divisor: f64,
}

#[tool_router]
impl Hello {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Greet someone by name.
    #[tool]
    fn greet(&self, Parameters(GreetArgs { name }): Parameters<GreetArgs>) -> String {
        format!("Hello, {name}!")
    }

    /// Divide one number by another.
    #[tool]
    fn divide(
        &self,
        Parameters(DivideArgs { dividend, divisor }): Parameters<DivideArgs>,
    ) -> Result<String, String> {
        if divisor == 0.0 {
            return Err("the divisor must not be zero".to_owned());
        }
        Ok((dividend / divisor).to_string())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Hello {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // stdout carries the protocol: logs go to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--http") {
        let addr: std::net::SocketAddr = args.next().ok_or("--http needs an address")?.parse()?;
        let service = StreamableHttpService::new(
            || Ok(Hello::new()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(addr).await?;
        axum::serve(listener, router).await?;
    } else {
        Hello::new()
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await?
            .waiting()
            .await?;
    }
    Ok(())
}
