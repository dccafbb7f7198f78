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
/// The `_meta` key of a `tools/call` that carries an idempotency key.
pub const IDEMPOTENCY_META_KEY: &str = "io.github.abilities-rs/idempotencyKey";
/// The longest idempotency key accepted.
const MAX_KEY_CHARS: usize = 255;

/// The store and the limits of what callers hold.
pub(crate) struct Ledger {
    pub(crate) store: Arc<dyn Store>,
    /// This process, so bindings to its sessions are not another replica's.
    instance: String,
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) tokens_per_holder: u32,
    pub(crate) idempotency_window: Duration,
}

impl Ledger {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        tokens_per_holder: u32,
        idempotency_window: Duration,
    ) -> Result<Self, StoreError> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| StoreError::failed(format!("no randomness: {e}")))?;
        Ok(Self {
            store,
            instance: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            tokens_per_holder,
            idempotency_window,
        })
    }
}

/// The session a request came on, if any.
#[derive(Clone, Copy)]
pub(crate) enum Session {
    /// A session of a local transport (stdio, in-process): one client, one caller.
    Local(u64),
    /// An HTTP session (protocol 2025, stateful HTTP).
    Http(u64),
    /// No session: stateless HTTP or protocol 2026-07-28.
    None,
}

/// Who holds what a request is given (a token, a key), and where it is kept. Its id is
/// written only when a token or key needs it, not on every call.
pub(crate) struct Holder<'a> {
    ledger: &'a Ledger,
    /// The server's seal: confirmation tokens are signed with its token key.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    seal: &'a StateSeal,
    caller: Caller,
    session: Session,
    /// `name/version` of the client info, for an anonymous caller without a session.
    client: Option<String>,
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
        client: Option<&Value>,
    ) -> Self {
        let by_client = matches!(session, Session::None) && caller.is_anonymous();
        let client = by_client.then(|| {
            let part = |key: &str| {
                client
                    .and_then(|c| c.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .chars()
                    .take(100)
                    .collect::<String>()
            };
            format!("{}/{}", part("name"), part("version"))
        });
        Self {
            ledger,
            seal,
            caller: caller.clone(),
            session,
            client,
            id: std::sync::OnceLock::new(),
        }
    }

    /// `p:<principal>` for an authenticated HTTP caller; `s:<process>:<n>` for a session of
    /// a local transport (stdio, in-process) or of an anonymous HTTP caller; else, for an
    /// anonymous caller without a session, `c:<client name>/<version>` from the request's
    /// client info.
    pub(crate) fn id(&self) -> &str {
        self.id.get_or_init(|| match (self.session, &self.client) {
            (_, Some(client)) => format!("c:{client}"),
            (Session::Local(n), _) => format!("s:{}:{n}", self.ledger.instance),
            _ if !self.caller.is_anonymous() => format!("p:{}", self.caller.principal()),
            (Session::Http(n), _) => format!("s:{}:{n}", self.ledger.instance),
            (Session::None, None) => "c:/".to_owned(),
        })
    }

    pub(crate) fn ledger(&self) -> &Ledger {
        self.ledger
    }

    /// The server's seal of request state and signer of confirmation tokens.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn seal(&self) -> &StateSeal {
        self.seal
    }

    /// How many unspent confirmation tokens this holder may have. An anonymous caller
    /// without a session is known by nothing but what it sends (its client info, which every
    /// user of one client application shares), so a limit on it would let one such caller
    /// use it up for the others: its tokens are bound to its client info and each is its own
    /// secret, counted against no holder's limit (they expire after the confirmation's time
    /// limit).
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn token_limit(&self) -> u32 {
        match self.client {
            Some(_) => u32::MAX,
            None => self.ledger().tokens_per_holder,
        }
    }
}

pub(crate) fn store_failed(error: &StoreError) -> AbilityError {
    tracing::error!(%error, "the store failed");
    AbilityError::internal("the store failed")
}

/// A call's idempotency claim: what it found, and what to settle when the call ends.
pub(crate) enum Idempotent {
    /// The key is this call's: run it, then [`settle`](Self::settle) or release it.
    Run(Claim),
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
        let window = u64::try_from(holder.ledger().idempotency_window.as_millis()).unwrap_or(0);
        let claim = Claim {
            holder: holder.id().to_owned(),
            key: key.clone(),
            digest: crate::digest::hex(&digest),
            now_ms,
            expires_at_ms: now_ms.saturating_add(window),
        };
        let found = holder
            .ledger()
            .store
            .claim(&claim)
            .await
            .map_err(|e| store_failed(&e))?;
        match found {
            Claimed::New => Ok(Self::Run(claim)),
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
            Claimed::Running { started_at_ms } => Err(AbilityError::new(
                ErrorCode::IdempotencyInProgress,
                format!(
                    "A call with idempotency key '{}' started at {} and has not finished: it \
                     may still be running, or its server stopped before it could tell whether \
                     it took effect. Read the state to find out, or retry later",
                    shown(key),
                    crate::clock::utc(started_at_ms, false)
                ),
            )
            .with_details(json!({"idempotency_key": shown(key)}))),
            Claimed::Conflict => Err(AbilityError::new(
                ErrorCode::IdempotencyConflict,
                format!(
                    "Idempotency key '{}' was used for another call or other arguments; use a \
                     new key for a new call",
                    shown(key)
                ),
            )
            .with_details(json!({"idempotency_key": shown(key)}))),
        }
    }

    /// Record the call's `outcome` for its retries. A failure is logged: the call happened,
    /// and its answer still goes out.
    pub(crate) async fn settle(claim: &Claim, holder: &Holder<'_>, outcome: &Recorded) {
        let outcome = match serde_json::to_value(outcome) {
            Ok(outcome) => outcome,
            Err(error) => {
                // The key stays claimed: its retries hear the call's fate is unknown.
                tracing::error!(%error, "an idempotent call's outcome could not be written");
                return;
            }
        };
        if let Err(error) = holder
            .ledger()
            .store
            .settle(&claim.holder, &claim.key, &outcome)
            .await
        {
            tracing::error!(%error, "an idempotent call's outcome could not be recorded");
        }
    }

    /// Free the key of a call that did not run (refused before its handler started).
    pub(crate) async fn release(claim: &Claim, holder: &Holder<'_>) {
        if let Err(error) = holder
            .ledger()
            .store
            .release(&claim.holder, &claim.key)
            .await
        {
            tracing::error!(%error, "an idempotency claim could not be released");
        }
    }
}

fn shown(key: &str) -> String {
    key.chars().take(80).collect()
}
