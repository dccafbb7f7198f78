//! The settings a [`ServerBuilder`](crate::ServerBuilder) takes in groups: HTTP, and what the
//! server remembers between requests. (Tasks' are [`TaskConfig`](crate::TaskConfig), beside
//! them.) Durations say what they measure: a `timeout` is how long the server waits, a `ttl`
//! how long it keeps something, an `interval` how often it does something.

use std::time::Duration;

/// How long a connection may take to send a request's head, by default.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request may take to send its body, by default.
const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopping replica lets its requests finish, by default: within Kubernetes'
/// default grace period of 30 s.
pub(crate) const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(25);

/// Limits and options of the streamable HTTP transport
/// ([`ServerBuilder::http`](crate::ServerBuilder::http)).
///
/// ```standalone_crate
/// use abilities::{Server, config::HttpConfig};
/// use std::time::Duration;
///
/// let server = Server::builder()
///     .http(
///         HttpConfig::default()
///             .max_body_bytes(1 << 20)
///             .session_idle_timeout(Duration::from_secs(60))
///             .allowed_hosts(["localhost", "mcp.example.com"]),
///     )
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct HttpConfig {
    pub(crate) max_body_bytes: usize,
    pub(crate) stateful: bool,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle: Duration,
    /// How long a connection may take to send a request's head.
    pub(crate) header_read_timeout: Duration,
    /// How long a request may take to send its body, once its head is in.
    pub(crate) body_read_timeout: Duration,
    /// Where the liveness probe answers, if anywhere.
    pub(crate) live_path: Option<String>,
    /// Where the readiness probe answers, if anywhere.
    pub(crate) ready_path: Option<String>,
    /// How long a stopping server lets its requests in flight finish.
    pub(crate) drain_grace: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            stateful: true,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            max_sessions: 1000,
            session_idle: Duration::from_secs(300),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            live_path: Some("/healthz".into()),
            ready_path: Some("/readyz".into()),
            drain_grace: DEFAULT_DRAIN_GRACE,
        }
    }
}

impl HttpConfig {
    /// The largest HTTP request body accepted (default 4 MiB). A request that declares a
    /// larger `Content-Length` is answered `413` at once, before any of its body is read.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long an HTTP connection may take to send a request's head (default 10 s); a
    /// connection that is slower is closed, so slow clients cannot hold connections open by
    /// trickling headers. Applies to [`Server::serve_http`](crate::Server::serve_http) and
    /// [`Server::serve_listener`](crate::Server::serve_listener).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long an HTTP request may take to send its whole body once its head is in (default
    /// 30 s); past it, the request is answered `408` with a JSON-RPC error and what was read
    /// is dropped.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// How many HTTP sessions (protocol 2025 clients; 2026-07-28 needs none) may be open at
    /// once at each HTTP endpoint (each mounted path; default: 1,000). Past it, an
    /// `initialize` that would open another is answered `503` with a JSON-RPC error
    /// (`-32000`) saying so; requests of open sessions and session-less requests are served
    /// as ever. Each idle session holds about 60 KiB.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long an HTTP session may sit idle before it is closed (default: five minutes).
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle = timeout;
        self
    }

    /// Where the app answers its liveness and readiness probes (default `/healthz` and
    /// `/readyz`), `GET` only and outside authentication. Liveness is `200` while the process
    /// serves; readiness is `200` while the store answers and the server is not draining,
    /// else `503` with why. A path the MCP endpoint takes is not also a probe.
    pub fn probes(mut self, live: impl Into<String>, ready: impl Into<String>) -> Self {
        self.live_path = Some(rooted(live.into()));
        self.ready_path = Some(rooted(ready.into()));
        self
    }

    /// No probes on the app.
    pub fn without_probes(mut self) -> Self {
        self.live_path = None;
        self.ready_path = None;
        self
    }

    /// How long a server told to stop (`SIGTERM`, Ctrl-C, or the future given to
    /// [`Server::serve_listener_until`](crate::Server::serve_listener_until)) lets its
    /// requests in flight finish (default 25 s, within Kubernetes' default grace period of
    /// 30 s). It [drains](crate::Server::drain) first: readiness fails, no new session or
    /// listen stream is opened, and the listen streams open end with a hint to listen again.
    pub fn drain_grace(mut self, grace: Duration) -> Self {
        self.drain_grace = grace;
        self
    }

    /// Serve HTTP without sessions: every request stands alone (default: sessions).
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateful = !stateless;
        self
    }

    /// `Host` values HTTP requests may carry (default: loopback names), against DNS rebinding.
    pub fn allowed_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// `Origin` values browser requests may carry (default: loopback origins on any port).
    pub fn allowed_origins<S: Into<String>>(
        mut self,
        origins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }
}

