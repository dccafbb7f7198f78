// cargo run -p abilities-bench --example rmcp_site -- --http 127.0.0.1:8090
//! The `site` example's `my-plugin-count-posts`, written by hand with rmcp's own macros over
//! the same SQLite database: the baseline `loadgen` measures abilities against.

#[path = "../shared/rmcp_serve.rs"]
mod rmcp_serve;
#[path = "../shared/rmcp_site.rs"]
mod rmcp_site;
use abilities_examples::site;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use rmcp_site::RmcpSite;
use site::Db;

/// Serve the hand-written rmcp site.
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
    /// The SQLite database (created and seeded if missing).
    #[arg(long, default_value = "site.db")]
    db: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    // The same logging set-up as the `site` example, so both pay the same for it.
    rmcp_serve::logging();
    let args = Args::parse();
    let run = async {
        let site = RmcpSite::new(Arc::new(Db::open(&args.db)?));
        rmcp_serve::serve(site, args.http, args.json_response).await
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
