//! Serve existing MCP servers through abilities.
//!
//! The bridge reads the `mcpServers` configuration that Claude Desktop, Cursor and VS Code
//! use, starts each server (a child process on stdio, or a Streamable HTTP URL), and serves
//! every upstream tool as an ability named `<server>/<tool>`: validated against the
//! upstream's own input schema before it is forwarded, checked for scopes and confirmation,
//! and offered on any surface (MCP-AQL, WordPress-style meta tools, native tools). Upstream
//! resources and prompts are served too, under the same namespace.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use abilities::Server;
//! use abilities_bridge::{Bridge, Config, Timing};
//!
//! let config = Config::parse(r#"{"mcpServers": {"time": {"command": "mcp-server-time"}}}"#)?;
//! let server = Server::builder().name("bridge", "1.0").build()?;
//! let bridge = Bridge::start(config, server.clone(), Timing::default()).await;
//! for row in bridge.listing() {
//!     println!("{} {}", row.ability, row.semantic);
//! }
//! server.serve_stdio().await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use abilities::{Ability, AbilityError, Semantic, Server};
use serde_json::{Value, json};

mod classify;
mod config;
mod forward;
mod listing;
mod relay;
mod sync;
mod upstream;

pub use classify::{Classification, classify};
pub use config::{Config, ConfigError, Launch, ServerOverlay, ToolOverlay};
pub use upstream::{Status, Timing};

use upstream::Upstream;

/// The name of the ability that reports each upstream's status.
pub const STATUS_ABILITY: &str = "bridge/upstreams";

/// Running upstreams, registered into a server.
pub struct Bridge {
    upstreams: Vec<Arc<Upstream>>,
}

/// One row of [`Bridge::listing`]: what is served, and how it was classified.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// The upstream server.
    pub server: String,
    /// The ability's name, or the upstream's name for something not served.
    pub ability: String,
    /// `tool`, `resource`, `template` (a resource template) or `prompt`.
    pub kind: &'static str,
    /// A tool's semantic (`-` otherwise).
    pub semantic: String,
    /// Why that semantic.
    pub semantic_why: String,
    /// A tool's danger.
    pub danger: String,
    /// Why that danger.
    pub danger_why: String,
    /// Why it is not served, when it is not.
    pub skipped: Option<String>,
}

impl Bridge {
    /// Start every upstream of `config` in parallel and register what each serves into
    /// `server`, with the status ability [`STATUS_ABILITY`]. Returns once each has started
    /// or failed its first start (bounded by `timing.start_timeout`); those that failed keep
    /// being restarted with backoff.
    pub async fn start(config: Config, server: Server, timing: Timing) -> Self {
        // Each upstream's `abilities_upstream_up`, beside the server's own series when it
        // counts.
        let up = server.metrics().and_then(|metrics| {
            let up = upstream::Up::default();
            let registered = metrics.register(
                "upstream_up",
                "Whether a bridged upstream server answered its last sync (1) or not (0)",
                up.clone(),
            );
            match registered {
                Ok(()) => Some(up),
                Err(error) => {
                    tracing::warn!(%error, "the upstreams' gauge is not served");
                    None
                }
            }
        });
        let upstreams: Vec<Arc<Upstream>> = config
            .servers
            .values()
            .map(|u| {
                Upstream::new(
                    u,
                    config.overlay.get(&u.name).cloned(),
                    server.clone(),
                    timing,
                    up.clone(),
                )
            })
            .collect();
        let bridge = Self { upstreams };
        let status = bridge.status_ability().map_err(|e| e.to_string());
        if let Err(error) =
            status.and_then(|a| server.abilities().add(a).map_err(|e| e.to_string()))
        {
            tracing::warn!(%error, "the status ability is not served");
        }
        for upstream in &bridge.upstreams {
            tokio::spawn(
                Arc::clone(upstream)
                    .supervise(|upstream, peer| Box::pin(sync::resync(upstream, peer))),
            );
        }
        for upstream in &bridge.upstreams {
            upstream.first_attempt().await;
        }
        bridge
    }

    /// Each upstream's status now: `up`, `starting` or `down`, with its last error and
    /// stderr line.
    pub fn status(&self) -> Value {
        Value::Array(self.upstreams.iter().map(|u| status_of(u)).collect())
    }

