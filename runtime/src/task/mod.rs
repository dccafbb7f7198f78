//! Background tasks (the tasks extension, `io.modelcontextprotocol/tasks`): a call to an
//! ability declared `task = "optional"` or `"required"`, from a client that declares the
//! extension, answers at once with a task; the handler runs on, and its caller polls
//! `tasks/get`, answers its questions with `tasks/update` and may `tasks/cancel` it.
//!
//! Every change of a task is written to its [`Store`] before anyone is told of it, so
//! what `tasks/get` reads is the store's record: a finished task's result survives a restart
//! of the server, and a task its process did not live to finish reads as `failed`.

mod lease;
mod list;
mod live;
mod watch;
mod wire;
pub(crate) mod wire_2025;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{DetailedTask, ErrorData, GetTaskResult};
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub(crate) use crate::store::{
    Store, StoreError, TaskInsert, TaskLimits, TaskRecord, TaskSignal, TaskStatus,
};
pub(crate) use live::{Live, Slot};
pub(crate) use watch::ListenTasks;
use watch::Watchers;

pub(crate) use crate::clock::now_ms;
use crate::context::CancellationToken;
use crate::{AbilityError, CallOutput, ErrorCode};

/// How long a task is kept after it was created, unless the builder says otherwise.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// How often clients are told to poll, unless the builder says otherwise.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How many tasks one caller may have running at once, unless the builder says otherwise.
pub(crate) const DEFAULT_PER_CALLER: usize = 100;
/// How many tasks the server (every replica sharing its store) runs at once, unless the
/// builder says otherwise.
pub(crate) const DEFAULT_PER_SERVER: usize = 1000;
/// How often expired records are swept (at most; sweeping rides on task traffic).
const SWEEP_EVERY_MS: u64 = 60_000;

/// The status message of a task a call did not become after all (see [`Tasks::discard`]):
/// no list shows it.
const DISCARDED: &str = "answered in its request, not as a task";

/// A new task id: 128 random bits, in hex.
fn new_id() -> Result<String, ErrorData> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| {
        tracing::error!(error = %e, "no randomness for a task id");
        ErrorData::internal_error("no task id could be drawn", None)
    })?;
    Ok(id.iter().map(|b| format!("{b:02x}")).collect())
}

fn store_failed(error: &StoreError) -> ErrorData {
    tracing::error!(%error, "the task store failed");
    ErrorData::internal_error("the task store failed", None)
}

/// A task id no caller owns (unknown, expired, or another caller's): all read the same.
fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown task: {}", id.chars().take(100).collect::<String>()),
        None,
    )
}

/// The server's tasks: the store, the tasks this process runs, and their lifetimes.
pub(crate) struct Tasks {
    store: Arc<dyn Store>,
    watchers: Arc<Watchers>,
    live: lease::Running,
    /// Whether this process marks its running tasks alive (started with the first task).
    beating: std::sync::atomic::AtomicBool,
    /// Whether this process hears other replicas' task events (started with the first task
    /// or listen stream, when the store is shared).
    following: std::sync::atomic::AtomicBool,
    ttl_ms: u64,
    poll_interval_ms: u64,
    /// How many tasks one caller may have running at once.
    per_caller: usize,
    /// How many tasks the server runs at once.
    per_server: usize,
    last_sweep: AtomicU64,
    /// Where the tasks this process ran are counted as they end.
    instruments: crate::instruments::Instruments,
}

/// How background tasks run ([`ServerBuilder::tasks`](crate::ServerBuilder::tasks)): how
/// long they are kept, how often clients poll, and how many may run at once.
///
/// ```standalone_crate
/// use abilities::{Server, config::TaskConfig};
/// use std::time::Duration;
///
/// let server = Server::builder()
///     .tasks(TaskConfig::default().ttl(Duration::from_secs(600)).max_running(50))
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct TaskConfig {
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) per_caller: usize,
    pub(crate) per_server: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_TTL,
            poll_interval: DEFAULT_POLL_INTERVAL,
            per_caller: DEFAULT_PER_CALLER,
            per_server: DEFAULT_PER_SERVER,
        }
    }
}

