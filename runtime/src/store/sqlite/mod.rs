//! The embedded store: SQLite tables for tasks, confirmation tokens and idempotency records.

mod open;
mod sessions;
mod streams;

use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::tables::existing;
use super::{
    Claim, Claimed, RateTaken, SessionRecord, Spend, Store, StoreError, StoreFuture, StreamRead,
    TaskInsert, TaskLimits, TaskRecord, TaskSignal, TaskStatus, TokenRecord,
};

/// The embedded [`Store`]: SQLite, in a file (so finished tasks and spent tokens outlive the
/// process) or in memory. One process uses it; replicas share a `PostgresStore`.
///
/// Opening a file marks the tasks it holds as running (`working`, `input_required`) as
/// `failed`: the process that ran them is gone, and a task is never left to read as running
/// when nothing runs it.
///
/// ```
/// use abilities::store::SqliteStore;
///
/// let store = SqliteStore::memory().unwrap();
/// let server = abilities::Server::builder().store(store).build().unwrap();
/// # drop(server);
/// ```
pub struct SqliteStore {
    db: Arc<Mutex<Connection>>,
}

/// The message of a task its process did not live to finish.
pub(crate) const INTERRUPTED: &str = "the server stopped while this task was running";

fn failed(e: rusqlite::Error) -> StoreError {
    StoreError::backend(e)
}

impl SqliteStore {
    /// Run `f` on the connection, off the async runtime's threads (SQLite blocks).
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let db = Arc::clone(&self.db);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut db = db.lock().unwrap_or_else(PoisonError::into_inner);
                f(&mut db).map_err(failed)
            })
            .await
            .map_err(|e| StoreError::failed(format!("the store's thread failed: {e}")))?
        })
    }
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn text(value: Option<&Value>) -> Option<String> {
    value.map(Value::to_string)
}

fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRecord> {
    let json = |i: usize| -> rusqlite::Result<Option<Value>> {
        let text: Option<String> = row.get(i)?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    };
    let status: String = row.get(2)?;
    let ms = |i: usize| -> rusqlite::Result<u64> {
        row.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0))
    };
    Ok(TaskRecord {
        id: row.get(0)?,
        owner: row.get(1)?,
        // A status this version does not know reads as failed, never as running.
        status: TaskStatus::parse(&status).unwrap_or(TaskStatus::Failed),
        status_message: row.get(3)?,
        created_at_ms: ms(4)?,
        updated_at_ms: ms(5)?,
        ttl_ms: ms(6)?,
        poll_interval_ms: ms(7)?,
        input_requests: json(8)?,
        result: json(9)?,
        error: json(10)?,
        alive_at_ms: ms(11)?,
    })
}

