//! The SQLite store's streams: what a session's client hears outside its requests, kept a
//! while so the client resumes it.

use rusqlite::params;
use serde_json::Value;

use super::int;
use crate::store::{StoreFuture, StreamEvent, StreamRead};

impl super::SqliteStore {
    pub(super) fn append_to_stream_sql<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        let (stream, message) = (stream.to_owned(), message.to_string());
        self.run(move |db| {
            db.execute(
                "INSERT INTO abilities_stream_events (stream, message, expires_at_ms)
                 VALUES (?1, ?2, ?3)",
                params![stream, message, int(expires_at_ms)],
            )?;
            Ok(u64::try_from(db.last_insert_rowid()).unwrap_or(0))
        })
    }

    pub(super) fn read_streams_sql<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        let streams = serde_json::to_string(streams).unwrap_or_else(|_| "[]".to_owned());
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run(move |db| {
            let tx = db.transaction()?;
            let events = {
                let mut read = tx.prepare(
                    "SELECT seq, stream, message FROM abilities_stream_events
                     WHERE stream IN (SELECT value FROM json_each(?1)) AND seq > ?2
                     ORDER BY seq LIMIT ?3",
                )?;
                read.query_map(params![streams, int(after), limit], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?
            };
            let last: i64 = tx.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM abilities_stream_events",
                [],
                |r| r.get(0),
            )?;
            tx.commit()?;
            Ok(StreamRead {
                events: events
                    .into_iter()
                    .filter_map(|(seq, stream, message)| {
                        Some(StreamEvent {
                            position: u64::try_from(seq).ok()?,
                            stream,
                            message: serde_json::from_str(&message).ok()?,
                        })
                    })
                    .collect(),
                last: u64::try_from(last).unwrap_or(0),
            })
        })
    }
}
