//! What a caller holds beyond one request, kept in the [`Store`] so every replica sharing it
//! agrees: confirmation tokens (issued, spent once) and idempotency keys (a call runs once,
//! its retries get its outcome).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResult, CreateTaskResult, ErrorData};
use serde_json::{Value, json};

use crate::seal::StateSeal;
use crate::store::{Claim, Claimed, Store, StoreError};
use crate::warning::Warning;
use crate::{AbilityError, Caller, ErrorCode};

/// How many unspent confirmation tokens one holder may have, unless the builder says
/// otherwise.
pub(crate) const DEFAULT_TOKENS_PER_HOLDER: u32 = 100;
/// How long an idempotency key is remembered, unless the builder says otherwise.
pub(crate) const DEFAULT_IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// How long an idempotency claim is held without news from its owner, unless the builder says
/// otherwise.
pub(crate) const DEFAULT_IDEMPOTENCY_LEASE: Duration = Duration::from_secs(30);
/// The longest wait between two attempts to record an outcome while the store is down.
const RECORD_RETRY_MAX: Duration = Duration::from_secs(2);
/// The `_meta` key of a `tools/call` that carries an idempotency key.
pub const IDEMPOTENCY_META_KEY: &str = "io.github.abilities-rs/idempotencyKey";
/// The longest idempotency key accepted.
const MAX_KEY_CHARS: usize = 255;

/// The store and the limits of what callers hold.
pub(crate) struct Ledger {
    pub(crate) store: Arc<dyn Store>,
    /// This process, so bindings to its sessions are not another replica's.
    instance: String,
    pub(crate) tokens_per_holder: u32,
    pub(crate) idempotency_window: Duration,
    pub(crate) idempotency_lease: Duration,
    /// The idempotency claims this process made: each claim's owner is told apart by it.
    claims: std::sync::atomic::AtomicU64,
}

impl Ledger {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        tokens_per_holder: u32,
        idempotency_window: Duration,
        idempotency_lease: Duration,
    ) -> Result<Self, StoreError> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| StoreError::failed(format!("no randomness: {e}")))?;
        Ok(Self {
            store,
            instance: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            tokens_per_holder,
            idempotency_window,
            idempotency_lease,
            claims: std::sync::atomic::AtomicU64::new(0),
        })
    }
}

/// The session a request came on, if any.
#[derive(Clone)]
pub(crate) enum Session {
    /// A session of a local transport (stdio, in-process): one client, one caller.
    Local(u64),
    /// An HTTP session (protocol 2025, stateful HTTP).
    Http(u64),
    /// An HTTP session kept for other replicas, by its id (`Mcp-Session-Id`): the same on
    /// every replica.
    Kept(String),
    /// No session: stateless HTTP or protocol 2026-07-28.
    None,
}

/// Where a request's client info is: sent with it, or said by its session's `initialize`
/// (read only when a holder needs it).
pub(crate) enum ClientInfo<'a> {
    /// What the request sent (`_meta` on protocol 2026-07-28).
    Sent(&'a Value),
    /// The session the request came in.
    Peer(rmcp::Peer<rmcp::RoleServer>),
    None,
}

/// `name/version` of client info, each at most 100 characters (empty when unknown).
fn client_name(name: &str, version: &str) -> String {
    let cut = |text: &str| text.chars().take(100).collect::<String>();
    format!("{}/{}", cut(name), cut(version))
}

/// A holder's client, as far as it was read.
enum Client {
    Named(String),
    Peer(rmcp::Peer<rmcp::RoleServer>, std::sync::OnceLock<String>),
}

impl Client {
    fn of(info: ClientInfo<'_>) -> Self {
        let text = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match info {
            ClientInfo::Sent(sent) => {
                Self::Named(client_name(&text(sent, "name"), &text(sent, "version")))
            }
            ClientInfo::Peer(peer) => Self::Peer(peer, std::sync::OnceLock::new()),
            ClientInfo::None => Self::Named(client_name("", "")),
        }
    }

    fn name(&self) -> &str {
        match self {
            Self::Named(name) => name,
            Self::Peer(peer, name) => name.get_or_init(|| match peer.peer_info() {
                Some(info) => client_name(&info.client_info.name, &info.client_info.version),
                None => client_name("", ""),
            }),
        }
    }
}

