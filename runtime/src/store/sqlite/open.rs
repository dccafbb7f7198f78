//! Opening an SQLite store: the file (or memory) with its tables, brought up to date from
//! older versions, and the tasks an earlier process left running failed.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, params};

use super::{INTERRUPTED, SqliteStore, failed};
use crate::store::StoreError;

impl SqliteStore {
    /// The store in the SQLite file at `path` (created, with its table, if missing).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let db = Connection::open(path).map_err(failed)?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(failed)?;
        Self::with(db)
    }

    /// A store in memory, gone with the process (tests, or servers that need no restart
    /// safety).
    pub fn memory() -> Result<Self, StoreError> {
        Self::with(Connection::open_in_memory().map_err(failed)?)
    }

    fn with(db: Connection) -> Result<Self, StoreError> {
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(failed)?;
        db.execute_batch(crate::store::tables::SQLITE)
            .map_err(failed)?;
        // A store made before tasks were kept alive.
        let alive: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('abilities_tasks') WHERE name = 'alive_at_ms'",
                [],
                |r| r.get(0),
            )
            .map_err(failed)?;
        if alive == 0 {
            db.execute_batch(
                "ALTER TABLE abilities_tasks ADD COLUMN alive_at_ms INTEGER NOT NULL DEFAULT 0",
            )
            .map_err(failed)?;
        }
        // A store made before idempotency claims had an owner and a lease.
        let leased: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('abilities_idempotency') \
                 WHERE name = 'lease_until_ms'",
                [],
                |r| r.get(0),
            )
            .map_err(failed)?;
        if leased == 0 {
            // One transaction: both columns, or neither.
            db.execute_batch(
                "BEGIN;
                 ALTER TABLE abilities_idempotency ADD COLUMN owner TEXT NOT NULL DEFAULT '';
                 ALTER TABLE abilities_idempotency
                     ADD COLUMN lease_until_ms INTEGER NOT NULL DEFAULT 0;
                 COMMIT;",
            )
            .map_err(failed)?;
        }
        let error = serde_json::json!({"code": -32603, "message": INTERRUPTED}).to_string();
        let interrupted = db
            .execute(
                "UPDATE abilities_tasks
                 SET status = 'failed', status_message = ?1, error = ?2, input_requests = NULL,
                     updated_at_ms = ?3
                 WHERE status IN ('working', 'input_required')",
                params![
                    INTERRUPTED,
                    error,
                    i64::try_from(crate::clock::now_ms()).unwrap_or(i64::MAX)
                ],
            )
            .map_err(failed)?;
        if interrupted > 0 {
            tracing::warn!(
                interrupted,
                "tasks left running by an earlier process are failed"
            );
        }
        Ok(Self {
            db: Arc::new(Mutex::new(db)),
        })
    }
}
