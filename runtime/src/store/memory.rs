//! The default store: tasks, confirmation tokens, idempotency records and rate budgets in this
//! process's memory, behind one lock.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::{
    Claim, Claimed, RateTaken, SessionRecord, Spend, Store, StoreError, StoreFuture, StreamEvent,
    StreamRead, TaskInsert, TaskLimits, TaskRecord, TaskSignal, TokenRecord,
};

/// The default [`Store`]: everything in this process's memory, gone with it. Pure Rust,
/// nothing to open; each step holds one lock, so counts and inserts never interleave.
///
/// A server that must keep its tasks and spent tokens across a restart takes an
/// `SqliteStore` file (feature `sqlite`); replicas share a `PostgresStore` (feature
/// `postgres`).
///
/// ```
/// use abilities::store::MemoryStore;
///
/// let server = abilities::Server::builder().store(MemoryStore::new()).build().unwrap();
/// # drop(server);
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    tables: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    tasks: HashMap<String, TaskRecord>,
    /// The ids of the tasks still running (`working`, `input_required`), so counting them for
    /// a new task reads only those, however many finished tasks are kept.
    running: HashSet<String>,
    tokens: HashMap<String, Token>,
    /// By holder, then key.
    idempotency: HashMap<(String, String), Entry>,
    /// A budget's theoretical arrival time, which is also when it can go.
    rates: HashMap<String, u64>,
    /// By task, in the order they were sent.
    signals: BTreeMap<String, Vec<(TaskSignal, u64)>>,
    sessions: HashMap<String, SessionRecord>,
    /// Messages forwarded to sessions, by session, in the order they came.
    forwarded: BTreeMap<String, Vec<(Value, u64)>>,
    /// Streams' messages in the order they came, with their expiry.
    streamed: Vec<(StreamEvent, u64)>,
    /// The last position given to a stream's message.
    position: u64,
}

#[derive(Debug)]
struct Token {
    record: TokenRecord,
    spent: bool,
}

#[derive(Debug)]
struct Entry {
    digest: String,
    started_at_ms: u64,
    expires_at_ms: u64,
    owner: String,
    lease_until_ms: u64,
    outcome: Option<Value>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Run `f` on the tables, as one step.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Tables) -> Result<T, StoreError>,
    ) -> StoreFuture<'static, T> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let answer = f(&mut tables);
        Box::pin(std::future::ready(answer))
    }
}

fn running(record: &TaskRecord) -> bool {
    !record.status.is_terminal()
}

impl Store for MemoryStore {
    fn insert_task(&self, r: TaskRecord, limits: TaskLimits) -> StoreFuture<'_, TaskInsert> {
        self.with(move |t| {
            if t.tasks.contains_key(&r.id) {
                return Err(StoreError::failed(format!("task {} already exists", r.id)));
            }
            let since = r.created_at_ms.saturating_sub(limits.lease_ms);
            let count = |owner: Option<&str>| {
                t.running
                    .iter()
                    .filter_map(|id| t.tasks.get(id))
                    .filter(|task| {
                        running(task)
                            && task.expires_at_ms() >= r.created_at_ms
                            && task.alive_at_ms >= since
                            && owner.is_none_or(|owner| task.owner == owner)
                    })
                    .count() as u64
            };
            let server = count(None);
            if server >= u64::from(limits.per_server) {
                return Ok(TaskInsert::ServerFull { running: server });
            }
            if let Some(limit) = limits.per_owner {
                let owner = count(Some(&r.owner));
                if owner >= u64::from(limit) {
                    return Ok(TaskInsert::OwnerFull { running: owner });
                }
            }
            if running(&r) {
                t.running.insert(r.id.clone());
            }
            t.tasks.insert(r.id.clone(), r);
            Ok(TaskInsert::Inserted)
        })
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let id = id.to_owned();
        self.with(move |t| Ok(t.tasks.get(&id).cloned()))
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        now_ms: u64,
        after: Option<(u64, &'a str)>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TaskRecord>> {
        let owner = owner.to_owned();
        let after = after.map(|(at, id)| (at, id.to_owned()));
        self.with(move |t| {
            let mut mine: Vec<&TaskRecord> = t
                .tasks
                .values()
                .filter(|task| task.owner == owner && task.expires_at_ms() >= now_ms)
                .filter(|task| {
                    after.as_ref().is_none_or(|(at, id)| {
                        (task.created_at_ms, task.id.as_str()) > (*at, id.as_str())
                    })
                })
                .collect();
            mine.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
            Ok(mine.into_iter().take(limit).cloned().collect())
        })
    }

