//! The shared store on Redis (7 or later) or Valkey: records as hashes under one key prefix,
//! each change that reads before it writes as one Lua script, and what replicas tell each
//! other over pub/sub.

mod listener;
mod listing;
mod records;
mod scripts;
mod streams;

use std::collections::HashMap;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use self::scripts::Scripts;
use super::heard::{CHANNEL, Heard, SESSIONS_CHANNEL, TASKS_CHANNEL};
use super::{
    Claim, Claimed, RateTaken, SessionEvents, SessionRecord, Spend, Store, StoreError, StoreFuture,
    StreamRead, TaskEvents, TaskInsert, TaskLimits, TaskRecord, TaskSignal, TokenRecord, Updates,
};

/// The prefix of every key the store writes.
const PREFIX: &str = "abilities:";

/// A [`Store`] in Redis (7 or later) or Valkey that every replica connected to the same
/// server shares, as [`PostgresStore`](super::PostgresStore) is: a task started on one is
/// polled on another, a token spent on one is spent on all, an idempotency key claimed on one
/// is claimed on all, a session opened on one is served by all, and what one publishes
/// reaches the others over pub/sub.
///
/// Every key starts with `abilities:`; a change that reads before it writes runs as one Lua
/// script, and times that replicas compare (a task's liveness, rate budgets) are Redis's
/// clock. One server or a primary with replicas; not Redis Cluster (a script touches keys of
/// several slots). Records are swept as in the other stores, and each key also expires a day
/// after its record, so nothing outlives a deployment that stopped sweeping. The server
/// should run with `maxmemory-policy noeviction` (an evicted record is a token spent again or
/// a call run twice; `connect` warns otherwise) and with `appendonly yes` where records must
/// outlive its restart.
pub struct RedisStore {
    connection: ConnectionManager,
    scripts: Scripts,
    /// This process's mark on what it publishes, so it skips the echo.
    origin: String,
    heard: Heard,
    /// Stops the listener when the store goes.
    _listening: DropGuard,
}

fn failed(error: redis::RedisError) -> StoreError {
    StoreError::backend(error)
}

/// An optional value as the scripts take it: `+value`, or `-` for none.
fn opt(value: Option<&str>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("+{v}"))
}

fn opt_json(value: Option<&Value>) -> String {
    opt(value.map(Value::to_string).as_deref())
}

/// The key of a record named by two strings (a holder and its key): the first one's length
/// keeps any pair apart from any other.
fn pair_key(kind: &str, first: &str, second: &str) -> String {
    format!("{PREFIX}{kind}:{}:{first}:{second}", first.len())
}

fn session_key(id: &str) -> String {
    format!("{PREFIX}session:{id}")
}

impl RedisStore {
    /// Connect to the server at `url` (`redis://[user:password@]host:port[/db]`), check that it
    /// answers, and start listening for what the other replicas publish. The connection is
    /// one multiplexed connection that reconnects by itself when it breaks.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(failed)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(2));
        let mut connection = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(failed)?;
        let _: String = redis::cmd("PING")
            .query_async(&mut connection)
            .await
            .map_err(failed)?;
        warn_if_evicting(&mut connection).await;
        let origin = super::heard::origin().map_err(StoreError::backend)?;
        let heard = Heard::new();
        let stop = CancellationToken::new();
        tokio::spawn(listener::listen(
            client,
            origin.clone(),
            heard.clone(),
            stop.clone(),
        ));
        Ok(Self {
            connection,
            scripts: Scripts::new(),
            origin,
            heard,
            _listening: stop.drop_guard(),
        })
    }

    /// A handle on the shared connection (cheap: it is multiplexed).
    fn conn(&self) -> ConnectionManager {
        self.connection.clone()
    }

    async fn publish_on(&self, channel: &str, news: &str) -> Result<(), StoreError> {
        let payload = format!("{} {news}", self.origin);
        let _: i64 = redis::cmd("PUBLISH")
            .arg(channel)
            .arg(payload)
            .query_async(&mut self.conn())
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// Queue `message` under `key` (a task's signals, a session's forwarded answers) and
    /// announce `news` on `channel`, in one step.
    async fn queue(
        &self,
        key: String,
        message: &str,
        expires_at_ms: u64,
        channel: &str,
        news: &str,
    ) -> Result<(), StoreError> {
        let _: i64 = self
            .scripts
            .queue
            .key(key)
            .arg(PREFIX)
            .arg(expires_at_ms)
            .arg(channel)
            .arg(format!("{} {news}", self.origin))
            .arg(message)
            .invoke_async(&mut self.conn())
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// Take what is queued under `keys`, in the order it was queued: (the key's index,
    /// the message).
    async fn take_queued(&self, keys: &[String]) -> Result<Vec<(usize, String)>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut invocation = self.scripts.take_queued.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        let flat: Vec<redis::Value> = invocation
            .arg(PREFIX)
            .invoke_async(&mut self.conn())
            .await
            .map_err(failed)?;
        let mut taken: Vec<(u64, usize, String)> = flat
            .chunks_exact(2)
            .filter_map(|pair| {
                let index: usize = redis::from_redis_value_ref(&pair[0]).ok()?;
                let item: String = redis::from_redis_value_ref(&pair[1]).ok()?;
                let (seq, message) = item.split_once(' ')?;
                Some((seq.parse().ok()?, index.checked_sub(1)?, message.to_owned()))
            })
            .collect();
        taken.sort_by_key(|(seq, ..)| *seq);
        Ok(taken
            .into_iter()
            .map(|(_, index, message)| (index, message))
            .collect())
    }
}