/// Who holds what a request is given (a token, a key), and where it is kept. Its id is
/// written only when a token or key needs it, not on every call.
pub(crate) struct Holder<'a> {
    ledger: &'a Ledger,
    /// The server's seal: confirmation tokens are signed with its token key.
    seal: &'a StateSeal,
    caller: Caller,
    session: Session,
    /// The client, for an anonymous caller of an HTTP endpoint.
    client: Option<Client>,
    id: std::sync::OnceLock<String>,
}

impl<'a> Holder<'a> {
    /// The holder of a request from `caller`: a local transport's `session`, the principal
    /// of an authenticated caller, an anonymous caller's `session` when the transport keeps
    /// one, or else the `client` info the request carries.
    pub(crate) fn new(
        ledger: &'a Ledger,
        seal: &'a StateSeal,
        caller: &Caller,
        session: Session,
        client: ClientInfo<'_>,
    ) -> Self {
        // An anonymous caller of an HTTP endpoint is known by its client info for its
        // tokens (and, without a session, for everything it holds).
        let by_client = !matches!(session, Session::Local(_)) && caller.is_anonymous();
        Self {
            ledger,
            seal,
            caller: caller.clone(),
            session,
            client: by_client.then(|| Client::of(client)),
            id: std::sync::OnceLock::new(),
        }
    }

    /// The client's `name/version`, for a holder known by it.
    fn client_name(&self) -> Option<&str> {
        self.client.as_ref().map(Client::name)
    }

    /// `p:<principal>` for an authenticated HTTP caller; `s:<process>:<n>` for a session of
    /// a local transport (stdio, in-process) or of an anonymous HTTP caller; `k:<digest>` for
    /// an anonymous caller's session kept for other replicas (the same on all); else, for an
    /// anonymous caller without a session, `c:<client name>/<version>` from the request's
    /// client info.
    pub(crate) fn id(&self) -> &str {
        self.id
            .get_or_init(|| match (&self.session, self.client_name()) {
                (Session::None, Some(client)) => format!("c:{client}"),
                (Session::Local(n), _) => format!("s:{}:{n}", self.ledger.instance),
                _ if !self.caller.is_anonymous() => format!("p:{}", self.caller.principal()),
                (Session::Http(n), _) => format!("s:{}:{n}", self.ledger.instance),
                // The session id is a bearer secret: the ledger keeps a digest of it.
                (Session::Kept(id), _) => {
                    let digest = crate::digest::canonical(&Value::String(id.clone()));
                    format!("k:{}", crate::digest::hex(&digest))
                }
                (Session::None, None) => "c:/".to_owned(),
            })
    }

    /// Whether the holder is a session (a local one, or an HTTP one) or an authenticated
    /// caller: known apart from every other holder.
    pub(crate) fn has_session(&self) -> bool {
        !matches!(self.session, Session::None) || !self.caller.is_anonymous()
    }

    /// Who a confirmation token is bound to: as [`id`](Self::id), but an anonymous caller of
    /// an HTTP endpoint by its client info (`c:<name>/<version>`) whether or not it has a
    /// session, as a client often opens a session per command (the Inspector's CLI) and
    /// retries in the next. Such a token is its own secret, bound to the tool and its
    /// arguments, and spent once.
    pub(crate) fn token_holder(&self) -> std::borrow::Cow<'_, str> {
        match self.client_name() {
            Some(client) => std::borrow::Cow::Owned(format!("c:{client}")),
            None => std::borrow::Cow::Borrowed(self.id()),
        }
    }

    pub(crate) fn ledger(&self) -> &Ledger {
        self.ledger
    }

    /// The server's seal of request state and signer of confirmation tokens.
    pub(crate) fn seal(&self) -> &StateSeal {
        self.seal
    }

    /// How many unspent confirmation tokens this holder may have. An anonymous caller
    /// without a session is known by nothing but what it sends (its client info, which every
    /// user of one client application shares), so a limit on it would let one such caller
    /// use it up for the others: its tokens are bound to its client info and each is its own
    /// secret, counted against no holder's limit (they expire after the confirmation's time
    /// limit).
    pub(crate) fn token_limit(&self) -> u32 {
        match self.client {
            Some(_) => u32::MAX,
            None => self.ledger().tokens_per_holder,
        }
    }
}

/// The refusal of a call that carries an idempotency key (as `param`) on a server whose
/// chain keeps none (it has no `idempotency` link): a key is never silently ignored.
pub(crate) fn keys_not_kept(param: &str) -> AbilityError {
    AbilityError::new(
        ErrorCode::ValidationInvalidValue,
        format!(
            "This server keeps no idempotency keys: send the call without '{param}' (a retry \
             would run it again)"
        ),
    )
    .with_details(json!({"param_name": param, "reason": "idempotency_not_kept"}))
}

