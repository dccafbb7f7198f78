//! The PostgreSQL store's streams: what a session's client hears outside its requests, kept a
//! while so the client resumes it on any replica.

use serde_json::Value;

use super::{STREAMS_LOCK, db_failed, failed, int};
use crate::store::heard::SESSIONS_CHANNEL;
use crate::store::{StoreFuture, StreamEvent, StreamRead};

impl super::PostgresStore {
    pub(super) fn append_to_stream_sql<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(failed)?;
            // Appends take turns, so positions are committed in the order they are given:
            // a reader that read up to one never misses an earlier one committed later.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&STREAMS_LOCK])
                .await
                .map_err(failed)?;
            let row = tx
                .query_one(
                    "INSERT INTO abilities_stream_events (stream, message, expires_at_ms)
                     VALUES ($1, $2, $3) RETURNING seq",
                    &[&stream, &message.to_string(), &int(expires_at_ms)],
                )
                .await
                .map_err(db_failed)?;
            let payload = format!("{} streamed {stream}", self.origin);
            tx.execute("SELECT pg_notify($1, $2)", &[&SESSIONS_CHANNEL, &payload])
                .await
                .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    pub(super) fn read_streams_sql<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            // The last position first: an event committed between the two reads is read
            // (if it is one of these streams) and is past the position returned.
            let last = client
                .query_one(
                    "SELECT COALESCE(MAX(seq), 0) FROM abilities_stream_events",
                    &[],
                )
                .await
                .map_err(failed)?;
            let rows = client
                .query(
                    "SELECT seq, stream, message FROM abilities_stream_events
                     WHERE stream = ANY($1) AND seq > $2 ORDER BY seq LIMIT $3",
                    &[&streams, &int(after), &limit],
                )
                .await
                .map_err(db_failed)?;
            Ok(StreamRead {
                events: rows
                    .iter()
                    .filter_map(|row| {
                        Some(StreamEvent {
                            position: u64::try_from(row.get::<_, i64>(0)).ok()?,
                            stream: row.get(1),
                            message: serde_json::from_str(&row.get::<_, String>(2)).ok()?,
                        })
                    })
                    .collect(),
                last: u64::try_from(last.get::<_, i64>(0)).unwrap_or(0),
            })
        })
    }
}
