//! One upstream server: started, watched, restarted with backoff, and its tools, resources and
//! prompts kept registered as abilities of the bridge's server.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use abilities::{AbilityError, Context, ErrorCode, Server};
use rmcp::model::{ClientConfig, Implementation, ProgressToken, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;

use crate::config::{self, Launch, ServerOverlay};
use crate::relay::Relay;
use crate::sync::{self, Listing};

/// How long an upstream may take to start and answer `initialize`, and how the bridge waits
/// between restarts.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// The limit on starting and initializing.
    pub start_timeout: Duration,
    /// The first wait before a restart; it doubles with each failure.
    pub backoff: Duration,
    /// The longest wait before a restart.
    pub max_backoff: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            start_timeout: Duration::from_secs(30),
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// Where an upstream is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Being started (the first time or again).
    Starting,
    /// Connected and serving.
    Up,
    /// Not running; restarting after a wait.
    Down,
}

/// What the bridge knows of an upstream now.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub(crate) status: Status,
    pub(crate) since: Instant,
    pub(crate) starts: u32,
    pub(crate) last_error: Option<String>,
    pub(crate) last_stderr: Option<String>,
    pub(crate) listing: Listing,
}

/// A call in flight to an upstream: where its progress, logs and questions go back to.
pub(crate) struct Call {
    pub(crate) ctx: Context,
    /// The error that ends the call early (a question the downstream client cannot answer
    /// in this round).
    abort: Mutex<Option<AbilityError>>,
    aborted: Notify,
}

impl Call {
    /// End the call with `error` instead of the upstream's answer.
    pub(crate) fn abort(&self, error: AbilityError) {
        *self.abort.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
        self.aborted.notify_waiters();
    }

    /// The error the call was aborted with, if it was.
    pub(crate) fn abort_error(&self) -> Option<AbilityError> {
        self.abort
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The error the call was aborted with, once it is.
    pub(crate) async fn aborted(&self) -> AbilityError {
        loop {
            let notified = self.aborted.notified();
            if let Some(error) = self.abort_error() {
                return error;
            }
            notified.await;
        }
    }
}

/// One upstream server.
pub(crate) struct Upstream {
    /// Its name in the configuration.
    pub(crate) name: String,
    /// The namespace of its abilities (its name, with what an ability name cannot hold
    /// replaced).
    pub(crate) namespace: String,
    pub(crate) launch: Launch,
    pub(crate) overlay: Option<ServerOverlay>,
    pub(crate) server: Server,
    timing: Timing,
    state: Mutex<State>,
    peer: Mutex<Option<Peer<RoleClient>>>,
    calls: Mutex<HashMap<u64, Arc<Call>>>,
    by_token: Mutex<HashMap<ProgressToken, u64>>,
    next_call: std::sync::atomic::AtomicU64,
    pub(crate) relist: Notify,
    first_attempt: Notify,
    /// The abilities registered for it, by name, with a fingerprint of what they were made
    /// from.
    pub(crate) registered: Mutex<BTreeMap<String, Value>>,
}

impl Upstream {
    pub(crate) fn new(
        upstream: &config::Upstream,
        overlay: Option<ServerOverlay>,
        server: Server,
        timing: Timing,
    ) -> Arc<Self> {
        Arc::new(Self {
            name: upstream.name.clone(),
            namespace: sync::sanitize(&upstream.name),
            launch: upstream.launch.clone(),
            overlay,
            server,
            timing,
            state: Mutex::new(State {
                status: Status::Starting,
                since: Instant::now(),
                starts: 0,
                last_error: None,
                last_stderr: None,
                listing: Listing::default(),
            }),
            peer: Mutex::new(None),
            calls: Mutex::new(HashMap::new()),
            by_token: Mutex::new(HashMap::new()),
            next_call: std::sync::atomic::AtomicU64::new(0),
            relist: Notify::new(),
            first_attempt: Notify::new(),
            registered: Mutex::new(BTreeMap::new()),
        })
    }

    pub(crate) fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The connection, or `UPSTREAM_UNAVAILABLE` saying why there is none.
    pub(crate) fn peer(&self) -> Result<Peer<RoleClient>, AbilityError> {
        if let Some(peer) = self
            .peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|p| !p.is_transport_closed())
        {
            return Ok(peer);
        }
        Err(self.unavailable(false))
    }

    /// `UPSTREAM_UNAVAILABLE` for this upstream: its state, its last error and stderr line.
    /// `forwarded`: the call had reached it (so whether it took effect is unknown).
    pub(crate) fn unavailable(&self, forwarded: bool) -> AbilityError {
        let state = self.state();
        let message = if forwarded {
            format!(
                "upstream \"{}\" stopped while the call ran: whether it took effect is unknown",
                self.name
            )
        } else {
            let status = match state.status {
                Status::Starting => "is starting",
                Status::Up | Status::Down => "is not running; it is being restarted",
            };
            format!("upstream \"{}\" {status}", self.name)
        };
        AbilityError::new(ErrorCode::UpstreamUnavailable, message).with_details(json!({
            "server": self.name,
            "status": state.status,
            "forwarded": forwarded,
            "last_error": state.last_error,
            "last_stderr": state.last_stderr,
        }))
    }

