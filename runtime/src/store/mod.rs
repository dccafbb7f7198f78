//! What outlives a request: the [`Store`] trait and its records. Background tasks, the
//! confirmation ledger, idempotency records and resource updates all go through it, so
//! replicas that share a store share them.
//!
//! [`MemoryStore`] is the default (in this process, gone with it); `SqliteStore` (feature
//! `sqlite`) keeps everything in a file that outlives a restart; `PostgresStore` (feature
//! `postgres`) is shared by every replica that connects to the same database, and
//! `RedisStore` (feature `redis`) by every replica that connects to the same Redis or Valkey.

#[cfg(any(feature = "postgres", feature = "redis"))]
mod heard;
#[cfg(feature = "postgres")]
mod listener;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
mod session;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
mod tables;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use session::{SessionEvent, SessionEvents, SessionRecord, StreamEvent, StreamRead};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// The status of a background task, as the tasks extension names it on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for answers to its input requests (`tasks/update`).
    InputRequired,
    /// Finished with a result (a tool error included).
    Completed,
    /// Finished without a result: the server failed it.
    Failed,
    /// Cancelled by its caller.
    Cancelled,
}

impl TaskStatus {
    /// The wire form: `working`, `input_required`, `completed`, `failed`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status of its wire form.
    pub fn parse(status: &str) -> Option<Self> {
        [
            Self::Working,
            Self::InputRequired,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == status)
    }

    /// Whether the task has finished (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// One task as a store keeps it. Times are milliseconds since the Unix epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// The task id (random, 128 bits, hex).
    pub id: String,
    /// The principal of the caller that created it: only that caller may see it.
    pub owner: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// What it is doing or why it ended, for people.
    pub status_message: Option<String>,
    /// When it was created.
    pub created_at_ms: u64,
    /// When its status, message or input requests last changed.
    pub updated_at_ms: u64,
    /// When the process running it last said it still does ([`Store::touch_tasks`]). With a
    /// store replicas share, a running task nobody has kept alive for a while reads as
    /// failed: its replica stopped.
    pub alive_at_ms: u64,
    /// How long after creation it is kept; past it the task is gone.
    pub ttl_ms: u64,
    /// How often a client should poll it.
    pub poll_interval_ms: u64,
    /// The questions it waits for (`{key: request}`), while `input_required`.
    pub input_requests: Option<Value>,
    /// The tool result, once completed.
    pub result: Option<Value>,
    /// The error (`{code, message, data?}`), once failed.
    pub error: Option<Value>,
}

impl TaskRecord {
    /// When the task expires.
    pub fn expires_at_ms(&self) -> u64 {
        self.created_at_ms.saturating_add(self.ttl_ms)
    }
}

/// The limits on running tasks a new task is recorded within (see [`Store::insert_task`]).
/// A task runs while it is `working` or `input_required`, not expired, and marked alive
/// within `lease_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    /// How many running tasks the new task's owner may have; `None` for an owner that names
    /// no one in particular (anonymous callers), counted against the server's limit only.
    pub per_owner: Option<u32>,
    /// How many running tasks every replica sharing the store may have together.
    pub per_server: u32,
    /// How long after its last mark of life a task still counts as running.
    pub lease_ms: u64,
}

impl TaskLimits {
    /// No limit at all (seeding a store, tests).
    pub const NONE: Self = Self {
        per_owner: None,
        per_server: u32::MAX,
        lease_ms: 0,
    };
}

/// What recording a new task found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskInsert {
    /// Within the limits: the task is recorded.
    Inserted,
    /// Its owner already runs `running` tasks, its limit: nothing was recorded.
    OwnerFull {
        /// The owner's running tasks.
        running: u64,
    },
    /// The server already runs `running` tasks, its limit: nothing was recorded.
    ServerFull {
        /// The running tasks of every replica.
        running: u64,
    },
}

/// A confirmation token as the ledger keeps it: issued to `holder`, spendable once until
/// `expires_at_ms`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRecord {
    /// The token's id (random, 128 bits, hex); the token itself is sealed and names it.
    pub id: String,
    /// Who the token was issued to (a principal, a session or a client binding).
    pub holder: String,
    /// The operation it confirms.
    pub operation: String,
    /// A hash of the canonical parameters it confirms (hex).
    pub params: String,
    /// When it was issued.
    pub issued_at_ms: u64,
    /// When it stops being spendable.
    pub expires_at_ms: u64,
}

/// What spending a token found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spend {
    /// It was live and unspent: it is spent now.
    Spent,
    /// It was spent before (here or on another replica).
    AlreadyUsed,
    /// It confirms another operation or other parameters: it stays unspent.
    OtherScope {
        /// The operation it confirms.
        operation: String,
    },
    /// The ledger does not hold it (never issued here, expired and swept, or another
    /// holder's).
    Unknown,
}

