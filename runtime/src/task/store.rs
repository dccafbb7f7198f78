//! Where background tasks are recorded: the [`TaskStore`] trait and its record.

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

/// Why a store failed.
#[derive(Debug, thiserror::Error)]
#[error("task store: {0}")]
pub struct StoreError(pub String);

/// The future a [`TaskStore`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Keeps task records beyond the request, and the process, that created them. The server
/// reads and writes through it at every change, so a task's state is the store's.
///
/// [`SqliteTaskStore`](crate::SqliteTaskStore) is the embedded one.
pub trait TaskStore: Send + Sync + 'static {
    /// Record a new task.
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()>;
    /// The task with this id, expired or not.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;
    /// Replace the task's record.
    fn update(&self, record: TaskRecord) -> StoreFuture<'_, ()>;
    /// Delete the tasks that expired before `now_ms`; how many went.
    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64>;
}
