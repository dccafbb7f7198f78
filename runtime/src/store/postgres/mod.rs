//! The shared store: PostgreSQL, through a connection pool, with resource updates fanned out
//! by `LISTEN`/`NOTIFY`.

mod claims;
mod connect;
mod sessions;
mod streams;

use deadpool_postgres::Pool;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_postgres::Row;
use tokio_util::sync::DropGuard;

use super::heard::{CHANNEL, TASKS_CHANNEL};
use super::{
    Claim, Claimed, RateTaken, SessionEvent, SessionEvents, SessionRecord, Spend, Store,
    StoreError, StoreFuture, StreamRead, TaskEvent, TaskEvents, TaskInsert, TaskLimits, TaskRecord,
    TaskSignal, TaskStatus, TokenRecord, Updates,
};

/// Serializes replicas creating the tables at once (an arbitrary, fixed lock id).
const MIGRATION_LOCK: i64 = 0x6162_696c_6974_6965;
/// Serializes replicas recording new tasks, so each counts the others' (another fixed id).
const TASKS_LOCK: i64 = 0x6162_696c_7461_736b;
/// Serializes appends to streams, so positions commit in order (another fixed id).
const STREAMS_LOCK: i64 = 0x6162_696c_7374_726d;

/// A [`Store`] in PostgreSQL that every replica connected to the same database shares: a
/// task started on one is polled on another, a token spent on one is spent on all, an
/// idempotency key claimed on one is claimed on all, and a resource update published on one
/// reaches the listeners of all (`LISTEN`/`NOTIFY`).
///
/// [`connect`](Self::connect) creates the tables when missing, so a new database needs no
/// set-up; replicas starting at once take turns. Unlike `SqliteStore`,
/// it leaves running tasks alone when it connects: another replica may be running them.
pub struct PostgresStore {
    pool: Pool,
    /// This process's mark on the updates it publishes, so it skips their echo.
    origin: String,
    updates: broadcast::Sender<String>,
    /// Task events from other replicas, for this process's tasks and listen streams.
    tasks: broadcast::Sender<TaskEvent>,
    /// Session events from other replicas, for the sessions this process serves.
    sessions: broadcast::Sender<SessionEvent>,
    /// Stops the listener when the store goes.
    _listening: DropGuard,
}

fn failed(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::backend(error)
}

/// A database error with the server's own message (tokio-postgres' `Display` says only
/// "db error").
fn db_failed(error: tokio_postgres::Error) -> StoreError {
    match error.as_db_error() {
        Some(db) => {
            StoreError::failed(format!("db error: {} ({})", db.message(), db.code().code()))
        }
        None => failed(error),
    }
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn ms(row: &Row, i: usize) -> u64 {
    u64::try_from(row.get::<_, i64>(i)).unwrap_or(0)
}

fn json(row: &Row, i: usize) -> Option<Value> {
    row.get::<_, Option<String>>(i)
        .and_then(|t| serde_json::from_str(&t).ok())
}

fn text(value: Option<&Value>) -> Option<String> {
    value.map(Value::to_string)
}

impl PostgresStore {
    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(failed)
    }

    /// Run `sql` with `params` and announce `news` on `channel` in one transaction (a
    /// `NOTIFY` goes out at commit): both happen, or neither. How many rows `sql` touched.
    async fn announced(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        channel: &str,
        news: &str,
    ) -> Result<u64, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(failed)?;
        let rows = tx.execute(sql, params).await.map_err(db_failed)?;
        let payload = format!("{} {news}", self.origin);
        tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(rows)
    }
}

fn record(row: &Row) -> TaskRecord {
    let status: String = row.get(2);
    TaskRecord {
        id: row.get(0),
        owner: row.get(1),
        // A status this version does not know reads as failed, never as running.
        status: TaskStatus::parse(&status).unwrap_or(TaskStatus::Failed),
        status_message: row.get(3),
        created_at_ms: ms(row, 4),
        updated_at_ms: ms(row, 5),
        ttl_ms: ms(row, 6),
        poll_interval_ms: ms(row, 7),
        input_requests: json(row, 8),
        result: json(row, 9),
        error: json(row, 10),
        alive_at_ms: ms(row, 11),
    }
}

