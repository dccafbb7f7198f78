//! `abilities-bridge`: serve the MCP servers of an `mcpServers` configuration through
//! abilities, over stdio or HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use abilities::{
    Server, Surface,
    aql::{Aql, AqlMode},
};
use abilities_bridge::{Bridge, Config, Timing};
use clap::Parser;

/// How the bridge presents the upstream tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// MCP-AQL with one `mcp_aql` tool.
    AqlSingle,
    /// MCP-AQL with one tool per family (`mcp_aql_read`, ...).
    AqlSemantic,
    /// One tool per upstream tool, named `<server>-<tool>`.
    Native,
    /// The WordPress adapter's three meta tools: discover, get-info, execute.
    Meta,
    /// The native tools, leniently: pretty JSON, JSON-RPC errors, string booleans.
    Standard,
}

/// Serve existing MCP servers through MCP-AQL, meta tools or native tools.
#[derive(Parser, Debug)]
#[command(name = "abilities-bridge", version)]
struct Args {
    /// The configuration: `{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url",
    /// "headers"}}, "overlay": {...}}`.
    #[arg(long, short)]
    config: PathBuf,
    /// An overlay file (`{"<server>": {"semantic", "danger", "tools": {...}}}`), applied
    /// over the configuration's own.
    #[arg(long)]
    overlay: Option<PathBuf>,
    /// How the tools are presented.
    #[arg(long, value_enum, default_value = "aql-single")]
    mode: Mode,
    /// Serve Streamable HTTP at this address (path `/mcp`) instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Print what would be served (name, semantic and why, danger and why) and exit.
    #[arg(long)]
    list: bool,
    /// Seconds an upstream may take to start and answer `initialize`.
    #[arg(long, default_value_t = 30)]
    start_timeout: u64,
    /// Seconds a call may take (the pipeline's time limit, forwarded to the upstream).
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Serve Prometheus metrics (calls, latency, each upstream's `abilities_upstream_up`) at
    /// /metrics beside /mcp (with --http).
    #[arg(long)]
    metrics: bool,
    /// Send OpenTelemetry traces over OTLP (HTTP/protobuf) where OTEL_EXPORTER_OTLP_* say:
    /// each call's span, and the upstream call's below it (the upstream is sent the trace
    /// context in `_meta`).
    #[arg(long)]
    otel: bool,
}

fn surface(mode: Mode) -> Surface {
    match mode {
        Mode::AqlSingle => Surface::Aql(Aql::new(AqlMode::Single)),
        Mode::AqlSemantic => Surface::Aql(Aql::new(AqlMode::Semantic)),
        Mode::Native => Surface::Native,
        Mode::Meta => Surface::meta(),
        Mode::Standard => Surface::Standard,
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let mut config = match Config::load(&args.config) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("abilities-bridge: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &args.overlay
        && let Err(error) = config.load_overlay(path)
    {
        eprintln!("abilities-bridge: {error}");
        return ExitCode::from(2);
    }
    let mut builder = Server::builder()
        .name("abilities-bridge", env!("CARGO_PKG_VERSION"))
        .surface(surface(args.mode))
        .timeout(Some(Duration::from_secs(args.timeout)));
    if args.metrics {
        builder = builder.metrics(abilities::metrics::MetricsConfig::default());
    }
    if args.otel {
        builder = builder.otel(abilities::otel::OtelConfig::otlp());
    }
    let server = match builder.build() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("abilities-bridge: {error}");
            return ExitCode::FAILURE;
        }
    };
    let timing = Timing {
        start_timeout: Duration::from_secs(args.start_timeout),
        ..Timing::default()
    };
    let bridge = Bridge::start(config, server.clone(), timing).await;
    if args.list {
        print!("{}", abilities_bridge::render_listing(&bridge));
        bridge.shutdown();
        return ExitCode::SUCCESS;
    }
    let serve = async {
        match args.http {
            Some(addr) => {
                tracing::info!(%addr, "serving MCP at http://{addr}/mcp");
                server.serve_http(addr).await
            }
            None => server.serve_stdio().await,
        }
    };
    // Until the client goes (stdin closes) or a signal comes; then the upstreams go too.
    let served = tokio::select! {
        served = serve => served,
        () = stop_signal() => Ok(()),
    };
    bridge.shutdown();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("abilities-bridge: {error}");
            ExitCode::FAILURE
        }
    }
}

/// SIGINT or SIGTERM (Ctrl-C elsewhere).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
