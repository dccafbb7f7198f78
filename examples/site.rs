// cargo run --example site -- --http 127.0.0.1:8080
//! The seeds' WordPress walkthrough served over MCP: a flattened `my-plugin/count-posts`, post
//! lookup and listing, creation with `dry_run`, an export that runs as a background task, and a
//! deletion that needs the `posts:delete` scope, on an SQLite database created and seeded on
//! first run.
//!
//! `cargo run --example site` serves stdio; `--http ADDR` serves streamable HTTP at `/mcp`;
//! `--mode native|standard|meta` picks the surface (`all`: the three on separate paths);
//! `--db PATH` picks the database file (`--tasks-db PATH` the one of background tasks, beside
//! it by default); `--token T` lets HTTP callers with `Authorization: Bearer T` delete posts.
//! `--store postgres://...` keeps the posts and the server's records (tasks, confirmation
//! tokens, idempotency keys) in PostgreSQL, for several replicas sharing `--state-key` (a
//! build with `--features postgres`); `--store redis://...` keeps the records in Redis or Valkey
//! instead (`--features redis`), the posts in `--data postgres://...`. `--metrics` serves Prometheus metrics at `/metrics` beside
//! the MCP endpoint, `--dashboard` the live view at `/dashboard` too, `--metrics-addr ADDR` both
//! on an address of their own (with stdio as well). `--otel` sends OpenTelemetry traces over OTLP
//! where `OTEL_EXPORTER_OTLP_*` say (a build with `--features otel`).

use abilities_examples::stores::{self, is_postgres, is_redis};
use abilities_examples::{mode, site};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use abilities::{
    Caller, Server, ServerBuilder, Site, auth::StaticTokens, config::LedgerConfig,
    metrics::MetricsConfig, store::SqliteStore,
};
use clap::Parser;
use site::Db;

/// Serve the example site over MCP.
#[derive(Parser)]
struct Args {
    /// Serve streamable HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Which surfaces to serve (`all` needs --http).
    #[arg(long, value_enum, default_value_t)]
    mode: mode::Mode,
    /// The SQLite database (created and seeded if missing).
    #[arg(long, default_value = "site.db")]
    db: PathBuf,
    /// A bearer token that grants HTTP callers every scope (others are anonymous).
    #[arg(long)]
    token: Option<String>,
    /// Where background tasks are recorded (default: beside --db, `<db>.tasks.db`).
    #[arg(long)]
    tasks_db: Option<PathBuf>,
    /// Keep the posts and the server's records in PostgreSQL (`postgres://...`), shared by
    /// replicas, instead of --db and --tasks-db; needs a build with `--features postgres`.
    /// Or the server's records only in Redis or Valkey (`redis://...`, `--features redis`),
    /// the posts then in --data or --db.
    #[arg(long)]
    store: Option<String>,
    /// Where the posts are kept when --store is `redis://...`: `postgres://...` (shared by
    /// replicas). Default: the SQLite file --db (one machine).
    #[arg(long, requires = "store")]
    data: Option<String>,
    /// The key confirmation tokens and multi-round state are signed with (at least 32 bytes),
    /// the same for every replica. Default: a random key of this process.
    #[arg(long, env = "ABILITIES_STATE_KEY", hide_env_values = true)]
    state_key: Option<String>,
    /// OAuth: accept JWT access tokens of this authorization server (the `iss` claim) instead
    /// of --token; needs --audience and --jwks, and a build with `--features jwt`.
    #[arg(long, requires_all = ["audience", "jwks"])]
    issuer: Option<String>,
    /// OAuth: this server's canonical URL, the tokens' `aud` (e.g. https://mcp.example.com/mcp).
    #[arg(long, requires = "issuer")]
    audience: Option<String>,
    /// OAuth: the issuer's key set, a JWKS file or URL.
    #[arg(long, requires = "issuer")]
    jwks: Option<String>,
    /// Serve Prometheus metrics at /metrics beside the MCP endpoint (with --http).
    #[arg(long)]
    metrics: bool,
    /// Serve the live view at /dashboard (and the metrics it reads at /dashboard/metrics).
    #[arg(long)]
    dashboard: bool,
    /// Serve /metrics (and the live view, with --dashboard) on this address of its own.
    #[arg(long)]
    metrics_addr: Option<SocketAddr>,
    /// Send OpenTelemetry traces over OTLP (HTTP/protobuf) where OTEL_EXPORTER_OTLP_* say;
    /// needs a build with `--features otel`.
    #[arg(long)]
    otel: bool,
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
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = args
        .mode
        .apply_with(Server::builder().registry(site::registry()?), site::aql);
    let db = match args.store.as_deref() {
        Some(url) if is_postgres(url) => {
            if args.data.is_some() {
                return Err("--data goes with --store redis://...: with postgres:// the posts are in the store".into());
            }
            builder = builder.store(stores::postgres(url, "site").await?);
            posts_in(url, &args.db).await?
        }
        Some(url) if is_redis(url) => {
            builder = builder.store(stores::redis(url, "site").await?);
            posts_in(args.data.as_deref().unwrap_or_default(), &args.db).await?
        }
        Some(_) => return Err("--store takes a postgres:// or redis:// URL".into()),
        None => {
            let tasks_db = args
                .tasks_db
                .clone()
                .unwrap_or_else(|| args.db.with_extension("tasks.db"));
            let store = SqliteStore::open(&tasks_db)
                .map_err(|e| format!("cannot open {}: {e}", tasks_db.display()))?;
            builder = builder.store(store);
            posts_in("", &args.db).await?
        }
    };
    if let Some(key) = &args.state_key {
        builder = builder.ledger(LedgerConfig::default().request_state_key(key.as_bytes()));
    }
    let mut tokens = StaticTokens::new().allow_anonymous(Caller::anonymous());
    if let Some(token) = &args.token {
        tokens = tokens.with_token(token.clone(), Caller::trusted("token-holder"));
    }
    if args.mode == mode::Mode::All && args.http.is_none() {
        return Err("--mode all serves several HTTP paths: add --http ADDR".into());
    }
    builder = match (&args.issuer, &args.audience, &args.jwks) {
        (Some(issuer), Some(audience), Some(jwks)) => {
            oauth(builder, issuer, audience, jwks).await?
        }
        _ => builder.authenticator(tokens),
    };
    if args.metrics || args.dashboard || args.metrics_addr.is_some() {
        let mut config = MetricsConfig::default();
        if !args.metrics {
            config = config.path(None);
        }
        if args.dashboard {
            config = config.dashboard("/dashboard");
        }
        builder = builder.metrics(config);
    }
    if args.otel {
        builder = otel(builder)?;
    }
    let server = builder
        .name("abilities-site-example", env!("CARGO_PKG_VERSION"))
        .instructions("A WordPress-like site: count, read, list, create and delete posts.")
        .site(Site::new("example", "https://example.com"))
        .state(db)
        .skills(site::skills()?)
        .category_skills(site::SKILL_CATEGORIES)
        .build()?;
    if let Some(addr) = args.metrics_addr {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!(
            "serving metrics at http://{}/metrics",
            listener.local_addr()?
        );
        let server = server.clone();
        tokio::spawn(async move {
            if let Err(error) = server.serve_metrics_on(listener).await {
                eprintln!("error: the metrics stopped: {error}");
            }
        });
    }
    match args.http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let base = format!("http://{}", listener.local_addr()?);
            let url = format!("{base}/mcp");
            for (path, what) in args.mode.paths() {
                eprintln!("serving {what} at {base}{path}");
            }
            eprintln!(
                "client config (Claude Code, Cursor): {{\"mcpServers\": {{\"site\": {{\"type\": \"http\", \"url\": \"{url}\"}}}}}}"
            );
            eprintln!("try: npx @modelcontextprotocol/inspector --cli {url} --method tools/list");
            println!("{url}");
            server.serve_listener(listener).await?;
        }
        None => {
            // stdout is the protocol: what a client needs goes to stderr.
            let exe = std::env::current_exe()?;
            let args: Vec<String> = std::env::args().skip(1).collect();
            eprintln!(
                "serving MCP on stdio; client config (Claude Desktop): {}",
                serde_json::json!({"mcpServers": {"site": {"command": exe, "args": args}}})
            );
            server.serve_stdio().await?
        }
    }
    Ok(())
}

