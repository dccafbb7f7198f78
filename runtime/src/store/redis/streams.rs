//! The Redis store's streams: what a session's client hears outside its requests, a sorted
//! set per stream scored by position, kept a while so the client resumes it on any replica.

use serde_json::Value;

use super::{PREFIX, RedisStore, failed};
use crate::store::heard::SESSIONS_CHANNEL;
use crate::store::{StoreFuture, StreamEvent, StreamRead};

fn stream_key(stream: &str) -> String {
    format!("{PREFIX}stream:{stream}")
}

impl RedisStore {
    pub(super) fn append_to_stream_script<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            self.scripts
                .append_to_stream
                .key(stream_key(stream))
                .arg(PREFIX)
                .arg(expires_at_ms)
                .arg(SESSIONS_CHANNEL)
                .arg(format!("{} streamed {stream}", self.origin))
                .arg(message.to_string())
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)
        })
    }

    pub(super) fn read_streams_script<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        Box::pin(async move {
            let mut invocation = self.scripts.read_streams.prepare_invoke();
            for stream in streams {
                invocation.key(stream_key(stream));
            }
            let flat: Vec<redis::Value> = invocation
                .arg(PREFIX)
                .arg(after)
                .arg(limit)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            let Some((last, rest)) = flat.split_first() else {
                return Ok(StreamRead::default());
            };
            let mut events: Vec<StreamEvent> = rest
                .chunks_exact(2)
                .filter_map(|pair| {
                    let index: usize = redis::from_redis_value_ref(&pair[0]).ok()?;
                    let item: String = redis::from_redis_value_ref(&pair[1]).ok()?;
                    let (position, message) = item.split_once(' ')?;
                    Some(StreamEvent {
                        position: position.parse().ok()?,
                        stream: streams.get(index.checked_sub(1)?)?.clone(),
                        message: serde_json::from_str(message).ok()?,
                    })
                })
                .collect();
            events.sort_by_key(|e| e.position);
            events.truncate(limit);
            Ok(StreamRead {
                events,
                last: redis::from_redis_value_ref(last).unwrap_or(0),
            })
        })
    }
}