pub(crate) fn store_failed(error: &StoreError) -> AbilityError {
    tracing::error!(%error, "the store failed");
    AbilityError::internal("the store failed")
}

/// A call's idempotency claim: what it found, and what to settle when the call ends.
pub(crate) enum Idempotent {
    /// The key is this call's: run it, then [`settle`](Self::settle) or release it.
    Run(Held),
    /// The first call with this key answered this: send it again.
    Replay(Recorded),
}

/// What an idempotency key records of its first call, for its retries: one record for every
/// surface, written and read by serde.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Recorded {
    /// A `tools/call` answered with a result.
    Complete(Box<CallToolResult>),
    /// A `tools/call` answered with a task, whose handler runs on.
    Task(Box<CreateTaskResult>),
    /// A `tools/call` whose handler started, then failed: its JSON-RPC error.
    Error(ErrorData),
    /// An MCP-AQL operation's data and warnings.
    Operation {
        data: Value,
        #[serde(default)]
        warnings: Vec<Warning>,
    },
    /// An MCP-AQL operation whose handler started, then failed.
    Failed(AbilityError),
}

impl Idempotent {
    /// Claim `key` (as sent) for `what` with `args`, for `holder`. A key that is not a
    /// non-empty string of at most 255 characters, a key used for other arguments, and a key
    /// whose first call has not finished are refused, each with its own code.
    pub(crate) async fn claim(
        holder: &Holder<'_>,
        key: &Value,
        what: &str,
        args: &Value,
    ) -> Result<Self, AbilityError> {
        let key = match key {
            Value::String(key) if !key.is_empty() && key.chars().count() <= MAX_KEY_CHARS => key,
            _ => {
                return Err(AbilityError::new(
                    ErrorCode::ValidationInvalidValue,
                    format!(
                        "The idempotency key must be a string of 1 to {MAX_KEY_CHARS} characters"
                    ),
                ));
            }
        };
        let digest = crate::digest::canonical(&json!([what, args]));
        let now_ms = crate::clock::now_ms();
        let ledger = holder.ledger();
        let window = u64::try_from(ledger.idempotency_window.as_millis()).unwrap_or(0);
        let claim = Claim {
            holder: holder.id().to_owned(),
            key: key.clone(),
            digest: crate::digest::hex(&digest),
            now_ms,
            expires_at_ms: now_ms.saturating_add(window),
            owner: format!(
                "{}-{}",
                ledger.instance,
                ledger
                    .claims
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
            lease_until_ms: now_ms.saturating_add(lease_ms(ledger)),
        };
        let found = ledger
            .store
            .claim(&claim)
            .await
            .map_err(|e| store_failed(&e))?;
        match found {
            Claimed::New => Ok(Self::Run(Held::new(claim, ledger))),
            Claimed::Done { outcome } => match serde_json::from_value(outcome) {
                Ok(recorded) => Ok(Self::Replay(recorded)),
                // Never replayed as what it is not.
                Err(error) => {
                    tracing::error!(%error, "an idempotency record could not be read");
                    Err(AbilityError::internal(format!(
                        "The answer recorded for idempotency key '{}' could not be read; use a \
                         new key",
                        shown(key)
                    )))
                }
            },
            other => Err(refusal(other, key)),
        }
    }

    /// Record the call's `outcome` for its retries. While the store fails, the outcome is
    /// kept and written again (and the claim's lease renewed) until the store takes it or
    /// the key's window ends; meanwhile retries hear the call is in progress, and the answer
    /// still goes out at once.
    pub(crate) async fn settle(held: Held, outcome: &Recorded) {
        let outcome = match serde_json::to_value(outcome) {
            Ok(outcome) => outcome,
            Err(error) => {
                // The key stays claimed until its lease ends: its retries hear the call's
                // fate is unknown.
                tracing::error!(%error, "an idempotent call's outcome could not be written");
                return;
            }
        };
        held.write(Write::Settle(outcome)).await;
    }

    /// Free the key of a call that did not run (refused before its handler started), retried
    /// like [`settle`](Self::settle) while the store fails.
    pub(crate) async fn release(held: Held) {
        held.write(Write::Release).await;
    }
}

/// What is written of a held claim when its call ends.
enum Write {
    /// Its outcome, for the retries.
    Settle(Value),
    /// Nothing happened: the key is free again.
    Release,
}

impl Write {
    /// This write of `claim`'s record, in `store`: only this claim's, never one another call
    /// made since.
    fn to<'a>(
        &'a self,
        store: &'a dyn Store,
        claim: &'a Claim,
    ) -> crate::store::StoreFuture<'a, ()> {
        match self {
            Self::Settle(outcome) => store.settle(&claim.holder, &claim.key, &claim.owner, outcome),
            Self::Release => store.release(&claim.holder, &claim.key, &claim.owner),
        }
    }
}

