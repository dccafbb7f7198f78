//! How the hand-written rmcp baselines (`rmcp_site`, `shop_rmcp`) are served, as a user of
//! rmcp serves a server: rmcp's streamable HTTP service at `/mcp` (its URL printed once it
//! listens), or stdio. Logging is set up as the abilities examples set it up, so both pay the
//! same for it.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};

/// Log warnings (and rmcp's errors) to stderr, or what `RUST_LOG` asks for.
pub(crate) fn logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp=error".into()),
        )
        .init();
}

/// Serve `server` over streamable HTTP on `http`, or over stdio without it, until it ends;
/// with `json_response`, plain JSON answers where rmcp may give them (its configuration at its
/// best for request-response tools), else rmcp's defaults (an SSE stream per answer).
pub(crate) async fn serve<S>(
    server: S,
    http: Option<SocketAddr>,
    json_response: bool,
) -> Result<(), Box<dyn std::error::Error>>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    match http {
        Some(addr) => {
            let service = StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default().with_json_response(json_response),
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
    Ok(())
}
