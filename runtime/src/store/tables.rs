//! The tables the SQL stores keep, created when missing (each statement can run again), and
//! how their rows read.

use super::{Claim, Claimed};

#[cfg(feature = "sqlite")]
/// SQLite's: tasks, tokens, idempotency records, rate budgets, task signals, sessions and
/// streams.
pub(super) const SQLITE: &str = "CREATE TABLE IF NOT EXISTS abilities_tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    alive_at_ms INTEGER NOT NULL DEFAULT 0,
    ttl_ms INTEGER NOT NULL,
    poll_interval_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    input_requests TEXT,
    result TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS abilities_tasks_expiry ON abilities_tasks (expires_at_ms);
CREATE INDEX IF NOT EXISTS abilities_tasks_owner ON abilities_tasks (owner, created_at_ms, id);
CREATE TABLE IF NOT EXISTS abilities_tokens (
    id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    operation TEXT NOT NULL,
    params TEXT NOT NULL,
    issued_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    spent INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS abilities_tokens_holder ON abilities_tokens (holder, expires_at_ms);
CREATE TABLE IF NOT EXISTS abilities_idempotency (
    holder TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    outcome TEXT,
    owner TEXT NOT NULL DEFAULT '',
    lease_until_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (holder, key)
);
CREATE TABLE IF NOT EXISTS abilities_rates (
    key TEXT PRIMARY KEY,
    expires_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS abilities_task_signals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    signal TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_task_signals_task ON abilities_task_signals (task_id);
CREATE INDEX IF NOT EXISTS abilities_tasks_running ON abilities_tasks (owner)
    WHERE status IN ('working', 'input_required');
CREATE TABLE IF NOT EXISTS abilities_sessions (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS abilities_session_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    message TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_session_messages_session
    ON abilities_session_messages (session_id);
CREATE TABLE IF NOT EXISTS abilities_stream_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    stream TEXT NOT NULL,
    message TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_stream_events_stream ON abilities_stream_events (stream, seq);";

/// PostgreSQL's: the same tables, indexes and columns added since.
#[cfg(feature = "postgres")]
pub(super) const POSTGRES: &str = "
CREATE TABLE IF NOT EXISTS abilities_tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    ttl_ms BIGINT NOT NULL,
    poll_interval_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    input_requests TEXT,
    result TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS abilities_tasks_expiry ON abilities_tasks (expires_at_ms);
CREATE INDEX IF NOT EXISTS abilities_tasks_owner ON abilities_tasks (owner, created_at_ms, id);
ALTER TABLE abilities_tasks ADD COLUMN IF NOT EXISTS alive_at_ms BIGINT NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS abilities_tasks_running ON abilities_tasks (owner)
    WHERE status IN ('working', 'input_required');
CREATE TABLE IF NOT EXISTS abilities_tokens (
    id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    operation TEXT NOT NULL,
    params TEXT NOT NULL,
    issued_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    spent BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS abilities_tokens_holder ON abilities_tokens (holder, expires_at_ms);
CREATE TABLE IF NOT EXISTS abilities_idempotency (
    holder TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    started_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    outcome TEXT,
    PRIMARY KEY (holder, key)
);
CREATE INDEX IF NOT EXISTS abilities_idempotency_expiry ON abilities_idempotency (expires_at_ms);
ALTER TABLE abilities_idempotency ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT '';
ALTER TABLE abilities_idempotency ADD COLUMN IF NOT EXISTS lease_until_ms BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS abilities_rates (
    key TEXT PRIMARY KEY,
    expires_at_ms BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS abilities_task_signals (
    seq BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL,
    signal TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_task_signals_task ON abilities_task_signals (task_id);
CREATE TABLE IF NOT EXISTS abilities_sessions (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_sessions_expiry ON abilities_sessions (expires_at_ms);
CREATE TABLE IF NOT EXISTS abilities_session_messages (
    seq BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    message TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_session_messages_session
    ON abilities_session_messages (session_id);
CREATE TABLE IF NOT EXISTS abilities_stream_events (
    seq BIGSERIAL PRIMARY KEY,
    stream TEXT NOT NULL,
    message TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS abilities_stream_events_stream ON abilities_stream_events (stream, seq);
CREATE INDEX IF NOT EXISTS abilities_stream_events_expiry ON abilities_stream_events (expires_at_ms);
";

/// What an idempotency claim found in a row already there (its digest, start and outcome as
/// the tables hold them).
pub(super) fn existing(
    claim: &Claim,
    digest: &str,
    started: i64,
    lease_until: i64,
    outcome: Option<&str>,
) -> Claimed {
    Claimed::existing(
        claim,
        digest,
        u64::try_from(started).unwrap_or(0),
        u64::try_from(lease_until).unwrap_or(0),
        outcome.and_then(|o| serde_json::from_str(o).ok()),
    )
}
