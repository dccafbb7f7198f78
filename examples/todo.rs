// cargo run --example todo -- --http 127.0.0.1:8081
//! The MCP-AQL walkthrough's Todo manager (`list_todos`, `get_todo`, `create_todo`,
//! `update_todo`, `delete_todo`, `clear_completed`) on SQLite, as native MCP tools or as
//! MCP-AQL endpoints; `list_todos` pushes MCP-AQL filters and sorting into its SQL.
//!
//! `cargo run --example todo` serves stdio; `--http ADDR` serves streamable HTTP at `/mcp`;
//! `--mode aql-single|aql-crude` serves MCP-AQL (also `standard`, `meta`);
//! `--db PATH` picks the database file (created and seeded on first run).

#[path = "shared/mode.rs"]
mod mode;

#[path = "shared/todo.rs"]
mod todo;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use abilities::{Caller, Server, StaticTokens};
use clap::Parser;

/// Serve the Todo manager over MCP.
#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Which surfaces to serve (`all` needs --http).
    #[arg(long, value_enum, default_value_t)]
    mode: mode::Mode,
    /// The SQLite database (created and seeded if missing).
    #[arg(long, default_value = "todo.db")]
    db: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp=error".into()),
        )
        .init();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = todo::TodoDb::open(&args.db)
        .map_err(|e| format!("cannot open {}: {e}", args.db.display()))?;
    if args.mode == mode::Mode::All && args.http.is_none() {
        return Err("--mode all serves several HTTP paths: add --http ADDR".into());
    }
    let server = args
        .mode
        .apply(Server::builder())
        .name("abilities-todo-example", env!("CARGO_PKG_VERSION"))
        .instructions("A todo list: list, get, create, update and delete todos.")
        .state(db)
        // A local example: HTTP callers may do everything the stdio caller may.
        .authenticator(StaticTokens::new().allow_anonymous(Caller::trusted("anonymous")))
        .build()?;
    match args.http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let base = format!("http://{}", listener.local_addr()?);
            let url = format!("{base}/mcp");
            for (path, what) in args.mode.paths() {
                eprintln!("serving {what} at {base}{path}");
            }
            eprintln!(
                "client config: {{\"mcpServers\": {{\"todo\": {{\"type\": \"http\", \"url\": \"{url}\"}}}}}}"
            );
            println!("{url}");
            abilities::serve_router(listener, server.app()).await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
