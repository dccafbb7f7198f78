//! The PostgreSQL store's share of protocol 2025 sessions: their records, and the
//! client answers forwarded between replicas.

use serde_json::Value;

use super::{db_failed, int, json, ms};
use crate::store::heard::SESSIONS_CHANNEL;
use crate::store::{SessionRecord, StoreFuture};

impl super::PostgresStore {
    pub(super) fn put_session_sql<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    "INSERT INTO abilities_sessions (id, state, expires_at_ms) VALUES ($1, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET state = excluded.state,
                         expires_at_ms = excluded.expires_at_ms",
                    &[
                        &record.id,
                        &record.state.to_string(),
                        &int(record.expires_at_ms),
                    ],
                )
                .await
                .map(drop)
                .map_err(db_failed)
        })
    }

    pub(super) fn session_sql<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let row = self
                .client()
                .await?
                .query_opt(
                    "SELECT state, expires_at_ms FROM abilities_sessions
                     WHERE id = $1 AND expires_at_ms >= $2",
                    &[&id, &int(now_ms)],
                )
                .await
                .map_err(db_failed)?;
            Ok(row.and_then(|row| {
                Some(SessionRecord {
                    id: id.to_owned(),
                    state: json(&row, 0)?,
                    expires_at_ms: ms(&row, 1),
                })
            }))
        })
    }

    pub(super) fn touch_sessions_sql<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(
                    "UPDATE abilities_sessions SET expires_at_ms = GREATEST(expires_at_ms, $2)
                     WHERE id = ANY($1) RETURNING id",
                    &[&ids, &int(expires_at_ms)],
                )
                .await
                .map_err(db_failed)?;
            let kept: std::collections::HashSet<String> =
                rows.iter().map(|row| row.get(0)).collect();
            Ok(ids
                .iter()
                .filter(|id| !kept.contains(*id))
                .cloned()
                .collect())
        })
    }

    pub(super) fn update_session_sql<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let replaced = self
                .announced(
                    "UPDATE abilities_sessions SET state = $2, expires_at_ms = $3
                     WHERE id = $1 AND state = $4",
                    &[
                        &record.id,
                        &record.state.to_string(),
                        &int(record.expires_at_ms),
                        &expected.to_string(),
                    ],
                    SESSIONS_CHANNEL,
                    &format!("changed {}", record.id),
                )
                .await?;
            Ok(replaced > 0)
        })
    }

    pub(super) fn delete_session_sql<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let gone = self
                .announced(
                    "DELETE FROM abilities_sessions WHERE id = $1",
                    &[&id],
                    SESSIONS_CHANNEL,
                    &format!("ended {id}"),
                )
                .await?;
            Ok(gone > 0)
        })
    }

    pub(super) fn forward_to_session_sql<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.announced(
                "INSERT INTO abilities_session_messages (session_id, message, expires_at_ms)
                 VALUES ($1, $2, $3)",
                &[&id, &message.to_string(), &int(expires_at_ms)],
                SESSIONS_CHANNEL,
                &format!("forwarded {id}"),
            )
            .await
            .map(drop)
        })
    }

    pub(super) fn take_forwarded_sql<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(
                    "WITH taken AS (
                        DELETE FROM abilities_session_messages WHERE session_id = $1
                        RETURNING seq, message)
                     SELECT message FROM taken ORDER BY seq",
                    &[&id],
                )
                .await
                .map_err(db_failed)?;
            Ok(rows.iter().filter_map(|row| json(row, 0)).collect())
        })
    }
}