    /// What is served for every upstream, and what is not with why.
    pub fn listing(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        for upstream in &self.upstreams {
            upstream.read(|state| {
                for served in &state.listing.served {
                    let class = served.class.as_ref();
                    rows.push(Row {
                        server: upstream.name.clone(),
                        ability: served.ability.clone(),
                        kind: served.kind,
                        semantic: class.map_or("-".into(), |c| c.semantic.to_string()),
                        semantic_why: class.map_or(String::new(), |c| c.semantic_why.clone()),
                        danger: class.map_or("-".into(), |c| c.danger.as_str().to_owned()),
                        danger_why: class.map_or(String::new(), |c| c.danger_why.clone()),
                        skipped: None,
                    });
                }
                for (name, why) in &state.listing.skipped {
                    rows.push(Row {
                        server: upstream.name.clone(),
                        ability: name.clone(),
                        kind: "-",
                        semantic: "-".into(),
                        semantic_why: String::new(),
                        danger: "-".into(),
                        danger_why: String::new(),
                        skipped: Some(why.clone()),
                    });
                }
            });
        }
        rows
    }

    /// Stop every upstream for good: no more restarts, and each child process group killed
    /// now. Dropping the bridge does the same.
    pub fn shutdown(&self) {
        for upstream in &self.upstreams {
            upstream.shut_down();
        }
    }

    fn status_ability(&self) -> Result<Ability, abilities::registry::RegistryError> {
        let upstreams = self.upstreams.clone();
        Ability::builder(STATUS_ABILITY, Semantic::Read)
            .title("Upstream servers")
            .description("The servers this bridge forwards to: whether each is up, starting or down (and why), how many times it was started, and how many tools, resources and prompts it serves.")
            .site(false)
            .handler(move |_ctx, _args: Value| {
                let status = Value::Array(upstreams.iter().map(|u| status_of(u)).collect());
                async move { Ok::<_, AbilityError>(json!({"upstreams": status})) }
            })
            .build()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn status_of(upstream: &Upstream) -> Value {
    upstream.read(|state| status_json(upstream, state))
}

fn status_json(upstream: &Upstream, state: &upstream::State) -> Value {
    let count = |kind: &str| {
        state
            .listing
            .served
            .iter()
            .filter(|s| s.kind == kind)
            .count()
    };
    json!({
        "server": upstream.name,
        "status": state.status,
        "for_seconds": state.since.elapsed().as_secs(),
        "starts": state.starts,
        "tools": count("tool"),
        "resources": count("resource") + count("template"),
        "prompts": count("prompt"),
        // Its skills (SEP-2640), served as `skill://<its name>/...`; 0 when it has none.
        "skills": count("skill"),
        "not_served": state.listing.skipped.len(),
        "last_error": state.last_error,
        "last_stderr": state.last_stderr,
    })
}

/// [`Bridge::listing`] and [`Bridge::status`] as the text `abilities-bridge --list` prints:
/// one line per ability, then what is not served, then any upstream that is not up.
pub fn render_listing(bridge: &Bridge) -> String {
    use std::fmt::Write as _;
    let rows = bridge.listing();
    let width = rows
        .iter()
        .map(|r| r.ability.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut out = format!(
        "{:width$}  {:<9} {:<26} {:<12} WHY\n",
        "ABILITY", "KIND", "SEMANTIC (WHY)", "DANGER"
    );
    for row in rows.iter().filter(|r| r.skipped.is_none()) {
        let semantic = if row.semantic_why.is_empty() {
            row.semantic.clone()
        } else {
            format!("{} ({})", row.semantic, row.semantic_why)
        };
        let _ = writeln!(
            out,
            "{:width$}  {:<9} {:<26} {:<12} {}",
            row.ability, row.kind, semantic, row.danger, row.danger_why
        );
    }
    for row in rows.iter().filter(|r| r.skipped.is_some()) {
        let _ = writeln!(
            out,
            "not served: {}/{}: {}",
            row.server,
            row.ability,
            row.skipped.as_deref().unwrap_or("")
        );
    }
    if let Value::Array(status) = bridge.status() {
        for s in status.iter().filter(|s| s["status"] != "up") {
            let _ = writeln!(
                out,
                "upstream {} is {}: {}",
                s["server"].as_str().unwrap_or(""),
                s["status"].as_str().unwrap_or(""),
                s["last_error"].as_str().unwrap_or("")
            );
        }
    }
    out
}