impl TaskConfig {
    /// How long a task is kept after it was created (default: one hour); then it is gone.
    /// It is also the task's time limit, in place of the builder's
    /// [`timeout`](crate::ServerBuilder::timeout): past it the handler stops and the task
    /// fails.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How often clients are told to poll a task (default: 500 ms); progress is recorded at
    /// most this often.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How many tasks one authenticated caller (principal) may have running at once, on
    /// every replica sharing the store (default: 100); past it, a call that would start one
    /// is refused (`-32000`, `data.code: TOO_MANY_TASKS`, `data.limit`). Anonymous callers
    /// cannot be told apart, so none of them can use this up for another: their tasks count
    /// against [`max_running`](Self::max_running) only.
    pub fn max_per_caller(mut self, tasks: usize) -> Self {
        self.per_caller = tasks;
        self
    }

    /// How many tasks the server (every replica sharing its store) runs at once, all callers
    /// together (default: 1,000); past it, a call that would start one is refused (`-32000`,
    /// `data.code: TOO_MANY_TASKS`, `data.limit`, a message that names the server).
    pub fn max_running(mut self, tasks: usize) -> Self {
        self.per_server = tasks;
        self
    }
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn Store>, config: &TaskConfig) -> Self {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
        Self {
            store,
            watchers: Arc::default(),
            live: Arc::default(),
            beating: std::sync::atomic::AtomicBool::new(false),
            following: std::sync::atomic::AtomicBool::new(false),
            ttl_ms: ms(config.ttl),
            poll_interval_ms: ms(config.poll_interval),
            per_caller: config.per_caller,
            per_server: config.per_server,
            last_sweep: AtomicU64::new(0),
            instruments: crate::instruments::Instruments::default(),
        }
    }

    /// The same, counting the tasks it runs as they end in the server's metrics.
    pub(crate) fn counted(mut self, instruments: crate::instruments::Instruments) -> Self {
        self.instruments = instruments;
        self
    }

    /// How long a task may run and is kept.
    pub(crate) fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// Whether the store answers: one read of a task no one has (no task id has a `-`).
    pub(crate) async fn store_answers(&self) -> Result<(), StoreError> {
        self.store.task("readiness-probe").await.map(drop)
    }

    /// The record of a task `id` of `owner`'s that starts working now.
    fn working(&self, id: String, owner: &str) -> TaskRecord {
        let now = now_ms();
        TaskRecord {
            id,
            owner: owner.to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            alive_at_ms: now,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            input_requests: None,
            result: None,
            error: None,
        }
    }

    /// Record a new task of `owner`, working, whose handler stops when `cancel` fires; its
    /// runner. The record is made within the limits in one step of the store, so callers
    /// racing for the last place (on any replica sharing it) get it once. An anonymous
    /// owner names no one in particular: only the server's limit counts its tasks.
    pub(crate) async fn create(
        &self,
        owner: &crate::Caller,
        cancel: CancellationToken,
    ) -> Result<Arc<Live>, ErrorData> {
        let limited = !owner.is_anonymous();
        self.create_for(owner.principal(), limited, cancel).await
    }

    /// Record a new task of the owner named `owner` (its own share of running tasks when
    /// `limited`), working; its runner. See [`create`](Self::create).
    pub(crate) async fn create_for(
        &self,
        owner: &str,
        limited: bool,
        cancel: CancellationToken,
    ) -> Result<Arc<Live>, ErrorData> {
        self.sweep().await;
        let too_many = |message: String, limit: usize| {
            ErrorData::new(
                rmcp::model::ErrorCode(-32000),
                message,
                Some(json!({"code": "TOO_MANY_TASKS", "limit": limit})),
            )
        };
        let limits = TaskLimits {
            per_owner: limited.then(|| u32::try_from(self.per_caller).unwrap_or(u32::MAX)),
            per_server: u32::try_from(self.per_server).unwrap_or(u32::MAX),
            lease_ms: lease::LEASE_MS,
        };
        let id = new_id()?;
        let record = self.working(id.clone(), owner);
        // Recorded before anyone hears of it: `tasks/get` finds it as soon as its id is out.
        match self
            .store
            .insert_task(record.clone(), limits)
            .await
            .map_err(|e| store_failed(&e))?
        {
            TaskInsert::Inserted => {}
            TaskInsert::OwnerFull { running } => {
                return Err(too_many(
                    format!(
                        "{running} tasks of this caller are running, the most it may have: wait for one to end, or cancel one"
                    ),
                    self.per_caller,
                ));
            }
            TaskInsert::ServerFull { running } => {
                return Err(too_many(
                    format!(
                        "{running} tasks are running on this server, the most it runs at once: retry later"
                    ),
                    self.per_server,
                ));
            }
        }
        let live = Arc::new(Live {
            id: id.clone(),
            store: Arc::clone(&self.store),
            watchers: Arc::clone(&self.watchers),
            record: tokio::sync::Mutex::new(record),
            cancel,
            waiting: Mutex::new(BTreeMap::new()),
            used: Mutex::new(HashSet::new()),
            last_progress: AtomicU64::new(0),
        });
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::clone(&live));
        // Marked alive while they run, on any store: a running task counts against the
        // limits while its mark is fresh.
        if !self.beating.swap(true, Ordering::Relaxed) {
            lease::keep_alive(Arc::clone(&self.store), &self.live);
        }
        self.follow_events();
        Ok(live)
    }

    /// Forget a task the call did not become after all (it finished, or asked the client
    /// something, before it waited): its record, which no one has heard of, ends.
    pub(crate) async fn discard(&self, live: &Live) {
        let mut record = live.record.lock().await;
        record.status = TaskStatus::Cancelled;
        record.status_message = Some(DISCARDED.to_owned());
        record.updated_at_ms = now_ms();
        let id = record.id.clone();
        if let Err(error) = self.store.update_task(record.clone()).await {
            tracing::warn!(%error, task = %id, "a task answered in its request was not recorded as ended");
        }
        drop(record);
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    /// The task `id` as `owner` may see it: unknown when missing, expired or another's.
    async fn owned(&self, id: &str, owner: &str) -> Result<TaskRecord, ErrorData> {
        self.sweep().await;
        match self.store.task(id).await.map_err(|e| store_failed(&e))? {
            Some(record) if record.owner == owner && record.expires_at_ms() >= now_ms() => {
                Ok(self.unless_abandoned(record).await)
            }
            _ => Err(unknown(id)),
        }
    }

    /// `record`, or, when it runs on no live replica of a shared store (see [`lease`]), the
    /// same task failed, as recorded now.
    async fn unless_abandoned(&self, record: TaskRecord) -> TaskRecord {
        if !self.store.is_shared() || self.running(&record.id).is_some() {
            return record;
        }
        lease::fail_if_abandoned(&*self.store, &self.watchers, record).await
    }

    fn running(&self, id: &str) -> Option<Arc<Live>> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Follow the tasks `ids` of `owner` (others, and unknown ones, are left out, saying
    /// nothing): their current state, then every change, goes to `stream` until
    /// [`forget`](Self::forget) of `key`.
    pub(crate) async fn watch(
        &self,
        ids: &[String],
        owner: &str,
        key: u64,
        stream: &mpsc::UnboundedSender<DetailedTask>,
    ) {
        self.follow_events();
        for id in ids {
            let Ok(record) = self.owned(id, owner).await else {
                continue;
            };
            self.watchers.add(id, key, stream.clone());
            // Read again once registered: no change falls between the two.
            let record = self.owned(id, owner).await.unwrap_or(record);
            let _ = stream.send(wire::detailed(&record));
        }
    }

    /// Stop following tasks for the stream `key`.
    pub(crate) fn forget(&self, key: u64) {
        self.watchers.forget(key);
    }

    /// `tasks/get`: the task's record on the wire.
    pub(crate) async fn get(&self, id: &str, owner: &str) -> Result<GetTaskResult, ErrorData> {
        Ok(wire::polled(&self.owned(id, owner).await?))
    }

    /// `tasks/update`: answers to the task's questions, by key. Keys it does not wait for,
    /// and answers not shaped as their request's result, are ignored.
    pub(crate) async fn update(
        &self,
        id: &str,
        owner: &str,
        responses: BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        let record = self.owned(id, owner).await?;
        match self.running(id) {
            Some(live) => live.answer(responses).await.map_err(|e| store_failed(&e)),
            None => {
                self.elsewhere(&record, TaskSignal::Answers(responses))
                    .await
            }
        }
    }

    /// A task this process does not run: nothing to do when it finished; when it runs on
    /// another replica sharing the store, `signal` is recorded in the store for that
    /// replica, which takes it at once when the store tells it (PostgreSQL's `NOTIFY`) and
    /// on its next mark of life otherwise. A store that carries no signals is a refusal,
    /// never an acknowledgement that would not be true.
    async fn elsewhere(&self, record: &TaskRecord, signal: TaskSignal) -> Result<(), ErrorData> {
        if record.status.is_terminal() || !self.store.is_shared() {
            return Ok(());
        }
        self.follow_events();
        match self
            .store
            .signal_task(&record.id, &signal, record.expires_at_ms())
            .await
        {
            Ok(()) => Ok(()),
            Err(error) => {
                tracing::warn!(%error, task = %record.id, "a task on another replica could not be signalled");
                Err(ErrorData::new(
                    rmcp::model::ErrorCode(-32000),
                    format!(
                        "task {} runs on another replica, which this one cannot reach: retry, \
                         and the request may be routed to it",
                        record.id
                    ),
                    Some(json!({"code": "TASK_ON_ANOTHER_REPLICA"})),
                ))
            }
        }
    }

    /// On a store replicas share: start hearing other replicas' task events (once), so this
    /// process's tasks take the signals recorded for them and its listen streams hear of
    /// tasks that run elsewhere.
    fn follow_events(&self) {
        if !self.store.is_shared() || self.following.swap(true, Ordering::Relaxed) {
            return;
        }
        let Some(events) = self.store.task_events() else {
            return;
        };
        watch::follow(
            events,
            Arc::clone(&self.store),
            Arc::downgrade(&self.live),
            Arc::clone(&self.watchers),
        );
    }

    /// `tasks/cancel`: ask the handler to stop (its context's cancellation fires; the task
    /// settles as `cancelled` when it does). A finished task is left as it is. Cancelling is
    /// cooperative, so the answer is the same either way: an acknowledgement.
    pub(crate) async fn cancel(&self, id: &str, owner: &str) -> Result<(), ErrorData> {
        let record = self.owned(id, owner).await?;
        match self.running(id) {
            Some(live) => {
                live.cancel.cancel();
                Ok(())
            }
            None => self.elsewhere(&record, TaskSignal::Cancel).await,
        }
    }

    /// The task `id` as `owner` may see it (protocol 2025-11-25's `tasks/get`).
    pub(crate) async fn record(&self, id: &str, owner: &str) -> Result<TaskRecord, ErrorData> {
        self.owned(id, owner).await
    }

    /// `tasks/cancel` of protocol 2025-11-25: the task is `cancelled` from now on (its
    /// handler is asked to stop, here or on the replica running it) and the answer is the
    /// task as recorded. A task that already ended cannot be cancelled: `-32602`.
    pub(crate) async fn cancel_now(&self, id: &str, owner: &str) -> Result<TaskRecord, ErrorData> {
        let record = self.owned(id, owner).await?;
        if record.status.is_terminal() {
            return Err(ended(id, &record));
        }
        let cancelled = |mut record: TaskRecord| {
            record.status = TaskStatus::Cancelled;
            record.status_message = Some("cancelled by its caller".to_owned());
            record.input_requests = None;
            record.updated_at_ms = now_ms();
            record
        };
        match self.running(id) {
            Some(live) => {
                let mut held = live.record.lock().await;
                if held.status.is_terminal() {
                    // It ended between the read and now.
                    return Err(ended(id, &held));
                }
                *held = cancelled(held.clone());
                self.store
                    .update_task(held.clone())
                    .await
                    .map_err(|e| store_failed(&e))?;
                live.told(&held).await;
                drop(held);
                live.cancel.cancel();
            }
            None => {
                // Recorded here (a finished task's record stays as it ended), then the
                // replica running it is asked to stop its handler.
                self.store
                    .update_task(cancelled(record.clone()))
                    .await
                    .map_err(|e| store_failed(&e))?;
                self.elsewhere(&record, TaskSignal::Cancel).await?;
                if self.store.is_shared() {
                    let _ = self.store.publish_task(id).await;
                }
            }
        }
        let now = self.owned(id, owner).await?;
        if now.status == TaskStatus::Cancelled {
            Ok(now)
        } else {
            // It ended on another replica before the cancellation was recorded.
            Err(ended(id, &now))
        }
    }

    /// Record how the task's call ended, and forget its runner.
    pub(crate) async fn finish(&self, live: &Live, outcome: Result<CallOutput, AbilityError>) {
        let mut record = live.record.lock().await;
        if record.status.is_terminal() {
            // Cancelled (protocol 2025-11-25's `tasks/cancel` ends it at once): it stays so,
            // whatever the handler returned after.
            let id = record.id.clone();
            self.instruments.task_ended(record.status.as_str());
            drop(record);
            self.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            return;
        }
        let cancelled = live.cancel.is_cancelled();
        match outcome {
            Err(e) if cancelled || e.code() == &ErrorCode::Cancelled => {
                record.status = TaskStatus::Cancelled;
                record.status_message = Some("cancelled by its caller".to_owned());
            }
            Err(e) if matches!(e.code(), ErrorCode::InternalError | ErrorCode::Timeout) => {
                record.status = TaskStatus::Failed;
                record.status_message = Some(e.message().to_owned());
                record.error = Some(json!({"code": -32603, "message": e.message()}));
            }
            outcome => {
                let mut result = crate::surface::native::result(outcome);
                result.result_type = Some(rmcp::model::ResultType::COMPLETE);
                let result = serde_json::to_value(result)
                    .unwrap_or_else(|_| json!({"content": [], "isError": true}));
                record.status = TaskStatus::Completed;
                record.status_message = None;
                record.result = Some(result);
            }
        }
        record.input_requests = None;
        record.updated_at_ms = now_ms();
        let id = record.id.clone();
        if let Err(error) = self.store.update_task(record.clone()).await {
            tracing::error!(%error, task = %id, "a finished task could not be recorded");
        }
        self.instruments.task_ended(record.status.as_str());
        live.told(&record).await;
        drop(record);
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    /// The tasks this process runs, as (working, waiting for input), and how many the server
    /// runs at once. A record held at this moment counts as working.
    #[allow(dead_code, reason = "read by the metrics, when they are built")]
    pub(crate) fn running_and_cap(&self) -> ((usize, usize), usize) {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = live
            .values()
            .filter(|task| {
                task.record
                    .try_lock()
                    .is_ok_and(|record| record.status == TaskStatus::InputRequired)
            })
            .count();
        ((live.len() - waiting, waiting), self.per_server)
    }

    /// Delete expired records, at most once a minute.
    async fn sweep(&self) {
        let now = now_ms();
        let last = self.last_sweep.load(Ordering::Relaxed);
        if now.saturating_sub(last) < SWEEP_EVERY_MS
            || self
                .last_sweep
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        match self.store.sweep(now).await {
            Ok(0) => {}
            Ok(swept) => tracing::debug!(swept, "expired tasks swept"),
            Err(error) => tracing::warn!(%error, "expired tasks could not be swept"),
        }
    }
}

/// The refusal to cancel task `id`, which ended as `record` says: `-32602`.
fn ended(id: &str, record: &TaskRecord) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "task {id} already ended ({}): only a running task can be cancelled",
            wire_2025::status(record)
        ),
        None,
    )
}