impl Store for SqliteStore {
    fn insert_task(&self, r: TaskRecord, limits: TaskLimits) -> StoreFuture<'_, TaskInsert> {
        self.run(move |db| {
            // Immediate: the count and the insert of processes sharing the file cannot
            // interleave.
            let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let since = int(r.created_at_ms.saturating_sub(limits.lease_ms));
            let running = |owner: Option<&str>| -> rusqlite::Result<u64> {
                let count: i64 = tx.query_row(
                    "SELECT COUNT(*) FROM abilities_tasks
                     WHERE status IN ('working', 'input_required') AND expires_at_ms >= ?1
                       AND alive_at_ms >= ?2 AND (?3 IS NULL OR owner = ?3)",
                    params![int(r.created_at_ms), since, owner],
                    |row| row.get(0),
                )?;
                Ok(u64::try_from(count).unwrap_or(0))
            };
            let server = running(None)?;
            if server >= u64::from(limits.per_server) {
                return Ok(TaskInsert::ServerFull { running: server });
            }
            if let Some(limit) = limits.per_owner {
                let owner = running(Some(&r.owner))?;
                if owner >= u64::from(limit) {
                    return Ok(TaskInsert::OwnerFull { running: owner });
                }
            }
            tx.execute(
                "INSERT INTO abilities_tasks (id, owner, status, status_message, created_at_ms,
                    updated_at_ms, ttl_ms, poll_interval_ms, expires_at_ms, input_requests, result,
                    error, alive_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    r.id,
                    r.owner,
                    r.status.as_str(),
                    r.status_message,
                    int(r.created_at_ms),
                    int(r.updated_at_ms),
                    int(r.ttl_ms),
                    int(r.poll_interval_ms),
                    int(r.expires_at_ms()),
                    text(r.input_requests.as_ref()),
                    text(r.result.as_ref()),
                    text(r.error.as_ref()),
                    int(r.alive_at_ms),
                ],
            )?;
            tx.commit().map(|()| TaskInsert::Inserted)
        })
    }

    fn touch_tasks<'a>(&'a self, ids: &'a [String], now_ms: u64) -> StoreFuture<'a, ()> {
        let ids = ids.to_vec();
        self.run(move |db| {
            let tx = db.transaction()?;
            for id in &ids {
                tx.execute(
                    "UPDATE abilities_tasks SET alive_at_ms = ?2 WHERE id = ?1",
                    params![id, int(now_ms)],
                )?;
            }
            tx.commit()
        })
    }

    fn fail_abandoned<'a>(&'a self, f: &'a TaskRecord, lease_ms: u64) -> StoreFuture<'a, bool> {
        let f = f.clone();
        self.run(move |db| {
            let cutoff = crate::clock::now_ms().saturating_sub(lease_ms);
            db.execute(
                "UPDATE abilities_tasks
                 SET status = ?2, status_message = ?3, updated_at_ms = ?4, input_requests = NULL,
                     error = ?5
                 WHERE id = ?1 AND status IN ('working', 'input_required') AND alive_at_ms < ?6",
                params![
                    f.id,
                    f.status.as_str(),
                    f.status_message,
                    int(f.updated_at_ms),
                    text(f.error.as_ref()),
                    int(cutoff),
                ],
            )
            .map(|n| n == 1)
        })
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let id = id.to_owned();
        self.run(move |db| {
            db.query_row(
                "SELECT id, owner, status, status_message, created_at_ms, updated_at_ms, ttl_ms,
                    poll_interval_ms, input_requests, result, error, alive_at_ms
                 FROM abilities_tasks WHERE id = ?1",
                [id],
                record,
            )
            .optional()
        })
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        now_ms: u64,
        after: Option<(u64, &'a str)>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        let owner = owner.to_owned();
        let (at, id) = after.map_or((-1, String::new()), |(at, id)| (int(at), id.to_owned()));
        let limit = int(limit as u64);
        self.run(move |db| {
            let mut statement = db.prepare_cached(
                "SELECT id, owner, status, status_message, created_at_ms, updated_at_ms, ttl_ms,
                    poll_interval_ms, input_requests, result, error, alive_at_ms
                 FROM abilities_tasks
                 WHERE owner = ?1 AND expires_at_ms >= ?2
                    AND (created_at_ms > ?3 OR (created_at_ms = ?3 AND id > ?4))
                 ORDER BY created_at_ms, id LIMIT ?5",
            )?;
            let rows = statement
                .query_map(rusqlite::params![owner, int(now_ms), at, id, limit], record)?;
            rows.collect()
        })
    }

    fn update_task(&self, r: TaskRecord) -> StoreFuture<'_, ()> {
        self.run(move |db| {
            db.execute(
                "UPDATE abilities_tasks
                 SET status = ?2, status_message = ?3, updated_at_ms = ?4, input_requests = ?5,
                     result = ?6, error = ?7
                 WHERE id = ?1 AND status NOT IN ('completed', 'failed', 'cancelled')",
                params![
                    r.id,
                    r.status.as_str(),
                    r.status_message,
                    int(r.updated_at_ms),
                    text(r.input_requests.as_ref()),
                    text(r.result.as_ref()),
                    text(r.error.as_ref()),
                ],
            )
            .map(drop)
        })
    }

    fn issue_token<'a>(&'a self, token: &'a TokenRecord, limit: u32) -> StoreFuture<'a, bool> {
        let t = token.clone();
        self.run(move |db| {
            let tx = db.transaction()?;
            let live: i64 = tx.query_row(
                "SELECT COUNT(*) FROM abilities_tokens
                 WHERE holder = ?1 AND spent = 0 AND expires_at_ms >= ?2",
                params![t.holder, int(t.issued_at_ms)],
                |row| row.get(0),
            )?;
            if live >= i64::from(limit) {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO abilities_tokens
                    (id, holder, operation, params, issued_at_ms, expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    t.id,
                    t.holder,
                    t.operation,
                    t.params,
                    int(t.issued_at_ms),
                    int(t.expires_at_ms)
                ],
            )?;
            tx.commit().map(|()| true)
        })
    }

    fn spend_token<'a>(&'a self, token: &'a TokenRecord) -> StoreFuture<'a, Spend> {
        let t = token.clone();
        self.run(move |db| {
            let spent = db.execute(
                "UPDATE abilities_tokens SET spent = 1
                 WHERE id = ?1 AND holder = ?2 AND operation = ?3 AND params = ?4 AND spent = 0",
                params![t.id, t.holder, t.operation, t.params],
            )?;
            if spent == 1 {
                return Ok(Spend::Spent);
            }
            let found: Option<(bool, String)> = db
                .query_row(
                    "SELECT spent, operation FROM abilities_tokens WHERE id = ?1 AND holder = ?2",
                    params![t.id, t.holder],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            Ok(Spend::refused(found))
        })
    }

    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        let c = claim.clone();
        self.run(move |db| {
            let tx = db.transaction()?;
            tx.execute(
                "DELETE FROM abilities_idempotency
                 WHERE holder = ?1 AND key = ?2 AND expires_at_ms < ?3",
                params![c.holder, c.key, int(c.now_ms)],
            )?;
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO abilities_idempotency
                    (holder, key, digest, started_at_ms, expires_at_ms, owner, lease_until_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    c.holder,
                    c.key,
                    c.digest,
                    int(c.now_ms),
                    int(c.expires_at_ms),
                    c.owner,
                    int(c.lease_until_ms)
                ],
            )?;
            let claimed = if inserted == 1 {
                Claimed::New
            } else {
                let (digest, started, lease, outcome): (String, i64, i64, Option<String>) = tx
                    .query_row(
                        "SELECT digest, started_at_ms, lease_until_ms, outcome
                         FROM abilities_idempotency WHERE holder = ?1 AND key = ?2",
                        params![c.holder, c.key],
                        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
                    )?;
                existing(&c, &digest, started, lease, outcome.as_deref())
            };
            tx.commit().map(|()| claimed)
        })
    }

    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()> {
        let (holder, key, owner, outcome) = (
            holder.to_owned(),
            key.to_owned(),
            owner.to_owned(),
            outcome.to_string(),
        );
        self.run(move |db| {
            db.execute(
                "UPDATE abilities_idempotency SET outcome = ?4
                 WHERE holder = ?1 AND key = ?2 AND owner = ?3",
                params![holder, key, owner, outcome],
            )
            .map(drop)
        })
    }

    fn renew<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let (holder, key, owner) = (holder.to_owned(), key.to_owned(), owner.to_owned());
        self.run(move |db| {
            db.execute(
                "UPDATE abilities_idempotency SET lease_until_ms = MAX(lease_until_ms, ?4)
                 WHERE holder = ?1 AND key = ?2 AND owner = ?3 AND outcome IS NULL",
                params![holder, key, owner, int(lease_until_ms)],
            )
            .map(drop)
        })
    }

    fn release<'a>(&'a self, holder: &'a str, key: &'a str, owner: &'a str) -> StoreFuture<'a, ()> {
        let (holder, key, owner) = (holder.to_owned(), key.to_owned(), owner.to_owned());
        self.run(move |db| {
            db.execute(
                "DELETE FROM abilities_idempotency
                 WHERE holder = ?1 AND key = ?2 AND owner = ?3 AND outcome IS NULL",
                params![holder, key, owner],
            )
            .map(drop)
        })
    }

    fn take_rate<'a>(
        &'a self,
        key: &'a str,
        calls: u32,
        period_ms: u64,
        now_ms: u64,
    ) -> StoreFuture<'a, RateTaken> {
        let key = key.to_owned();
        self.run(move |db| {
            let tx = db.transaction()?;
            // The budget's theoretical arrival time (its `expires_at_ms`: once it has passed,
            // the whole burst is free again and the row can go).
            let tat: Option<i64> = tx
                .query_row(
                    "SELECT expires_at_ms FROM abilities_rates WHERE key = ?1",
                    [&key],
                    |row| row.get(0),
                )
                .optional()?;
            let tat = tat.map_or(0, |t| u64::try_from(t).unwrap_or(0));
            let taken = match abilities_core::gcra(tat, calls, period_ms, now_ms) {
                Ok(next) => {
                    tx.execute(
                        "INSERT INTO abilities_rates (key, expires_at_ms) VALUES (?1, ?2)
                         ON CONFLICT (key) DO UPDATE SET expires_at_ms = excluded.expires_at_ms",
                        params![key, int(next)],
                    )?;
                    RateTaken::Allowed
                }
                Err(retry_after_ms) => RateTaken::Limited { retry_after_ms },
            };
            tx.commit().map(|()| taken)
        })
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

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.delete_session_sql(id)
    }

    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let (id, signal) = (id.to_owned(), signal.to_json().to_string());
        self.run(move |db| {
            db.execute(
                "INSERT INTO abilities_task_signals (task_id, signal, expires_at_ms)
                 VALUES (?1, ?2, ?3)",
                params![id, signal, int(expires_at_ms)],
            )
            .map(drop)
        })
    }

    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreFuture<'a, Vec<(String, TaskSignal)>> {
        let ids = ids.to_vec();
        self.run(move |db| {
            let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut taken = Vec::new();
            for id in &ids {
                let mut select = tx.prepare(
                    "SELECT signal FROM abilities_task_signals WHERE task_id = ?1 ORDER BY seq",
                )?;
                let signals = select
                    .query_map([id], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                drop(select);
                for signal in signals {
                    let parsed = serde_json::from_str::<Value>(&signal)
                        .ok()
                        .and_then(|v| TaskSignal::from_json(&v));
                    if let Some(signal) = parsed {
                        taken.push((id.clone(), signal));
                    }
                }
                tx.execute(
                    "DELETE FROM abilities_task_signals WHERE task_id = ?1",
                    [id],
                )?;
            }
            tx.commit()?;
            Ok(taken)
        })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64> {
        self.run(move |db| {
            let mut gone = 0;
            for table in [
                "abilities_tasks",
                "abilities_tokens",
                "abilities_idempotency",
                "abilities_rates",
                "abilities_task_signals",
                "abilities_sessions",
                "abilities_session_messages",
                "abilities_stream_events",
            ] {
                gone += db.execute(
                    &format!("DELETE FROM {table} WHERE expires_at_ms < ?1"),
                    [int(now_ms)],
                )? as u64;
            }
            Ok(gone)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::expect_used,
        reason = "a broken fixture should fail the test loudly"
    )]

    use super::*;

    fn record(id: &str, status: TaskStatus, created_at_ms: u64) -> TaskRecord {
        TaskRecord {
            id: id.to_owned(),
            owner: "ada".to_owned(),
            status,
            status_message: None,
            created_at_ms,
            updated_at_ms: created_at_ms,
            ttl_ms: 1000,
            poll_interval_ms: 100,
            alive_at_ms: created_at_ms,
            input_requests: None,
            result: None,
            error: None,
        }
    }

    fn block<T>(future: StoreFuture<'_, T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(future)
            .expect("the store answers")
    }

    #[test]
    fn records_round_trip_and_expired_ones_are_swept() {
        let store = SqliteStore::memory().expect("a store");
        let mut done = record("done", TaskStatus::Completed, 10_000);
        done.result = Some(serde_json::json!({"content": [], "isError": false}));
        block(store.insert_task(done.clone(), TaskLimits::NONE));
        block(store.insert_task(
            record("old", TaskStatus::Completed, 1_000),
            TaskLimits::NONE,
        ));
        assert_eq!(block(store.task("done")), Some(done.clone()));
        // `old` expired at 2 000, `done` lives until 11 000.
        assert_eq!(block(store.sweep(5_000)), 1);
        assert_eq!(block(store.task("old")), None);
        assert_eq!(block(store.task("done")), Some(done));
    }

    #[test]
    fn opening_a_file_fails_the_tasks_it_left_running() {
        let dir = std::env::temp_dir().join(format!("abilities-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let path = dir.join("tasks.db");
        let now = crate::clock::now_ms();
        {
            let store = SqliteStore::open(&path).expect("a store");
            block(store.insert_task(
                record("running", TaskStatus::Working, now),
                TaskLimits::NONE,
            ));
            let mut asking = record("asking", TaskStatus::InputRequired, now);
            asking.input_requests =
                Some(serde_json::json!({"go": {"method": "elicitation/create"}}));
            block(store.insert_task(asking, TaskLimits::NONE));
            block(store.insert_task(record("done", TaskStatus::Completed, now), TaskLimits::NONE));
        }
        let store = SqliteStore::open(&path).expect("reopened");
        for id in ["running", "asking"] {
            let found = block(store.task(id)).expect("still there");
            assert_eq!(found.status, TaskStatus::Failed, "{id}");
            assert_eq!(found.status_message.as_deref(), Some(INTERRUPTED));
            assert_eq!(found.input_requests, None);
            assert_eq!(
                found.error,
                Some(serde_json::json!({"code": -32603, "message": INTERRUPTED}))
            );
        }
        let done = block(store.task("done")).expect("still there");
        assert_eq!(done.status, TaskStatus::Completed);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