/// `path`, starting with `/` (a route must).
fn rooted(path: String) -> String {
    if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    }
}

/// What the server remembers between a client's requests
/// ([`ServerBuilder::ledger`](crate::ServerBuilder::ledger)): MCP-AQL confirmation tokens,
/// idempotency keys, and the sealed state of multi-round calls.
///
/// ```standalone_crate
/// use abilities::{Server, config::LedgerConfig};
/// use std::time::Duration;
///
/// let server = Server::builder()
///     .ledger(
///         LedgerConfig::default()
///             .idempotency_ttl(Duration::from_secs(3600))
///             .request_state_key([7u8; 32]),
///     )
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct LedgerConfig {
    pub(crate) tokens_per_caller: u32,
    pub(crate) idempotency_ttl: Duration,
    pub(crate) idempotency_lease: Duration,
    pub(crate) request_state_key: Option<Vec<u8>>,
    pub(crate) request_state_ttl: Duration,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            tokens_per_caller: crate::ledger::DEFAULT_TOKENS_PER_HOLDER,
            idempotency_ttl: crate::ledger::DEFAULT_IDEMPOTENCY_WINDOW,
            idempotency_lease: crate::ledger::DEFAULT_IDEMPOTENCY_LEASE,
            request_state_key: None,
            request_state_ttl: crate::seal::DEFAULT_STATE_LIFETIME,
        }
    }
}

impl LedgerConfig {
    /// How many unspent MCP-AQL confirmation tokens one holder may have (default: 100); past
    /// it, asking for another is refused with `LIMIT_EXCEEDED` until some are spent or
    /// expire. Each holder has its own allowance and nobody's tokens are evicted for
    /// another's. A holder is an authenticated caller's principal, or an anonymous caller's
    /// session; anonymous callers without a session (protocol 2026-07-28) are told apart
    /// only by their `clientInfo`, so those of one client share an allowance.
    pub fn max_tokens_per_caller(mut self, limit: u32) -> Self {
        self.tokens_per_caller = limit;
        self
    }

    /// How long an idempotency key is remembered (default: 24 hours): within it, a call
    /// carrying the same key (see
    /// [`IDEMPOTENCY_META_KEY`](crate::IDEMPOTENCY_META_KEY)) from the same holder gets the
    /// first call's outcome instead of running again. Keys should be unique per call (a
    /// random UUID): a holder's calls share one key space.
    pub fn idempotency_ttl(mut self, ttl: Duration) -> Self {
        self.idempotency_ttl = ttl;
        self
    }

    /// How long an idempotency key's claim is held without news from the server running its
    /// call (default: 30 seconds). The server renews it every third of that while the call
    /// runs and while its outcome is being recorded (retried until the store takes it); a
    /// claim with no outcome whose lease ran out belongs to a server that stopped, and its
    /// retries are told `IDEMPOTENCY_OUTCOME_UNKNOWN` instead of `IDEMPOTENCY_IN_PROGRESS`.
    /// Keep it well above the replicas' clock skew.
    pub fn idempotency_lease(mut self, lease: Duration) -> Self {
        self.idempotency_lease = lease;
        self
    }

    /// The key that seals multi-round input state (`requestState`, protocol 2026-07-28), at
    /// least 32 bytes ([`build`](crate::ServerBuilder::build) fails on a shorter one).
    /// Replicas that share it resume each other's calls; without one, each process draws a
    /// random key, so a retry must reach the process that asked.
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.request_state_key = Some(key.into());
        self
    }

    /// How long a client may take to answer a call's questions (default: 10 minutes); an
    /// older `requestState` is refused.
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = ttl;
        self
    }
}
