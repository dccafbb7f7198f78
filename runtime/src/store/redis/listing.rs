//! `Store::tasks_of` on Redis: an owner's tasks from its sorted set of ids by creation time
//! (`<prefix>owner:<owner>`, written by the insert script), each record read in turn.

use std::collections::HashMap;

use super::{PREFIX, RedisStore, failed, records};
use crate::store::{StoreError, TaskRecord};

/// Up to `limit` unexpired tasks of `owner` after the position `after`, in creation order.
pub(super) async fn tasks_of(
    store: &RedisStore,
    owner: &str,
    now_ms: u64,
    after: Option<(u64, &str)>,
    limit: usize,
) -> Result<Vec<TaskRecord>, StoreError> {
    // The owner's ids by creation time (members of one score sort by id, as the
    // order wants), from the position on; records gone since are skipped.
    let key = format!("{PREFIX}owner:{owner}");
    let from = after.map_or(0, |(at, _)| at);
    let ids: Vec<(String, u64)> = redis::cmd("ZRANGEBYSCORE")
        .arg(&key)
        .arg(from)
        .arg("+inf")
        .arg("WITHSCORES")
        .query_async(&mut store.conn())
        .await
        .map_err(failed)?;
    let mut found = Vec::new();
    for (id, at) in ids {
        if found.len() >= limit {
            break;
        }
        if after.is_some_and(|(a, i)| (at, id.as_str()) <= (a, i)) {
            continue;
        }
        let fields: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(format!("{PREFIX}task:{id}"))
            .query_async(&mut store.conn())
            .await
            .map_err(failed)?;
        match records::task(&id, &fields) {
            Some(record) if record.owner == owner && record.expires_at_ms() >= now_ms => {
                found.push(record);
            }
            Some(record) if record.owner == owner => {}
            // Swept (or another's): no longer the owner's.
            _ => {
                let _: i64 = redis::cmd("ZREM")
                    .arg(&key)
                    .arg(&id)
                    .query_async(&mut store.conn())
                    .await
                    .map_err(failed)?;
            }
        }
    }
    Ok(found)
}
