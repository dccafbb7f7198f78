//! One upstream server: started, watched, restarted with backoff, and its tools, resources and
//! prompts kept registered as abilities of the bridge's server.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use abilities::{AbilityError, Context, ErrorCode, Server};
use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::model::{ClientConfig, Implementation, ProgressToken, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;

use crate::config::{self, Launch, ServerOverlay};
use crate::listing::Listing;
use crate::relay::Relay;

/// Whether each upstream answered its last sync (1) or not (0), by its name: the bridge's
/// family of the server's metrics.
pub(crate) type Up = abilities::metrics::prometheus_client::metrics::family::Family<
    Vec<(String, String)>,
    abilities::metrics::prometheus_client::metrics::gauge::Gauge,
>;

/// Reads an upstream's lists and brings the bridge's server in step with them: the sync's
/// `resync`, handed in by the bridge so that the connection does not depend on what it feeds.
pub(crate) type Resync = for<'a> fn(
    &'a Arc<Upstream>,
    &'a rmcp::Peer<rmcp::RoleClient>,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>,
>;

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

/// A call in flight, tracked until this drops.
pub(crate) struct Tracked {
    upstream: Arc<Upstream>,
    id: u64,
    token: Option<ProgressToken>,
    pub(crate) call: Arc<Call>,
}

impl Tracked {
    /// The progress token the request went out with.
    pub(crate) fn set_token(&mut self, token: ProgressToken) {
        self.upstream
            .by_token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), self.id);
        self.token = Some(token);
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.upstream
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        if let Some(token) = &self.token {
            self.upstream
                .by_token
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(token);
        }
    }
}

