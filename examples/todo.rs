// cargo run --example todo -- --http 127.0.0.1:8081
//! The MCP-AQL walkthrough's Todo manager (`list_todos`, `get_todo`, `create_todo`,
//! `update_todo`, `delete_todo`, `clear_completed`) on SQLite, as native MCP tools or as
//! MCP-AQL endpoints; `list_todos` pushes MCP-AQL filters and sorting into its SQL.
//!
//! `cargo run --example todo` serves stdio; `--http ADDR` serves streamable HTTP at `/mcp`;
//! `--mode aql-single|aql-semantic` serves MCP-AQL (also `standard`, `meta`);
//! `--db PATH` picks the database file (created and seeded on first run).
//!
//! Several replicas: `--store postgres://user@host/db` keeps the todos and the server's own
//! records (tasks, confirmation tokens, idempotency keys) in PostgreSQL, and resource updates
//! travel between replicas through it; `--state-key KEY` (or `ABILITIES_STATE_KEY`) is the key
//! every replica signs tokens and multi-round state with (a build with `--features postgres`).
//! `--store redis://host:port` keeps the server's records in Redis or Valkey instead (a build
//! with `--features redis`), the todos in `--data postgres://...`.
//! See `scripts/cluster.sh`.

use abilities_examples::stores::{self, is_postgres, is_redis, redact};
use abilities_examples::{mode, todo};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use abilities::{
    Caller, Server,
    auth::StaticTokens,
    config::{HttpConfig, LedgerConfig},
    store::SqliteStore,
};
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
    /// Where the todos and the server's records are kept: `postgres://...` (shared by
    /// replicas; needs a build with `--features postgres`), or `redis://...` for the
    /// server's records only (`--features redis`; the todos then in --data, or --db).
    /// Default: SQLite, the todos in --db and the records beside it (`<db>.store.db`).
    #[arg(long)]
    store: Option<String>,
    /// Where the todos are kept when --store is `redis://...`: `postgres://...` (shared by
    /// replicas). Default: the SQLite file --db (one machine).
    #[arg(long, requires = "store")]
    data: Option<String>,
    /// The key confirmation tokens and multi-round state are signed with (at least 32 bytes),
    /// the same for every replica. Default: a random key of this process.
    #[arg(long, env = "ABILITIES_STATE_KEY", hide_env_values = true)]
    state_key: Option<String>,
    /// Name this replica in an `x-replica` header on every HTTP response (to see which
    /// replica a load balancer picked).
    #[arg(long)]
    replica: Option<String>,
    /// How many HTTP sessions (protocol 2025 clients) may be open at once.
    #[arg(long, default_value_t = 1000)]
    max_sessions: usize,
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
    if args.mode == mode::Mode::All && args.http.is_none() {
        return Err("--mode all serves several HTTP paths: add --http ADDR".into());
    }
    let mut builder = args
        .mode
        .apply(Server::builder().registry(todo::registry()?));
    let db = match args.store.as_deref() {
        Some(url) if is_postgres(url) => {
            if args.data.is_some() {
                return Err("--data goes with --store redis://...: with postgres:// the todos are in the store".into());
            }
            builder = builder.store(stores::postgres(url, "todo").await?);
            todos_in(url, &args.db).await?
        }
        Some(url) if is_redis(url) => {
            builder = builder.store(stores::redis(url, "todo").await?);
            todos_in(args.data.as_deref().unwrap_or_default(), &args.db).await?
        }
        Some(other) => {
            return Err(format!(
                "--store takes a postgres:// or redis:// URL, not '{}'",
                redact(other)
            )
            .into());
        }
        None => {
            let mut records = args.db.clone().into_os_string();
            records.push(".store.db");
            let store = SqliteStore::open(&records)
                .map_err(|e| format!("cannot open {}: {e}", PathBuf::from(&records).display()))?;
            builder = builder.store(store);
            todos_in("", &args.db).await?
        }
    };
    if let Some(key) = &args.state_key {
        builder = builder.ledger(LedgerConfig::default().request_state_key(key.as_bytes()));
    }
    let server = builder
        .name("abilities-todo-example", env!("CARGO_PKG_VERSION"))
        .instructions("A todo list: list, get, create, update and delete todos.")
        .http(HttpConfig::default().max_sessions(args.max_sessions))
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
            let mut app = server.app();
            if let Some(name) = args.replica {
                let name = abilities::http::axum::http::HeaderValue::from_str(&name)
                    .map_err(|_| "--replica must be a valid header value")?;
                app = app.layer(abilities::http::axum::middleware::map_response(
                    move |mut response: abilities::http::axum::response::Response| {
                        let name = name.clone();
                        async move {
                            response.headers_mut().insert("x-replica", name);
                            response
                        }
                    },
                ));
            }
            server.serve_app(listener, app).await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}

/// A database URL without its password, for messages.
/// The todos: in PostgreSQL at `url` when it is one, else in the SQLite file `db`.
async fn todos_in(url: &str, db: &std::path::Path) -> Result<todo::TodoDb, String> {
    if is_postgres(url) {
        #[cfg(feature = "postgres")]
        return todo::TodoDb::connect(url)
            .await
            .map_err(|e| format!("cannot open the todos in {}: {e}", redact(url)));
        #[cfg(not(feature = "postgres"))]
        return Err(stores::needs("postgres", "todo"));
    }
    if !url.is_empty() {
        return Err(format!(
            "--data takes a postgres:// URL, not '{}'",
            redact(url)
        ));
    }
    todo::TodoDb::open(db).map_err(|e| format!("cannot open {}: {e}", db.display()))
}