    /// Track a call so its progress, logs and questions find their way back.
    pub(crate) fn begin(&self, ctx: Context, token: ProgressToken) -> (u64, Arc<Call>) {
        let id = self
            .next_call
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = Arc::new(Call {
            ctx,
            abort: Mutex::new(None),
            aborted: Notify::new(),
        });
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::clone(&call));
        self.by_token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token, id);
        (id, call)
    }

    /// Stop tracking a call.
    pub(crate) fn end(&self, id: u64, token: &ProgressToken) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        self.by_token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(token);
    }

    /// The call a progress token belongs to.
    pub(crate) fn call_by_token(&self, token: &ProgressToken) -> Option<Arc<Call>> {
        let id = *self
            .by_token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)?;
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned()
    }

    /// The one call in flight, which a request from the upstream (a question, a log line)
    /// belongs to. `Err` with the number in flight when it is not exactly one: over stdio an
    /// upstream's request does not say which call it is about.
    pub(crate) fn sole_call(&self) -> Result<Arc<Call>, usize> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        match calls.values().next() {
            Some(call) if calls.len() == 1 => Ok(Arc::clone(call)),
            _ => Err(calls.len()),
        }
    }

    /// Wait for the first start to succeed or fail.
    pub(crate) async fn first_attempt(&self) {
        let notified = self.first_attempt.notified();
        if self.state().starts > 0 && self.state().status != Status::Starting {
            return;
        }
        notified.await;
    }

    /// Start the upstream and keep it running: on exit or failure, wait (doubling from
    /// `backoff` up to `max_backoff`, reset once it has run a minute) and start it again.
    pub(crate) async fn supervise(self: Arc<Self>) {
        let mut wait = self.timing.backoff;
        loop {
            self.update(|s| {
                s.status = Status::Starting;
                s.starts += 1;
                s.since = Instant::now();
            });
            let started = Instant::now();
            match tokio::time::timeout(self.timing.start_timeout, self.connect()).await {
                Ok(Ok(running)) => {
                    let peer = running.peer().clone();
                    *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer.clone());
                    sync::resync(&self, &peer).await;
                    self.update(|s| {
                        s.status = Status::Up;
                        s.since = Instant::now();
                        s.last_error = None;
                    });
                    self.first_attempt.notify_waiters();
                    tracing::info!(server = %self.name, "upstream up");
                    let mut closed = Box::pin(running.waiting());
                    loop {
                        tokio::select! {
                            _ = &mut closed => break,
                            () = self.relist.notified() => sync::resync(&self, &peer).await,
                        }
                    }
                    *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    let why = "the upstream closed its connection or exited".to_owned();
                    tracing::warn!(server = %self.name, last_stderr = ?self.state().last_stderr, "{why}");
                    self.update(|s| s.last_error = Some(why));
                }
                Ok(Err(error)) => {
                    tracing::warn!(server = %self.name, %error, "upstream did not start");
                    self.update(|s| s.last_error = Some(error));
                }
                Err(_) => {
                    let why = format!(
                        "did not answer initialize within {:?}",
                        self.timing.start_timeout
                    );
                    tracing::warn!(server = %self.name, "upstream {why}");
                    self.update(|s| s.last_error = Some(why));
                }
            }
            self.update(|s| {
                s.status = Status::Down;
                s.since = Instant::now();
            });
            self.first_attempt.notify_waiters();
            if started.elapsed() > Duration::from_secs(60) {
                wait = self.timing.backoff;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(self.timing.max_backoff);
        }
    }

    /// Start the process (or reach the URL) and initialize.
    async fn connect(self: &Arc<Self>) -> Result<RunningService<RoleClient, Relay>, String> {
        let relay = Relay::new(Arc::downgrade(self), client_info());
        match &self.launch {
            Launch::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                #[cfg(unix)]
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot run {command}: {e}"))?;
                if let Some(stderr) = stderr {
                    tokio::spawn(read_stderr(Arc::downgrade(self), stderr));
                }
                relay
                    .serve(transport)
                    .await
                    .map_err(|e| self.with_stderr(format!("initialize failed: {e}")))
            }
            Launch::Http { url, headers } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let headers = config::headers(&self.name, headers).map_err(|e| e.to_string())?;
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(headers),
                );
                relay
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialize failed at {url}: {e}"))
            }
        }
    }

    fn with_stderr(&self, error: String) -> String {
        match self.state().last_stderr {
            Some(line) => format!("{error} (last stderr line: {line})"),
            None => error,
        }
    }
}

/// Who the bridge is to its upstreams: a 2025-11-25 client that can relay elicitation and
/// sampling to its own clients. (It declares no roots: it has none of its own to share.)
fn client_info() -> ClientConfig {
    let capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}, "sampling": {}}))
        .unwrap_or_default();
    ClientConfig::new(
        capabilities,
        Implementation::new("abilities-bridge", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// An upstream's stderr goes to the bridge's log (never to the stdio channel), and its last
/// line is kept for `UPSTREAM_UNAVAILABLE`.
async fn read_stderr(upstream: Weak<Upstream>, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Some(upstream) = upstream.upgrade() else {
            return;
        };
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        tracing::info!(target: "abilities_bridge::upstream", server = %upstream.name, "{line}");
        let kept: String = line.chars().take(500).collect();
        upstream.update(|s| s.last_stderr = Some(kept));
    }
}