    fn update_task(&self, r: TaskRecord) -> StoreFuture<'_, ()> {
        self.with(move |t| {
            if let Some(task) = t.tasks.get_mut(&r.id).filter(|task| running(task)) {
                task.status = r.status;
                task.status_message = r.status_message;
                task.updated_at_ms = r.updated_at_ms;
                task.input_requests = r.input_requests;
                task.result = r.result;
                task.error = r.error;
                if !running(task) {
                    t.running.remove(&r.id);
                }
            }
            Ok(())
        })
    }

    fn touch_tasks<'a>(&'a self, ids: &'a [String], now_ms: u64) -> StoreFuture<'a, ()> {
        let ids = ids.to_vec();
        self.with(move |t| {
            for id in &ids {
                if let Some(task) = t.tasks.get_mut(id) {
                    task.alive_at_ms = now_ms;
                }
            }
            Ok(())
        })
    }

    fn fail_abandoned<'a>(&'a self, f: &'a TaskRecord, lease_ms: u64) -> StoreFuture<'a, bool> {
        let f = f.clone();
        self.with(move |t| {
            let cutoff = crate::clock::now_ms().saturating_sub(lease_ms);
            let Some(task) = t
                .tasks
                .get_mut(&f.id)
                .filter(|task| running(task) && task.alive_at_ms < cutoff)
            else {
                return Ok(false);
            };
            task.status = f.status;
            task.status_message = f.status_message;
            task.updated_at_ms = f.updated_at_ms;
            task.input_requests = None;
            task.error = f.error;
            if !running(task) {
                t.running.remove(&f.id);
            }
            Ok(true)
        })
    }

    fn issue_token<'a>(&'a self, token: &'a TokenRecord, limit: u32) -> StoreFuture<'a, bool> {
        let token = token.clone();
        self.with(move |t| {
            let live = t
                .tokens
                .values()
                .filter(|held| {
                    held.record.holder == token.holder
                        && !held.spent
                        && held.record.expires_at_ms >= token.issued_at_ms
                })
                .count();
            if live >= limit as usize {
                return Ok(false);
            }
            if t.tokens.contains_key(&token.id) {
                return Err(StoreError::failed(format!(
                    "token {} already exists",
                    token.id
                )));
            }
            t.tokens.insert(
                token.id.clone(),
                Token {
                    record: token,
                    spent: false,
                },
            );
            Ok(true)
        })
    }

    fn spend_token<'a>(&'a self, token: &'a TokenRecord) -> StoreFuture<'a, Spend> {
        let token = token.clone();
        self.with(move |t| {
            let held = t
                .tokens
                .get_mut(&token.id)
                .filter(|held| held.record.holder == token.holder);
            match held {
                Some(held)
                    if !held.spent
                        && held.record.operation == token.operation
                        && held.record.params == token.params =>
                {
                    held.spent = true;
                    Ok(Spend::Spent)
                }
                held => Ok(Spend::refused(
                    held.map(|held| (held.spent, held.record.operation.clone())),
                )),
            }
        })
    }

    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        let c = claim.clone();
        self.with(move |t| {
            let slot = (c.holder.clone(), c.key.clone());
            match t.idempotency.get(&slot) {
                Some(entry) if entry.expires_at_ms >= c.now_ms => Ok(Claimed::existing(
                    &c,
                    &entry.digest,
                    entry.started_at_ms,
                    entry.lease_until_ms,
                    entry.outcome.clone(),
                )),
                _ => {
                    t.idempotency.insert(
                        slot,
                        Entry {
                            digest: c.digest,
                            started_at_ms: c.now_ms,
                            expires_at_ms: c.expires_at_ms,
                            owner: c.owner,
                            lease_until_ms: c.lease_until_ms,
                            outcome: None,
                        },
                    );
                    Ok(Claimed::New)
                }
            }
        })
    }

    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()> {
        let (slot, owner, outcome) = (
            (holder.to_owned(), key.to_owned()),
            owner.to_owned(),
            outcome.clone(),
        );
        self.with(move |t| {
            if let Some(entry) = t.idempotency.get_mut(&slot)
                && entry.owner == owner
            {
                entry.outcome = Some(outcome);
            }
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
        let (slot, owner) = ((holder.to_owned(), key.to_owned()), owner.to_owned());
        self.with(move |t| {
            if let Some(entry) = t.idempotency.get_mut(&slot)
                && entry.outcome.is_none()
                && entry.owner == owner
            {
                entry.lease_until_ms = entry.lease_until_ms.max(lease_until_ms);
            }
            Ok(())
        })
    }

    fn release<'a>(&'a self, holder: &'a str, key: &'a str, owner: &'a str) -> StoreFuture<'a, ()> {
        let (slot, owner) = ((holder.to_owned(), key.to_owned()), owner.to_owned());
        self.with(move |t| {
            if t.idempotency
                .get(&slot)
                .is_some_and(|entry| entry.outcome.is_none() && entry.owner == owner)
            {
                t.idempotency.remove(&slot);
            }
            Ok(())
        })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64> {
        self.with(move |t| {
            let before = t.tasks.len()
                + t.tokens.len()
                + t.idempotency.len()
                + t.rates.len()
                + t.signals.values().map(Vec::len).sum::<usize>()
                + t.sessions.len();
            t.tasks.retain(|_, task| task.expires_at_ms() >= now_ms);
            let tasks = &t.tasks;
            t.running.retain(|id| tasks.contains_key(id));
            t.tokens
                .retain(|_, token| token.record.expires_at_ms >= now_ms);
            t.idempotency
                .retain(|_, entry| entry.expires_at_ms >= now_ms);
            t.rates.retain(|_, tat| *tat >= now_ms);
            for signals in t.signals.values_mut() {
                signals.retain(|(_, expires_at_ms)| *expires_at_ms >= now_ms);
            }
            t.signals.retain(|_, signals| !signals.is_empty());
            t.sessions
                .retain(|_, session| session.expires_at_ms >= now_ms);
            for messages in t.forwarded.values_mut() {
                messages.retain(|(_, expires_at_ms)| *expires_at_ms >= now_ms);
            }
            t.forwarded.retain(|_, messages| !messages.is_empty());
            let streamed = t.streamed.len();
            t.streamed
                .retain(|(_, expires_at_ms)| *expires_at_ms >= now_ms);
            let streamed = streamed - t.streamed.len();
            let after = t.tasks.len()
                + t.tokens.len()
                + t.idempotency.len()
                + t.rates.len()
                + t.signals.values().map(Vec::len).sum::<usize>()
                + t.sessions.len();
            Ok((before - after + streamed) as u64)
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
        self.with(move |t| {
            let tat = t.rates.get(&key).copied().unwrap_or(0);
            Ok(match abilities_core::gcra(tat, calls, period_ms, now_ms) {
                Ok(next) => {
                    t.rates.insert(key, next);
                    RateTaken::Allowed
                }
                Err(retry_after_ms) => RateTaken::Limited { retry_after_ms },
            })
        })
    }

    fn put_session<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        let record = record.clone();
        self.with(move |t| {
            t.sessions.insert(record.id.clone(), record);
            Ok(())
        })
    }

    fn session<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        self.with(move |t| {
            Ok(t.sessions
                .get(id)
                .filter(|s| s.expires_at_ms >= now_ms)
                .cloned())
        })
    }

    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        self.with(move |t| {
            let mut gone = Vec::new();
            for id in ids {
                match t.sessions.get_mut(id) {
                    Some(session) => {
                        session.expires_at_ms = session.expires_at_ms.max(expires_at_ms);
                    }
                    None => gone.push(id.clone()),
                }
            }
            Ok(gone)
        })
    }

    fn update_session<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        self.with(move |t| {
            let Some(session) = t.sessions.get_mut(&record.id) else {
                return Ok(false);
            };
            if session.state != *expected {
                return Ok(false);
            }
            *session = record.clone();
            Ok(true)
        })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.with(move |t| Ok(t.sessions.remove(id).is_some()))
    }

    fn forward_to_session<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        self.with(move |t| {
            t.forwarded
                .entry(id.to_owned())
                .or_default()
                .push((message.clone(), expires_at_ms));
            Ok(())
        })
    }

    fn take_forwarded<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        self.with(move |t| {
            let messages = t.forwarded.remove(id).unwrap_or_default();
            Ok(messages.into_iter().map(|(message, _)| message).collect())
        })
    }

    fn append_to_stream<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        self.with(move |t| {
            t.position += 1;
            let event = StreamEvent {
                position: t.position,
                stream: stream.to_owned(),
                message: message.clone(),
            };
            t.streamed.push((event, expires_at_ms));
            Ok(t.position)
        })
    }

    fn read_streams<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        self.with(move |t| {
            let events = t
                .streamed
                .iter()
                .map(|(event, _)| event)
                .filter(|e| e.position > after && streams.contains(&e.stream))
                .take(limit)
                .cloned()
                .collect();
            Ok(StreamRead {
                events,
                last: t.position,
            })
        })
    }

    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let (id, signal) = (id.to_owned(), signal.clone());
        self.with(move |t| {
            t.signals
                .entry(id)
                .or_default()
                .push((signal, expires_at_ms));
            Ok(())
        })
    }

    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreFuture<'a, Vec<(String, TaskSignal)>> {
        let ids = ids.to_vec();
        self.with(move |t| {
            let mut taken = Vec::new();
            for id in ids {
                if let Some(signals) = t.signals.remove(&id) {
                    taken.extend(signals.into_iter().map(|(signal, _)| (id.clone(), signal)));
                }
            }
            Ok(taken)
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
    use crate::store::TaskStatus;

    fn block<T>(future: StoreFuture<'_, T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(future)
            .expect("the store answers")
    }

    #[test]
    fn records_round_trip_and_expired_ones_are_swept() {
        let store = MemoryStore::new();
        let record = |id: &str, created_at_ms| TaskRecord {
            id: id.to_owned(),
            owner: "ada".to_owned(),
            status: TaskStatus::Completed,
            status_message: None,
            created_at_ms,
            updated_at_ms: created_at_ms,
            ttl_ms: 1000,
            poll_interval_ms: 100,
            alive_at_ms: created_at_ms,
            input_requests: None,
            result: None,
            error: None,
        };
        let done = record("done", 10_000);
        block(store.insert_task(done.clone(), TaskLimits::NONE));
        block(store.insert_task(record("old", 1_000), TaskLimits::NONE));
        // `old` expired at 2 000, `done` lives until 11 000.
        assert_eq!(block(store.sweep(5_000)), 1);
        assert_eq!(block(store.task("old")), None);
        assert_eq!(block(store.task("done")), Some(done));
    }
}