impl Held {
    /// Write `write` now; while the store fails, again every 50 ms to 2 s in a task of its
    /// own, until the store takes it or the key's window ends (past it nobody asks). The task
    /// holds the claim, so its lease is renewed as long as the write waits.
    async fn write(self, write: Write) {
        let Err(error) = write.to(&*self.store, &self.claim).await else {
            return;
        };
        tracing::warn!(%error, "an idempotency record could not be written yet: retrying");
        tokio::spawn(async move {
            let mut wait = Duration::from_millis(50);
            loop {
                tokio::time::sleep(wait).await;
                if crate::clock::now_ms() >= self.claim.expires_at_ms {
                    tracing::error!("an idempotency record could not be written in its window");
                    return;
                }
                match write.to(&*self.store, &self.claim).await {
                    Ok(()) => {
                        tracing::info!("an idempotency record was written after a retry");
                        return;
                    }
                    Err(error) => tracing::debug!(%error, "writing it failed again"),
                }
                wait = (wait * 2).min(RECORD_RETRY_MAX);
            }
        });
    }
}

/// The refusal of a call whose key another call holds (`found`: not new, not done).
fn refusal(found: Claimed, key: &str) -> AbilityError {
    let (code, message) = match found {
        Claimed::Running { started_at_ms } => (
            ErrorCode::IdempotencyInProgress,
            format!(
                "A call with idempotency key '{}' started at {} and has not finished: it is \
                 still running, or its outcome is still being recorded. Retry later to get its \
                 answer",
                shown(key),
                crate::clock::utc(started_at_ms, false)
            ),
        ),
        Claimed::Abandoned {
            started_at_ms,
            lease_until_ms,
        } => (
            ErrorCode::IdempotencyOutcomeUnknown,
            format!(
                "A call with idempotency key '{}' started at {} on a server that has not been \
                 heard from since {}, before it recorded the outcome: whether the call took \
                 effect is unknown. Read the state to find out, then use a new key",
                shown(key),
                crate::clock::utc(started_at_ms, false),
                crate::clock::utc(lease_until_ms, false)
            ),
        ),
        Claimed::Conflict => (
            ErrorCode::IdempotencyConflict,
            format!(
                "Idempotency key '{}' was used for another call or other arguments; use a new \
                 key for a new call",
                shown(key)
            ),
        ),
        // Answered by the caller before it asks for a refusal.
        Claimed::New | Claimed::Done { .. } => {
            return AbilityError::internal("an idempotency claim was misread");
        }
    };
    AbilityError::new(code, message).with_details(json!({"idempotency_key": shown(key)}))
}

/// The lease of an idempotency claim, in milliseconds.
fn lease_ms(ledger: &Ledger) -> u64 {
    u64::try_from(ledger.idempotency_lease.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// A claim this server holds while its call runs and until its outcome is recorded: its
/// lease is renewed every third of the lease, by a task that ends with it.
pub(crate) struct Held {
    claim: Claim,
    store: Arc<dyn Store>,
    renewing: tokio::task::JoinHandle<()>,
}

impl Held {
    fn new(claim: Claim, ledger: &Ledger) -> Self {
        let store = Arc::clone(&ledger.store);
        let lease = lease_ms(ledger);
        let renewing = tokio::spawn({
            let (store, claim) = (Arc::clone(&store), claim.clone());
            async move {
                let every = Duration::from_millis((lease / 3).max(1));
                loop {
                    tokio::time::sleep(every).await;
                    let until = crate::clock::now_ms().saturating_add(lease);
                    let renewed = store
                        .renew(&claim.holder, &claim.key, &claim.owner, until)
                        .await;
                    if let Err(error) = renewed {
                        tracing::debug!(%error, "an idempotency claim's lease was not renewed");
                    }
                }
            }
        });
        Self {
            claim,
            store,
            renewing,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewing.abort();
    }
}

fn shown(key: &str) -> String {
    key.chars().take(80).collect()
}