/// OpenTelemetry traces over OTLP, where the standard variables say.
#[cfg(feature = "otel")]
fn otel(builder: ServerBuilder) -> Result<ServerBuilder, Box<dyn std::error::Error>> {
    Ok(builder.otel(abilities::otel::OtelConfig::otlp()))
}

#[cfg(not(feature = "otel"))]
fn otel(_: ServerBuilder) -> Result<ServerBuilder, Box<dyn std::error::Error>> {
    Err("--otel needs a build with the `otel` feature: cargo run --features otel --example site -- ...".into())
}

/// OAuth 2.1: JWT access tokens of `issuer` for `audience`, checked against `jwks` (a file, or
/// a URL fetched now and on an unknown key id).
#[cfg(feature = "jwt")]
async fn oauth(
    builder: ServerBuilder,
    issuer: &str,
    audience: &str,
    jwks: &str,
) -> Result<ServerBuilder, Box<dyn std::error::Error>> {
    let auth = abilities::auth::JwtAuthenticator::new(issuer, audience)
        .scopes_supported(["posts:write", "posts:delete"]);
    let auth = if jwks.starts_with("http://") || jwks.starts_with("https://") {
        auth.jwks_url(jwks).await?
    } else {
        auth.jwks_file(jwks)?
    };
    Ok(builder.authenticator(auth))
}

#[cfg(not(feature = "jwt"))]
async fn oauth(
    _: ServerBuilder,
    _: &str,
    _: &str,
    _: &str,
) -> Result<ServerBuilder, Box<dyn std::error::Error>> {
    Err("--issuer needs a build with the `jwt` feature: cargo run --features jwt --example site -- ...".into())
}

/// The posts: in PostgreSQL at `url` when it is one, else in the SQLite file `db`.
async fn posts_in(url: &str, db: &std::path::Path) -> Result<Db, String> {
    if is_postgres(url) {
        #[cfg(feature = "postgres")]
        return Db::connect(url)
            .await
            .map_err(|e| format!("cannot open the posts in the store: {e}"));
        #[cfg(not(feature = "postgres"))]
        return Err(stores::needs("postgres", "site"));
    }
    if !url.is_empty() {
        return Err("--data takes a postgres:// URL".to_owned());
    }
    Db::open(db).map_err(|e| format!("cannot open {}: {e}", db.display()))
}