/// One upstream server.
pub(crate) struct Upstream {
    /// Its name in the configuration.
    pub(crate) name: String,
    /// The `abilities_upstream_up` family, when the server counts.
    up: Option<Up>,
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
    shutdown: Notify,
    stopped: std::sync::atomic::AtomicBool,
    /// The child process of a stdio upstream.
    child: Mutex<Option<Box<dyn ChildWrapper>>>,
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
        up: Option<Up>,
    ) -> Arc<Self> {
        Arc::new(Self {
            up,
            name: upstream.name.clone(),
            namespace: config::sanitize(&upstream.name),
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
            shutdown: Notify::new(),
            stopped: std::sync::atomic::AtomicBool::new(false),
            child: Mutex::new(None),
            registered: Mutex::new(BTreeMap::new()),
        })
    }

    /// Read the state under its lock, without copying it (the listing can be long).
    pub(crate) fn read<T>(&self, read: impl FnOnce(&State) -> T) -> T {
        read(&self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut state);
        // Its `abilities_upstream_up` gauge, when the server counts.
        if let Some(up) = &self.up {
            up.get_or_create(&vec![("upstream".to_owned(), self.name.clone())])
                .set(i64::from(state.status == Status::Up));
        }
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
        let (status, last_error, last_stderr) =
            self.read(|s| (s.status, s.last_error.clone(), s.last_stderr.clone()));
        let message = if forwarded {
            format!(
                "upstream \"{}\" stopped while the call ran: whether it took effect is unknown",
                self.name
            )
        } else {
            let status = match status {
                Status::Starting => "is starting",
                Status::Up | Status::Down => "is not running; it is being restarted",
            };
            format!("upstream \"{}\" {status}", self.name)
        };
        AbilityError::new(ErrorCode::UpstreamUnavailable, message).with_details(json!({
            "server": self.name,
            "status": status,
            "forwarded": forwarded,
            "last_error": last_error,
            "last_stderr": last_stderr,
        }))
    }

    /// Track a call (a tool call, a read, a prompt) so its progress, logs and questions find
    /// their way back; it is forgotten when the returned guard drops, however the call ends.
    pub(crate) fn begin(self: &Arc<Self>, ctx: Context) -> Tracked {
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
        Tracked {
            upstream: Arc::clone(self),
            id,
            token: None,
            call,
        }
    }

    /// The call a progress token belongs to; while the token is not yet recorded, the one
    /// call in flight.
    pub(crate) fn call_by_token(&self, token: &ProgressToken) -> Option<Arc<Call>> {
        let id = self
            .by_token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .copied();
        match id {
            Some(id) => self
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&id)
                .cloned(),
            None => self.sole_call().ok(),
        }
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
        if self.read(|s| s.starts > 0 && s.status != Status::Starting) {
            return;
        }
        notified.await;
    }

    /// Start the upstream and keep it running: on exit or failure, wait (doubling from
    /// `backoff` up to `max_backoff`, reset once it has run a minute) and start it again,
    /// until the bridge shuts down.
    pub(crate) async fn supervise(self: Arc<Self>, resync: Resync) {
        let mut wait = self.timing.backoff;
        while !self.is_shut_down() {
            self.update(|s| {
                s.status = Status::Starting;
                s.starts += 1;
                s.since = Instant::now();
            });
            let started = Instant::now();
            // Starting, initializing and reading the lists, all within the start limit.
            let start = async {
                let running = self.connect().await?;
                let peer = running.peer().clone();
                resync(&self, &peer).await?;
                Ok::<_, String>((running, peer))
            };
            let outcome = tokio::select! {
                outcome = tokio::time::timeout(self.timing.start_timeout, start) => outcome,
                () = self.shutdown.notified() => break,
            };
            match outcome {
                Ok(Ok((running, peer))) => {
                    *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer.clone());
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
                            () = self.relist.notified() => {
                                let limit = self.timing.start_timeout;
                                match tokio::time::timeout(limit, resync(&self, &peer)).await {
                                    Ok(Ok(())) => {}
                                    Ok(Err(error)) => self.update(|s| s.last_error = Some(error)),
                                    Err(_) => self.update(|s| {
                                        s.last_error = Some(format!("re-listing took longer than {limit:?}"));
                                    }),
                                }
                            }
                            () = self.shutdown.notified() => break,
                        }
                    }
                    *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    if !self.is_shut_down() {
                        let why = "the upstream closed its connection or exited".to_owned();
                        tracing::warn!(server = %self.name, last_stderr = ?self.read(|s| s.last_stderr.clone()), "{why}");
                        self.update(|s| s.last_error = Some(why));
                    }
                }
                Ok(Err(error)) => {
                    tracing::warn!(server = %self.name, %error, "upstream did not start");
                    self.update(|s| s.last_error = Some(error));
                }
                Err(_) => {
                    let why = format!(
                        "did not answer initialize and its lists within {:?}",
                        self.timing.start_timeout
                    );
                    tracing::warn!(server = %self.name, "upstream {why}");
                    self.update(|s| s.last_error = Some(why));
                }
            }
            self.reap();
            self.update(|s| {
                s.status = Status::Down;
                s.since = Instant::now();
            });
            self.first_attempt.notify_waiters();
            if started.elapsed() > Duration::from_secs(60) {
                wait = self.timing.backoff;
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.shutdown.notified() => break,
            }
            wait = (wait * 2).min(self.timing.max_backoff);
        }
        self.reap();
    }

    fn is_shut_down(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Stop for good: no more restarts, and the child process group killed now.
    pub(crate) fn shut_down(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::Release);
        self.shutdown.notify_waiters();
        self.kill_child();
    }

    /// Kill the child's process group, if there is a child (synchronously: this works while
    /// the runtime shuts down too).
    fn kill_child(&self) -> Option<Box<dyn ChildWrapper>> {
        let mut child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let _ = child.start_kill();
        let _ = child.try_wait();
        Some(child)
    }

    /// Kill what is left of the child and collect its exit, so no zombie stays behind.
    fn reap(&self) {
        if let Some(mut child) = self.kill_child()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = child.wait().await;
            });
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
                cmd.args(args)
                    .envs(env)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = CommandWrap::from(cmd);
                // Its own process group, so what it starts (`npx` starts node) is killed
                // with it.
                #[cfg(unix)]
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let mut child = wrapped
                    .spawn()
                    .map_err(|e| format!("cannot run {command}: {e}"))?;
                let stdin = child.stdin().take();
                let stdout = child.stdout().take();
                if let Some(stderr) = child.stderr().take() {
                    tokio::spawn(read_stderr(Arc::downgrade(self), stderr));
                }
                *self.child.lock().unwrap_or_else(PoisonError::into_inner) = Some(child);
                let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
                    return Err(format!("{command}: no pipe to its stdin or stdout"));
                };
                relay
                    .serve((stdout, stdin))
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
        match self.read(|s| s.last_stderr.clone()) {
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
    use tokio::io::AsyncReadExt;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most 8 KiB a line: a line without end is cut, not buffered forever.
        match (&mut reader).take(8192).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Some(upstream) = upstream.upgrade() else {
            return;
        };
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        if text.is_empty() {
            continue;
        }
        tracing::info!(target: "abilities_bridge::upstream", server = %upstream.name, "{text}");
        let kept: String = text.chars().take(500).collect();
        upstream.update(|s| s.last_stderr = Some(kept));
    }
}
