//! The SQLite store's share of protocol 2025 sessions: their records, and the client
//! answers forwarded between replicas.

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::int;
use crate::store::{SessionRecord, StoreFuture};

impl super::SqliteStore {
    pub(super) fn put_session_sql<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        let (id, state) = (record.id.clone(), record.state.to_string());
        let expires = int(record.expires_at_ms);
        self.run(move |db| {
            db.execute(
                "INSERT INTO abilities_sessions (id, state, expires_at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET state = excluded.state,
                     expires_at_ms = excluded.expires_at_ms",
                params![id, state, expires],
            )
            .map(drop)
        })
    }

    pub(super) fn session_sql<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        let id = id.to_owned();
        self.run(move |db| {
            let row = db
                .query_row(
                    "SELECT state, expires_at_ms FROM abilities_sessions
                     WHERE id = ?1 AND expires_at_ms >= ?2",
                    params![id, int(now_ms)],
                    |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
                )
                .optional()?;
            Ok(row.and_then(|(state, expires)| {
                Some(SessionRecord {
                    state: serde_json::from_str(&state).ok()?,
                    expires_at_ms: u64::try_from(expires).unwrap_or(0),
                    id,
                })
            }))
        })
    }

    pub(super) fn touch_sessions_sql<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        let ids = ids.to_vec();
        self.run(move |db| {
            let tx = db.transaction()?;
            let mut gone = Vec::new();
            for id in ids {
                let kept = tx.execute(
                    "UPDATE abilities_sessions SET expires_at_ms = MAX(expires_at_ms, ?2)
                     WHERE id = ?1",
                    params![id, int(expires_at_ms)],
                )?;
                if kept == 0 {
                    gone.push(id);
                }
            }
            tx.commit()?;
            Ok(gone)
        })
    }

    pub(super) fn update_session_sql<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        let (id, state, was) = (
            record.id.clone(),
            record.state.to_string(),
            expected.to_string(),
        );
        let expires = int(record.expires_at_ms);
        self.run(move |db| {
            db.execute(
                "UPDATE abilities_sessions SET state = ?2, expires_at_ms = ?3
                 WHERE id = ?1 AND state = ?4",
                params![id, state, expires, was],
            )
            .map(|n| n > 0)
        })
    }

    pub(super) fn forward_to_session_sql<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let (id, message) = (id.to_owned(), message.to_string());
        self.run(move |db| {
            db.execute(
                "INSERT INTO abilities_session_messages (session_id, message, expires_at_ms)
                 VALUES (?1, ?2, ?3)",
                params![id, message, int(expires_at_ms)],
            )
            .map(drop)
        })
    }

    pub(super) fn take_forwarded_sql<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        let id = id.to_owned();
        self.run(move |db| {
            let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let messages = {
                let mut read = tx.prepare(
                    "SELECT message FROM abilities_session_messages WHERE session_id = ?1
                     ORDER BY seq",
                )?;
                read.query_map([&id], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()?
            };
            tx.execute(
                "DELETE FROM abilities_session_messages WHERE session_id = ?1",
                [&id],
            )?;
            tx.commit()?;
            Ok(messages
                .iter()
                .filter_map(|m| serde_json::from_str(m).ok())
                .collect())
        })
    }

    pub(super) fn delete_session_sql<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        self.run(move |db| {
            db.execute("DELETE FROM abilities_sessions WHERE id = ?1", [id])
                .map(|n| n > 0)
        })
    }
}