impl Store for PostgresStore {
    fn insert_task(&self, r: TaskRecord, limits: TaskLimits) -> StoreFuture<'_, TaskInsert> {
        Box::pin(async move {
            // The counts and the insert of two replicas cannot interleave: task creation
            // takes one advisory lock (it is rare next to calls).
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(failed)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TASKS_LOCK])
                .await
                .map_err(failed)?;
            // Running: not finished, not expired, marked alive within the lease (by the
            // database's clock, as touch_tasks marks it).
            let running = |owner: Option<String>| {
                let tx = &tx;
                async move {
                    tx.query_one(
                        "SELECT COUNT(*) FROM abilities_tasks
                         WHERE status IN ('working', 'input_required') AND expires_at_ms >= $1
                           AND alive_at_ms >= (extract(epoch from clock_timestamp()) * 1000)::BIGINT - $2
                           AND ($3::TEXT IS NULL OR owner = $3)",
                        &[&int(r.created_at_ms), &int(limits.lease_ms), &owner],
                    )
                    .await
                    .map(|row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
                    .map_err(failed)
                }
            };
            let server = running(None).await?;
            if server >= u64::from(limits.per_server) {
                return Ok(TaskInsert::ServerFull { running: server });
            }
            if let Some(limit) = limits.per_owner {
                let owner = running(Some(r.owner.clone())).await?;
                if owner >= u64::from(limit) {
                    return Ok(TaskInsert::OwnerFull { running: owner });
                }
            }
            tx.execute(
                    "INSERT INTO abilities_tasks (id, owner, status, status_message,
                        created_at_ms, updated_at_ms, ttl_ms, poll_interval_ms, expires_at_ms,
                        input_requests, result, error, alive_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, (extract(epoch from clock_timestamp()) * 1000)::BIGINT)",
                    &[
                        &r.id,
                        &r.owner,
                        &r.status.as_str(),
                        &r.status_message,
                        &int(r.created_at_ms),
                        &int(r.updated_at_ms),
                        &int(r.ttl_ms),
                        &int(r.poll_interval_ms),
                        &int(r.expires_at_ms()),
                        &text(r.input_requests.as_ref()),
                        &text(r.result.as_ref()),
                        &text(r.error.as_ref()),
                    ],
                )
                .await
                .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            Ok(TaskInsert::Inserted)
        })
    }

    fn touch_tasks<'a>(&'a self, ids: &'a [String], _now_ms: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    // The database's clock, as fail_abandoned reads it: replicas' clocks may
                    // disagree.
                    "UPDATE abilities_tasks SET alive_at_ms = (extract(epoch from clock_timestamp()) * 1000)::BIGINT WHERE id = ANY($1)",
                    &[&ids],
                )
                .await
                .map(drop)
                .map_err(failed)
        })
    }

    fn fail_abandoned<'a>(&'a self, f: &'a TaskRecord, lease_ms: u64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let failed_now = self
                .client()
                .await?
                .execute(
                    "UPDATE abilities_tasks
                     SET status = $2, status_message = $3, updated_at_ms = $4,
                         input_requests = NULL, error = $5
                     WHERE id = $1 AND status IN ('working', 'input_required')
                       AND alive_at_ms < (extract(epoch from clock_timestamp()) * 1000)::BIGINT - $6",
                    &[
                        &f.id,
                        &f.status.as_str(),
                        &f.status_message,
                        &int(f.updated_at_ms),
                        &text(f.error.as_ref()),
                        &int(lease_ms),
                    ],
                )
                .await
                .map_err(failed)?;
            Ok(failed_now == 1)
        })
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let row = self
                .client()
                .await?
                .query_opt(
                    "SELECT id, owner, status, status_message, created_at_ms, updated_at_ms,
                        ttl_ms, poll_interval_ms, input_requests, result, error, alive_at_ms
                     FROM abilities_tasks WHERE id = $1",
                    &[&id],
                )
                .await
                .map_err(failed)?;
            Ok(row.as_ref().map(record))
        })
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        now_ms: u64,
        after: Option<(u64, &'a str)>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move {
            let (at, id) = after.map_or((-1, ""), |(at, id)| (int(at), id));
            let rows = self
                .client()
                .await?
                .query(
                    "SELECT id, owner, status, status_message, created_at_ms, updated_at_ms,
                        ttl_ms, poll_interval_ms, input_requests, result, error, alive_at_ms
                     FROM abilities_tasks
                     WHERE owner = $1 AND expires_at_ms >= $2
                        AND (created_at_ms, id) > ($3, $4)
                     ORDER BY created_at_ms, id LIMIT $5",
                    &[&owner, &int(now_ms), &at, &id, &int(limit as u64)],
                )
                .await
                .map_err(failed)?;
            Ok(rows.iter().map(record).collect())
        })
    }

    fn update_task(&self, r: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    "UPDATE abilities_tasks
                     SET status = $2, status_message = $3, updated_at_ms = $4,
                         input_requests = $5, result = $6, error = $7
                     WHERE id = $1 AND status NOT IN ('completed', 'failed', 'cancelled')",
                    &[
                        &r.id,
                        &r.status.as_str(),
                        &r.status_message,
                        &int(r.updated_at_ms),
                        &text(r.input_requests.as_ref()),
                        &text(r.result.as_ref()),
                        &text(r.error.as_ref()),
                    ],
                )
                .await
                .map(drop)
                .map_err(failed)
        })
    }

    fn issue_token<'a>(&'a self, t: &'a TokenRecord, limit: u32) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            // The count and the insert of two replicas for one holder cannot interleave: the
            // advisory lock on the holder serializes them.
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(failed)?;
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&t.holder])
                .await
                .map_err(failed)?;
            let inserted = tx
                .execute(
                    "INSERT INTO abilities_tokens
                        (id, holder, issued_at_ms, expires_at_ms, operation, params)
                     SELECT $1, $2, $3, $4, $6, $7
                     WHERE (SELECT COUNT(*) FROM abilities_tokens
                            WHERE holder = $2 AND NOT spent AND expires_at_ms >= $3) < $5",
                    &[
                        &t.id,
                        &t.holder,
                        &int(t.issued_at_ms),
                        &int(t.expires_at_ms),
                        &i64::from(limit),
                        &t.operation,
                        &t.params,
                    ],
                )
                .await
                .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            Ok(inserted == 1)
        })
    }

    fn spend_token<'a>(&'a self, t: &'a TokenRecord) -> StoreFuture<'a, Spend> {
        Box::pin(async move {
            let client = self.client().await?;
            let spent = client
                .execute(
                    "UPDATE abilities_tokens SET spent = TRUE
                     WHERE id = $1 AND holder = $2 AND operation = $3 AND params = $4
                       AND NOT spent",
                    &[&t.id, &t.holder, &t.operation, &t.params],
                )
                .await
                .map_err(failed)?;
            if spent == 1 {
                return Ok(Spend::Spent);
            }
            let found = client
                .query_opt(
                    "SELECT spent, operation FROM abilities_tokens WHERE id = $1 AND holder = $2",
                    &[&t.id, &t.holder],
                )
                .await
                .map_err(failed)?;
            Ok(Spend::refused(found.map(|row| {
                (row.get::<_, bool>(0), row.get::<_, String>(1))
            })))
        })
    }

    fn claim<'a>(&'a self, c: &'a Claim) -> StoreFuture<'a, Claimed> {
        self.claim_sql(c)
    }

    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()> {
        self.settle_sql(holder, key, owner, outcome)
    }

    fn renew<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> StoreFuture<'a, ()> {
        self.renew_sql(holder, key, owner, lease_until_ms)
    }

    fn release<'a>(&'a self, holder: &'a str, key: &'a str, owner: &'a str) -> StoreFuture<'a, ()> {
        self.release_sql(holder, key, owner)
    }

    fn take_rate<'a>(
        &'a self,
        key: &'a str,
        calls: u32,
        period_ms: u64,
        _now_ms: u64,
    ) -> StoreFuture<'a, RateTaken> {
        Box::pin(async move {
            let client = self.client().await?;
            let interval = int((period_ms / u64::from(calls.max(1))).max(1));
            let period = int(period_ms);
            // GCRA in one statement, by the database's clock (replicas' clocks may differ):
            // the budget's theoretical arrival time moves on by one interval unless that
            // would put it more than a period ahead. `EXCLUDED.expires_at_ms - $2` is now.
            let taken = client
                .query_opt(
                    "INSERT INTO abilities_rates (key, expires_at_ms)
                     VALUES ($1, (extract(epoch from clock_timestamp()) * 1000)::BIGINT + $2)
                     ON CONFLICT (key) DO UPDATE
                        SET expires_at_ms = GREATEST(abilities_rates.expires_at_ms, EXCLUDED.expires_at_ms - $2) + $2
                      WHERE GREATEST(abilities_rates.expires_at_ms, EXCLUDED.expires_at_ms - $2) + $2
                            - (EXCLUDED.expires_at_ms - $2) <= $3
                     RETURNING expires_at_ms",
                    &[&key, &interval, &period],
                )
                .await
                .map_err(db_failed)?;
            if taken.is_some() {
                return Ok(RateTaken::Allowed);
            }
            let wait = client
                .query_opt(
                    "SELECT GREATEST(expires_at_ms, now_ms) + $2 - now_ms - $3
                       FROM abilities_rates,
                            (SELECT (extract(epoch from clock_timestamp()) * 1000)::BIGINT AS now_ms) AS now
                      WHERE key = $1",
                    &[&key, &interval, &period],
                )
                .await
                .map_err(db_failed)?
                .map_or(1, |row| row.get::<_, i64>(0));
            Ok(RateTaken::Limited {
                retry_after_ms: u64::try_from(wait).unwrap_or(0).max(1),
            })
        })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let client = self.client().await?;
            let mut gone = 0;
            for table in [
                "abilities_tasks",
                "abilities_tokens",
                "abilities_idempotency",
                "abilities_task_signals",
                "abilities_sessions",
                "abilities_session_messages",
                "abilities_stream_events",
            ] {
                gone += client
                    .execute(
                        &format!("DELETE FROM {table} WHERE expires_at_ms < $1"),
                        &[&int(now_ms)],
                    )
                    .await
                    .map_err(failed)?;
            }
            // Rate budgets are stamped by the database's clock (`take_rate`): swept by it.
            gone += client
                .execute(
                    "DELETE FROM abilities_rates
                      WHERE expires_at_ms < (extract(epoch from clock_timestamp()) * 1000)::BIGINT",
                    &[],
                )
                .await
                .map_err(failed)?;
            Ok(gone)
        })
    }

    fn publish<'a>(&'a self, uri: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let payload = format!("{} {uri}", self.origin);
            self.client()
                .await?
                .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
                .await
                .map(drop)
                .map_err(failed)
        })
    }

    fn updates(&self) -> Option<Updates> {
        Some(self.updates.subscribe())
    }

    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.announced(
                "INSERT INTO abilities_task_signals (task_id, signal, expires_at_ms)
                 VALUES ($1, $2, $3)",
                &[&id, &signal.to_json().to_string(), &int(expires_at_ms)],
                TASKS_CHANNEL,
                &format!("signalled {id}"),
            )
            .await
            .map(drop)
        })
    }

    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreFuture<'a, Vec<(String, TaskSignal)>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(
                    "WITH taken AS (
                        DELETE FROM abilities_task_signals WHERE task_id = ANY($1)
                        RETURNING seq, task_id, signal)
                     SELECT task_id, signal FROM taken ORDER BY seq",
                    &[&ids],
                )
                .await
                .map_err(failed)?;
            Ok(rows
                .iter()
                .filter_map(|row| {
                    let signal: String = row.get(1);
                    let signal = serde_json::from_str::<Value>(&signal).ok()?;
                    Some((row.get(0), TaskSignal::from_json(&signal)?))
                })
                .collect())
        })
    }

    fn publish_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let payload = format!("{} changed {id}", self.origin);
            self.client()
                .await?
                .execute("SELECT pg_notify($1, $2)", &[&TASKS_CHANNEL, &payload])
                .await
                .map(drop)
                .map_err(failed)
        })
    }

    fn task_events(&self) -> Option<TaskEvents> {
        Some(self.tasks.subscribe())
    }

    fn put_session<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        self.put_session_sql(record)
    }

    fn session<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        self.session_sql(id, now_ms)
    }

    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        self.touch_sessions_sql(ids, expires_at_ms)
    }

    fn update_session<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        self.update_session_sql(record, expected)
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.delete_session_sql(id)
    }

    fn forward_to_session<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        self.forward_to_session_sql(id, message, expires_at_ms)
    }

    fn take_forwarded<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        self.take_forwarded_sql(id)
    }

    fn append_to_stream<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        self.append_to_stream_sql(stream, message, expires_at_ms)
    }

    fn read_streams<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        self.read_streams_sql(streams, after, limit)
    }

    fn session_events(&self) -> Option<SessionEvents> {
        Some(self.sessions.subscribe())
    }

    fn is_shared(&self) -> bool {
        true
    }
}
