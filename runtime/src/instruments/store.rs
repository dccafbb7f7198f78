//! A store whose every operation is timed for the metrics
//! (`abilities_store_operation_duration_seconds`) and traced as a child span of the request
//! it serves (`store <operation>`).

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::Instruments;
use crate::store::{
    Claim, Claimed, RateTaken, SessionEvents, SessionRecord, Spend, Store, StoreError, StoreFuture,
    StreamRead, TaskEvents, TaskInsert, TaskLimits, TaskRecord, TaskSignal, TokenRecord, Updates,
};

/// `inner`, every operation timed and traced with `instruments`.
pub(crate) struct Measured {
    inner: Arc<dyn Store>,
    instruments: Instruments,
}

impl Measured {
    /// `store` as it is when nothing watches it, else measured.
    pub(crate) fn around(store: Arc<dyn Store>, instruments: &Instruments) -> Arc<dyn Store> {
        if !instruments.watch_store() {
            return store;
        }
        Arc::new(Self {
            inner: store,
            instruments: instruments.clone(),
        })
    }

    /// `work`, its time recorded as the operation `name`'s, in a span of its own below the
    /// request's.
    fn timed<'a, T: 'a>(
        &'a self,
        name: &'static str,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'a,
    ) -> StoreFuture<'a, T> {
        Box::pin(self.instruments.store_operation(name, work))
    }
}

impl Store for Measured {
    fn insert_task(&self, record: TaskRecord, limits: TaskLimits) -> StoreFuture<'_, TaskInsert> {
        self.timed("insert_task", self.inner.insert_task(record, limits))
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.timed("task", self.inner.task(id))
    }

    fn update_task(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        self.timed("update_task", self.inner.update_task(record))
    }

    fn touch_tasks<'a>(&'a self, ids: &'a [String], now_ms: u64) -> StoreFuture<'a, ()> {
        self.timed("touch_tasks", self.inner.touch_tasks(ids, now_ms))
    }

    fn fail_abandoned<'a>(
        &'a self,
        failed: &'a TaskRecord,
        lease_ms: u64,
    ) -> StoreFuture<'a, bool> {
        self.timed(
            "fail_abandoned",
            self.inner.fail_abandoned(failed, lease_ms),
        )
    }

    fn issue_token<'a>(&'a self, token: &'a TokenRecord, limit: u32) -> StoreFuture<'a, bool> {
        self.timed("issue_token", self.inner.issue_token(token, limit))
    }

    fn spend_token<'a>(&'a self, token: &'a TokenRecord) -> StoreFuture<'a, Spend> {
        self.timed("spend_token", self.inner.spend_token(token))
    }

    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        self.timed("claim", self.inner.claim(claim))
    }

    fn settle<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        outcome: &'a Value,
    ) -> StoreFuture<'a, ()> {
        self.timed("settle", self.inner.settle(holder, key, owner, outcome))
    }

    fn release<'a>(&'a self, holder: &'a str, key: &'a str, owner: &'a str) -> StoreFuture<'a, ()> {
        self.timed("release", self.inner.release(holder, key, owner))
    }

    fn renew<'a>(
        &'a self,
        holder: &'a str,
        key: &'a str,
        owner: &'a str,
        lease_until_ms: u64,
    ) -> StoreFuture<'a, ()> {
        self.timed(
            "renew",
            self.inner.renew(holder, key, owner, lease_until_ms),
        )
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, u64> {
        self.timed("sweep", self.inner.sweep(now_ms))
    }

    fn take_rate<'a>(
        &'a self,
        key: &'a str,
        calls: u32,
        period_ms: u64,
        now_ms: u64,
    ) -> StoreFuture<'a, RateTaken> {
        self.timed(
            "take_rate",
            self.inner.take_rate(key, calls, period_ms, now_ms),
        )
    }

    fn publish<'a>(&'a self, uri: &'a str) -> StoreFuture<'a, ()> {
        self.timed("publish", self.inner.publish(uri))
    }

    fn updates(&self) -> Option<Updates> {
        self.inner.updates()
    }

    fn signal_task<'a>(
        &'a self,
        id: &'a str,
        signal: &'a TaskSignal,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        self.timed(
            "signal_task",
            self.inner.signal_task(id, signal, expires_at_ms),
        )
    }

    fn take_task_signals<'a>(
        &'a self,
        ids: &'a [String],
    ) -> StoreFuture<'a, Vec<(String, TaskSignal)>> {
        self.timed("take_task_signals", self.inner.take_task_signals(ids))
    }

    fn publish_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.timed("publish_task", self.inner.publish_task(id))
    }

    fn task_events(&self) -> Option<TaskEvents> {
        self.inner.task_events()
    }

    fn put_session<'a>(&'a self, record: &'a SessionRecord) -> StoreFuture<'a, ()> {
        self.timed("put_session", self.inner.put_session(record))
    }

    fn session<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        self.timed("session", self.inner.session(id, now_ms))
    }

    fn touch_sessions<'a>(
        &'a self,
        ids: &'a [String],
        expires_at_ms: u64,
    ) -> StoreFuture<'a, Vec<String>> {
        self.timed(
            "touch_sessions",
            self.inner.touch_sessions(ids, expires_at_ms),
        )
    }

    fn update_session<'a>(
        &'a self,
        record: &'a SessionRecord,
        expected: &'a Value,
    ) -> StoreFuture<'a, bool> {
        self.timed(
            "update_session",
            self.inner.update_session(record, expected),
        )
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.timed("delete_session", self.inner.delete_session(id))
    }

    fn forward_to_session<'a>(
        &'a self,
        id: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, ()> {
        self.timed(
            "forward_to_session",
            self.inner.forward_to_session(id, message, expires_at_ms),
        )
    }

    fn take_forwarded<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Value>> {
        self.timed("take_forwarded", self.inner.take_forwarded(id))
    }

    fn session_events(&self) -> Option<SessionEvents> {
        self.inner.session_events()
    }

    fn append_to_stream<'a>(
        &'a self,
        stream: &'a str,
        message: &'a Value,
        expires_at_ms: u64,
    ) -> StoreFuture<'a, u64> {
        self.timed(
            "append_to_stream",
            self.inner.append_to_stream(stream, message, expires_at_ms),
        )
    }

    fn read_streams<'a>(
        &'a self,
        streams: &'a [String],
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, StreamRead> {
        self.timed(
            "read_streams",
            self.inner.read_streams(streams, after, limit),
        )
    }

    fn is_shared(&self) -> bool {
        self.inner.is_shared()
    }
}
