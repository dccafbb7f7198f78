// cargo run -p abilities-bench --example rmcp_site -- --http 127.0.0.1:8090
//! The `site` example's `my-plugin-count-posts`, written by hand with rmcp's own macros over
//! the same SQLite database: the baseline `loadgen` measures abilities against.

#[path = "../shared/rmcp_site.rs"]
mod rmcp_site;
use abilities_examples::site;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp_site::RmcpSite;
use site::Db;

/// Serve the hand-written rmcp site.
#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// The SQLite database (created and seeded if missing).
    #[arg(long, default_value = "site.db")]
    db: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    // The same logging set-up as the `site` example, so both pay the same for it.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp=error".into()),
        )
        .init();
    let args = Args::parse();
    let run = async {
        let site = RmcpSite::new(Arc::new(Db::open(&args.db)?));
        match args.http {
            Some(addr) => {
                let service = StreamableHttpService::new(
                    move || Ok(site.clone()),
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                );
                let router = abilities::http::axum::Router::new().nest_service("/mcp", service);
                let listener = tokio::net::TcpListener::bind(addr).await?;
                println!("http://{}/mcp", listener.local_addr()?);
                abilities::http::serve_router(listener, router).await?;
            }
            None => {
                site.serve((tokio::io::stdin(), tokio::io::stdout()))
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