impl Spend {
    /// Why a token was not spent: `found` is its record's (spent, operation), if any.
    pub(in crate::store) fn refused(found: Option<(bool, String)>) -> Self {
        match found {
            None => Self::Unknown,
            Some((true, _)) => Self::AlreadyUsed,
            Some((false, operation)) => Self::OtherScope { operation },
        }
    }
}

/// A claim on an idempotency key: the first call with `key` from `holder` runs; the
/// others get its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Who makes the call.
    pub holder: String,
    /// The caller's idempotency key.
    pub key: String,
    /// What is called with what (the operation and a hash of its canonical arguments).
    pub digest: String,
    /// When the claim is made.
    pub now_ms: u64,
    /// Until when the key is remembered.
    pub expires_at_ms: u64,
    /// Who makes the call: one claim of one server process. Only it renews the claim's
    /// lease, settles it or releases it, so a late or repeated write of a claim that was
    /// taken over (its window ended) never touches the new claim.
    pub owner: String,
    /// Until when the claim is held without news from its owner: the owner renews it while
    /// the call runs and its outcome is being recorded ([`Store::renew`]); a claim with no
    /// outcome whose lease ran out is [`Claimed::Abandoned`].
    pub lease_until_ms: u64,
}

/// What a claim found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Claimed {
    /// The key was free: this call runs, then settles the claim.
    New,
    /// A call with this key and these arguments started at `started_at_ms` and has not
    /// settled; its owner still renews the claim (it runs, or its outcome is being recorded).
    Running {
        /// When the first call started.
        started_at_ms: u64,
    },
    /// A call with this key and these arguments started at `started_at_ms` and has not
    /// settled, and its owner stopped renewing the claim at `lease_until_ms`: its server
    /// stopped, and whether the call took effect is unknown.
    Abandoned {
        /// When the first call started.
        started_at_ms: u64,
        /// When the claim's lease ran out.
        lease_until_ms: u64,
    },
    /// A call with this key and these arguments finished with `outcome`.
    Done {
        /// The first call's answer, as it was sent.
        outcome: Value,
    },
    /// The key was used for another operation or other arguments.
    Conflict,
}

impl Claimed {
    /// What a claim found in a record already there: another call's key (`Conflict`), or this
    /// call's, settled (`Done`), or not: renewed by its owner (`Running`) or not since
    /// `lease_until_ms` (`Abandoned`).
    pub fn existing(
        claim: &Claim,
        digest: &str,
        started_at_ms: u64,
        lease_until_ms: u64,
        outcome: Option<Value>,
    ) -> Self {
        if digest != claim.digest {
            return Self::Conflict;
        }
        match outcome {
            Some(outcome) => Self::Done { outcome },
            // A lease of 0: a claim made before claims had leases, by a server that may still
            // be running it.
            None if lease_until_ms == 0 || lease_until_ms >= claim.now_ms => {
                Self::Running { started_at_ms }
            }
            None => Self::Abandoned {
                started_at_ms,
                lease_until_ms,
            },
        }
    }
}

/// What taking one call from a rate limit's budget found (see [`Store::take_rate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateTaken {
    /// The budget allowed the call, and it is counted.
    Allowed,
    /// Over the limit: a call is allowed again in `retry_after_ms`. Nothing was counted.
    Limited {
        /// How long until the budget allows one call.
        retry_after_ms: u64,
    },
}

/// A resource update from another replica, fanned out through the store.
pub type Updates = tokio::sync::broadcast::Receiver<String>;

/// What one replica asks of a task another replica runs (`tasks/cancel`, `tasks/update`
/// landing on a replica that does not run it).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskSignal {
    /// Stop the task (its handler's cancellation fires).
    Cancel,
    /// Answers to the task's questions, by key.
    Answers(std::collections::BTreeMap<String, Value>),
}

impl TaskSignal {
    /// The signal as the store keeps it: `{"cancel": true}` or `{"answers": {...}}`.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Cancel => serde_json::json!({"cancel": true}),
            Self::Answers(answers) => serde_json::json!({"answers": answers}),
        }
    }

    /// The signal of its stored JSON, if it is one.
    pub fn from_json(value: &Value) -> Option<Self> {
        if value.get("cancel") == Some(&Value::Bool(true)) {
            return Some(Self::Cancel);
        }
        let answers = value.get("answers")?.as_object()?;
        Some(Self::Answers(
            answers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ))
    }
}

/// A task's news from another replica, as a store that replicas share carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskEvent {
    /// The task's record changed: listen streams following it read it again.
    Changed(String),
    /// A [`TaskSignal`] was recorded for the task: the replica running it takes it.
    Signalled(String),
    /// Events may have been lost (the store's connection to the other replicas broke and is
    /// back): every running task takes its signals, every followed task is read again.
    Missed,
}