/// Warn when the server may evict keys to free memory: an evicted record is a token spent
/// again, a call run twice, a task gone. A server that hides its configuration (`CONFIG` is
/// off on many managed ones) is taken as configured.
async fn warn_if_evicting(connection: &mut ConnectionManager) {
    let policy: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(connection)
        .await;
    if let Ok(policy) = policy
        && let Some(policy) = policy.get(1)
        && policy != "noeviction"
    {
        tracing::warn!(
            policy,
            "the Redis store's server may evict records under memory pressure \
             (maxmemory-policy {policy}): set it to noeviction"
        );
    }
}

impl Store for RedisStore {
    fn insert_task(&self, r: TaskRecord, limits: TaskLimits) -> StoreFuture<'_, TaskInsert> {
        self.insert_task_script(r, limits)
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let fields: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(format!("{PREFIX}task:{id}"))
                .query_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(records::task(id, &fields))
        })
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        now_ms: u64,
        after: Option<(u64, &'a str)>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(listing::tasks_of(self, owner, now_ms, after, limit))
    }

    fn update_task(&self, r: TaskRecord) -> StoreFuture<'_, ()> {
        self.update_task_script(r)
    }

    fn touch_tasks<'a>(&'a self, ids: &'a [String], _now_ms: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self
                .scripts
                .touch_tasks
                .arg(PREFIX)
                .arg(ids)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(())
        })
    }

    fn fail_abandoned<'a>(&'a self, f: &'a TaskRecord, lease_ms: u64) -> StoreFuture<'a, bool> {
        self.fail_abandoned_script(f, lease_ms)
    }

    fn issue_token<'a>(&'a self, t: &'a TokenRecord, limit: u32) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let issued: i64 = self
                .scripts
                .issue_token
                .arg(PREFIX)
                .arg(&t.id)
                .arg(&t.holder)
                .arg(t.issued_at_ms)
                .arg(t.expires_at_ms)
                .arg(limit)
                .arg(&t.operation)
                .arg(&t.params)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(issued == 1)
        })
    }

    fn spend_token<'a>(&'a self, t: &'a TokenRecord) -> StoreFuture<'a, Spend> {
        Box::pin(async move {
            let answer: (i64, Option<String>) = self
                .scripts
                .spend_token
                .arg(PREFIX)
                .arg(&t.id)
                .arg(&t.holder)
                .arg(&t.operation)
                .arg(&t.params)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(match answer {
                (3, _) => Spend::Spent,
                (1, _) => Spend::AlreadyUsed,
                (2, operation) => Spend::OtherScope {
                    operation: operation.unwrap_or_default(),
                },
                _ => Spend::Unknown,
            })
        })
    }

    fn claim<'a>(&'a self, c: &'a Claim) -> StoreFuture<'a, Claimed> {
        self.claim_script(c)
    }

    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self
                .scripts
                .settle
                .key(pair_key("idempotency", holder, key))
                .arg(PREFIX)
                .arg(owner)
                .arg(outcome.to_string())
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(())
        })
    }

    fn release<'a>(&'a self, holder: &'a str, key: &'a str, owner: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self
                .scripts
                .release
                .key(pair_key("idempotency", holder, key))
                .arg(PREFIX)
                .arg(owner)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(())
        })
    }

    fn renew<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self
                .scripts
                .renew
                .key(pair_key("idempotency", holder, key))
                .arg(PREFIX)
                .arg(owner)
                .arg(lease_until_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(())
        })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            self.scripts
                .sweep
                .arg(PREFIX)
                .arg(now_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)
        })
    }

    fn take_rate<'a>(
        &'a self,
        key: &'a str,
        calls: u32,
        period_ms: u64,
        _now_ms: u64,
    ) -> StoreFuture<'a, RateTaken> {
        Box::pin(async move {
            let interval = (period_ms / u64::from(calls.max(1))).max(1);
            let (allowed, wait): (i64, Option<i64>) = self
                .scripts
                .take_rate
                .key(format!("{PREFIX}rate:{key}"))
                .arg(PREFIX)
                .arg(interval)
                .arg(period_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(if allowed == 1 {
                RateTaken::Allowed
            } else {
                RateTaken::Limited {
                    retry_after_ms: u64::try_from(wait.unwrap_or(1)).unwrap_or(0).max(1),
                }
            })
        })
    }

    fn publish<'a>(&'a self, uri: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // This process's own subscribers were told directly; the echo is skipped.
            self.publish_on(CHANNEL, uri).await
        })
    }

    fn updates(&self) -> Option<Updates> {
        Some(self.heard.updates.subscribe())
    }

    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.queue(
                format!("{PREFIX}signals:{id}"),
                &signal.to_json().to_string(),
                expires_at_ms,
                TASKS_CHANNEL,
                &format!("signalled {id}"),
            )
            .await
        })
    }

    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreFuture<'a, Vec<(String, TaskSignal)>> {
        Box::pin(async move {
            let keys: Vec<String> = ids
                .iter()
                .map(|id| format!("{PREFIX}signals:{id}"))
                .collect();
            Ok(self
                .take_queued(&keys)
                .await?
                .into_iter()
                .filter_map(|(index, message)| {
                    let signal = serde_json::from_str::<Value>(&message).ok()?;
                    Some((ids.get(index)?.clone(), TaskSignal::from_json(&signal)?))
                })
                .collect())
        })
    }

    fn publish_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.publish_on(TASKS_CHANNEL, &format!("changed {id}"))
                .await
        })
    }

    fn task_events(&self) -> Option<TaskEvents> {
        Some(self.heard.tasks.subscribe())
    }

    fn put_session<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self
                .scripts
                .put_session
                .key(session_key(&record.id))
                .arg(PREFIX)
                .arg(record.state.to_string())
                .arg(record.expires_at_ms)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(())
        })
    }

    fn session<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let (state, expires): (Option<String>, Option<u64>) = redis::cmd("HMGET")
                .arg(session_key(id))
                .arg("state")
                .arg("expires")
                .query_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(match (state, expires) {
                (Some(state), Some(expires_at_ms)) if expires_at_ms >= now_ms => {
                    serde_json::from_str(&state)
                        .ok()
                        .map(|state| SessionRecord {
                            id: id.to_owned(),
                            state,
                            expires_at_ms,
                        })
                }
                _ => None,
            })
        })
    }

    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            self.scripts
                .touch_sessions
                .arg(PREFIX)
                .arg(expires_at_ms)
                .arg(ids)
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)
        })
    }

    fn update_session<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let changed: i64 = self
                .scripts
                .update_session
                .key(session_key(&record.id))
                .arg(PREFIX)
                .arg(record.state.to_string())
                .arg(record.expires_at_ms)
                .arg(expected.to_string())
                .arg(SESSIONS_CHANNEL)
                .arg(format!("{} changed {}", self.origin, record.id))
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(changed == 1)
        })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let gone: i64 = self
                .scripts
                .delete_session
                .key(session_key(id))
                .arg(PREFIX)
                .arg(SESSIONS_CHANNEL)
                .arg(format!("{} ended {id}", self.origin))
                .invoke_async(&mut self.conn())
                .await
                .map_err(failed)?;
            Ok(gone == 1)
        })
    }

    fn forward_to_session<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.queue(
                format!("{PREFIX}forwarded:{id}"),
                &message.to_string(),
                expires_at_ms,
                SESSIONS_CHANNEL,
                &format!("forwarded {id}"),
            )
            .await
        })
    }

    fn take_forwarded<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        Box::pin(async move {
            Ok(self
                .take_queued(&[format!("{PREFIX}forwarded:{id}")])
                .await?
                .into_iter()
                .filter_map(|(_, message)| serde_json::from_str(&message).ok())
                .collect())
        })
    }

    fn session_events(&self) -> Option<SessionEvents> {
        Some(self.heard.sessions.subscribe())
    }

    fn append_to_stream<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        self.append_to_stream_script(stream, message, expires_at_ms)
    }

    fn read_streams<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        self.read_streams_script(streams, after, limit)
    }

    fn is_shared(&self) -> bool {
        true
    }
}