/// Task events published by other replicas.
pub type TaskEvents = tokio::sync::broadcast::Receiver<TaskEvent>;

/// Why a store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database, or the connection to it, failed.
    #[error("store: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The store does not keep what was asked of it (a store of one process has no other
    /// replica to signal; one without shared rate limits keeps none).
    #[error("store: {0}")]
    Unsupported(&'static str),
    /// A step did not complete, for the reason given.
    #[error("store: {0}")]
    Failed(String),
}

impl StoreError {
    /// The database, or the connection to it, failed with `error`.
    pub fn backend(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Backend(error.into())
    }

    /// A step did not complete, for `reason`.
    pub fn failed(reason: impl Into<String>) -> Self {
        Self::Failed(reason.into())
    }
}

/// The future a [`Store`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Keeps what must outlive a request (and the process that served it): task records, the
/// confirmation ledger, idempotency records, shared rate limits and protocol 2025 sessions;
/// and, for stores shared by replicas, fans resource updates and task and session events out
/// to them.
///
/// Every method is one atomic step, so replicas sharing a store can race on it: a token is
/// spent once, a key is claimed once. [`MemoryStore`] is the default one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Store`",
    label = "cannot keep the server's records",
    note = "implement `abilities::store::Store` for it, or use `MemoryStore`, `SqliteStore` (feature `sqlite`), `PostgresStore` (feature `postgres`) or `RedisStore` (feature `redis`)"
)]
pub trait Store: Send + Sync + 'static {
    /// Record a new task unless its owner, or the server, already runs as many tasks as
    /// `limits` allow. One step: callers racing for the last place (on any replica) get it
    /// once.
    fn insert_task(&self, record: TaskRecord, limits: TaskLimits) -> StoreFuture<'_, TaskInsert>;
    /// The task with this id, expired or not.
    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;
    /// Up to `limit` tasks of `owner` that have not expired at `now_ms`, in the order they
    /// were created (by `created_at_ms`, then id), after the task `after` names by
    /// `(created_at_ms, id)`: `tasks/list`. A store that cannot list says so with an error
    /// (never an empty page that is not true).
    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        now_ms: u64,
        after: Option<(u64, &'a str)>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        let _ = (owner, now_ms, after, limit);
        Box::pin(async { Err(StoreError::failed("this store does not list tasks")) })
    }
    /// Replace the task's record (all but `alive_at_ms`, which only
    /// [`touch_tasks`](Self::touch_tasks) moves on), unless it already ended: a finished
    /// task's record stays as it ended.
    fn update_task(&self, record: TaskRecord) -> StoreFuture<'_, ()>;
    /// Mark the tasks `ids` alive at `now_ms` (a store shared by replicas may use its own
    /// clock): this process still runs them.
    fn touch_tasks<'a>(&'a self, ids: &'a [String], now_ms: u64) -> StoreFuture<'a, ()>;
    /// Record `failed` in place of a task that still runs (`working` or `input_required`) and
    /// was last marked alive more than `lease_ms` before now (by the store's clock, when it
    /// has one); whether it did. One step: a task marked alive, or finished, meanwhile is
    /// left as it is.
    fn fail_abandoned<'a>(&'a self, failed: &'a TaskRecord, lease_ms: u64)
    -> StoreFuture<'a, bool>;
    /// Record an issued token, unless its holder already has `limit` live unspent ones
    /// (then `false`, and nothing is recorded).
    fn issue_token<'a>(&'a self, token: &'a TokenRecord, limit: u32) -> StoreFuture<'a, bool>;
    /// Spend the token `id` of `holder` on `operation` with `params` (as recorded), once.
    fn spend_token<'a>(&'a self, token: &'a TokenRecord) -> StoreFuture<'a, Spend>;
    /// Claim an idempotency key (a claim whose window ended counts as free).
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed>;
    /// Record the outcome of the call whose claim on `key` `owner` made (another owner's
    /// claim is left as it is).
    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()>;
    /// Give up the unsettled claim on `key` that `owner` made: its call did not run (it was
    /// refused before it started).
    fn release<'a>(&'a self, holder: &'a str, key: &'a str, owner: &'a str) -> StoreFuture<'a, ()>;
    /// Move the lease of the unsettled claim on `key` of `holder` that `owner` made on to
    /// `lease_until_ms`: its call still runs, or its outcome is still being recorded. A
    /// claim settled, released or made by another owner is left as it is.
    fn renew<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> StoreFuture<'a, ()>;
    /// Delete what expired before `now_ms` (tasks, tokens, idempotency records, sessions); how many
    /// records went.
    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64>;
    /// Take one call from the rate-limit budget `key`, which allows `calls` per `period_ms`
    /// (GCRA: bursts of up to `calls`, then one every `period_ms / calls`), at `now_ms` (a
    /// store shared by replicas may use its own clock). One step, so replicas racing for the
    /// last call of a budget get it once. The default refuses: a store that replicas share
    /// keeps their rate limits, or calls to rate-limited abilities fail.
    fn take_rate<'a>(
        &'a self,
        key: &'a str,
        calls: u32,
        period_ms: u64,
        now_ms: u64,
    ) -> StoreFuture<'a, RateTaken> {
        let _ = (key, calls, period_ms, now_ms);
        Box::pin(async { Err(StoreError::Unsupported("this store keeps no rate limits")) })
    }
    /// Tell the other replicas that `uri` changed. The default does nothing: a store of one
    /// process has no one else to tell.
    fn publish<'a>(&'a self, uri: &'a str) -> StoreFuture<'a, ()> {
        let _ = uri;
        Box::pin(async { Ok(()) })
    }
    /// Updates published by other replicas, if this store carries them.
    fn updates(&self) -> Option<Updates> {
        None
    }
    /// Record `signal` for the task `id` (run by another replica), kept until
    /// `expires_at_ms`, and tell the replicas. The default refuses: a store of one process
    /// has no other replica to reach.
    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let _ = (id, signal, expires_at_ms);
        Box::pin(async {
            Err(StoreError::Unsupported(
                "this store carries no signals between replicas",
            ))
        })
    }
    /// Take (and forget) the signals recorded for the tasks `ids`, oldest first. The
    /// default has none.
    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreFuture<'a, Vec<(String, TaskSignal)>> {
        let _ = ids;
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Tell the other replicas that the record of task `id` changed. The default does
    /// nothing: a store of one process has no one else to tell.
    fn publish_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let _ = id;
        Box::pin(async { Ok(()) })
    }
    /// Task events published by other replicas, if this store carries them.
    fn task_events(&self) -> Option<TaskEvents> {
        None
    }
    /// Record a session (protocol 2025), in place of any record it had. The default keeps
    /// nothing: a session is then served only by the replica that opened it.
    fn put_session<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        let _ = record;
        Box::pin(async { Ok(()) })
    }
    /// The session `id`, unless it expired before `now_ms` (a store shared by replicas may use
    /// its own clock). The default has none.
    fn session<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        let _ = (id, now_ms);
        Box::pin(async { Ok(None) })
    }
    /// Move the expiry of the sessions `ids` on to `expires_at_ms` (never back): this process
    /// still serves them. The ids among them the store no longer keeps (ended or expired).
    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        let _ = (ids, expires_at_ms);
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Replace the record of the session `record.id` if it is still kept and its state is
    /// `expected` (what was read), and tell the replicas it changed; whether it was replaced.
    /// One step: of two replicas changing a session at once, one wins and the other reads
    /// again. The default keeps none.
    fn update_session<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        let _ = (record, expected);
        Box::pin(async { Ok(false) })
    }
    /// Forget the session `id`, and tell the replicas it ended; whether it was kept. The
    /// default keeps none.
    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = id;
        Box::pin(async { Ok(false) })
    }
    /// Keep a client's `message` for the session `id` (its answer to a request a call on
    /// another replica sent) until `expires_at_ms`, and tell the replicas. The default
    /// refuses: a store of one process has no other replica to reach.
    fn forward_to_session<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let _ = (id, message, expires_at_ms);
        Box::pin(async {
            Err(StoreError::Unsupported(
                "this store carries no messages between replicas",
            ))
        })
    }
    /// Take (and forget) the messages forwarded to the session `id`, oldest first. The
    /// default has none.
    fn take_forwarded<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        let _ = id;
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Session events published by other replicas, if this store carries them.
    fn session_events(&self) -> Option<SessionEvents> {
        None
    }

    /// Add `message` to `stream` (what a session's client hears outside its requests, or the
    /// updates of a resource sessions follow), kept until `expires_at_ms` so a client that
    /// lost its stream resumes it on any replica, and tell the replicas
    /// ([`SessionEvent::Streamed`]); its position. Positions increase across every stream in
    /// the order messages are added: a reader that read up to one never misses a message
    /// added before it. The default: unsupported.
    fn append_to_stream<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        let _ = (stream, message, expires_at_ms);
        Box::pin(async {
            Err(StoreError::Unsupported(
                "this store keeps no streams for replicas",
            ))
        })
    }

    /// The messages of `streams` after position `after`, oldest first, at most `limit` of
    /// them, and the store's last position. The default: none.
    fn read_streams<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        let _ = (streams, after, limit);
        Box::pin(async { Ok(StreamRead::default()) })
    }
    /// Whether replicas in other processes may share this store: then the server leaves
    /// tasks it did not start alone, as another replica may run them.
    fn is_shared(&self) -> bool {
        false
    }
}
