//! A task this process runs ([`Live`]): its record, which every change goes through on its
//! way to the store, its cancellation, and the questions it waits on; and the [`Slot`] where
//! a call that may become a task finds its task once it is one.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;

use super::watch::Watchers;
use super::{Store, StoreError, TaskRecord, TaskSignal, TaskStatus, now_ms};
use crate::context::CancellationToken;
use crate::question::Question;
use crate::{AbilityError, ErrorCode};

/// Where a call that may become a task finds its task once it is one, and keeps the
/// progress it reported before.
#[derive(Default)]
pub(crate) struct Slot {
    live: std::sync::OnceLock<Arc<Live>>,
    early: Mutex<Option<Progress>>,
}

/// A progress report: how far, of how much, and what is being done.
type Progress = (f64, Option<f64>, Option<String>);

impl Slot {
    /// The task, once the call is one.
    pub(crate) fn live(&self) -> Option<&Arc<Live>> {
        self.live.get()
    }

    /// Progress reported before the call became a task: kept for the task.
    pub(crate) fn early_progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        *self.early.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((progress, total, message));
    }

    /// The call is the task `live` from now on; the progress it reported before is its.
    pub(crate) async fn become_task(&self, live: Arc<Live>) {
        let early = self
            .early
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((progress, total, message)) = early {
            live.progress(progress, total, message).await;
        }
        let _ = self.live.set(live);
    }
}

/// A task this process runs: its record (every change goes through it, then to the store),
/// its cancellation and the questions it waits on.
pub(crate) struct Live {
    /// The task's id (also in its record).
    pub(super) id: String,
    pub(super) store: Arc<dyn Store>,
    pub(super) watchers: Arc<Watchers>,
    pub(super) record: tokio::sync::Mutex<TaskRecord>,
    pub(crate) cancel: CancellationToken,
    pub(super) waiting: Mutex<BTreeMap<String, Waiting>>,
    /// Every key the task asked under: a key names one question for the task's lifetime.
    pub(super) used: Mutex<HashSet<String>>,
    /// When progress was last written to the store.
    pub(super) last_progress: AtomicU64,
}

/// A question the task waits on, and where its answer goes.
pub(super) struct Waiting {
    question: Question,
    answer: oneshot::Sender<Value>,
}

impl Live {
    /// The task's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The task's record as it stands.
    pub(crate) async fn record(&self) -> TaskRecord {
        self.record.lock().await.clone()
    }

    /// The record as the create answer shows it.
    pub(crate) async fn created(&self) -> rmcp::model::CreateTaskResult {
        super::wire::created(&*self.record.lock().await)
    }

    /// Ask `question` under `key`: the task waits in `input_required` until `tasks/update`
    /// brings the answer. A key asked before in this task is refused.
    pub(crate) async fn ask(
        self: &Arc<Self>,
        key: String,
        question: Question,
    ) -> Result<Value, AbilityError> {
        self.asking_session(key, question, std::future::pending())
            .await
    }

    /// A question of a protocol 2025-11-25 task, asked as a request to its session
    /// (`asked`): the task is `input_required` while it waits, and the wait ends with the
    /// client's answer, an answer `tasks/update` brought, or the task's cancellation.
    pub(crate) async fn asking_session(
        self: &Arc<Self>,
        key: String,
        question: Question,
        asked: impl Future<Output = Result<Value, AbilityError>>,
    ) -> Result<Value, AbilityError> {
        if !self
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone())
        {
            return Err(AbilityError::internal(format!(
                "the task asked under the key `{key}` before: a key names one question"
            )));
        }
        let (answer, answered) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), Waiting { question, answer });
        // However the wait ends (answered, cancelled, or the handler stops waiting), the
        // question is no longer asked.
        let _asking = Asking { live: self, key };
        self.record_questions()
            .await
            .map_err(|e| AbilityError::internal(e.to_string()))?;
        tokio::select! {
            answer = asked => answer,
            answer = answered => answer.map_err(|_| {
                AbilityError::new(ErrorCode::Cancelled, "the task ended before it was answered")
            }),
            () = self.cancel.cancelled() => {
                Err(AbilityError::new(ErrorCode::Cancelled, "the task was cancelled"))
            }
        }
    }

    /// Hand each answer to the question it answers; then record what is still asked.
    pub(super) async fn answer(
        &self,
        responses: BTreeMap<String, Value>,
    ) -> Result<(), StoreError> {
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            for (key, answer) in responses {
                let fits = waiting
                    .get(&key)
                    .is_some_and(|w| w.question.answered_by(&answer));
                if !fits {
                    continue;
                }
                if let Some(question) = waiting.remove(&key) {
                    // The handler may have stopped waiting (cancelled): nothing to hand over.
                    let _ = question.answer.send(answer);
                }
            }
        }
        self.record_questions().await
    }

    /// Write the questions still waiting to the record: `input_required` while any is.
    async fn record_questions(&self) -> Result<(), StoreError> {
        let mut record = self.record.lock().await;
        if record.status.is_terminal() {
            return Ok(());
        }
        let asked: serde_json::Map<String, Value> = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(key, w)| (key.clone(), w.question.request.clone()))
            .collect();
        if asked.is_empty() {
            record.status = TaskStatus::Working;
            record.input_requests = None;
        } else {
            record.status = TaskStatus::InputRequired;
            record.input_requests = Some(Value::Object(asked));
        }
        record.updated_at_ms = now_ms();
        self.store.update_task(record.clone()).await?;
        self.told(&record).await;
        Ok(())
    }

    /// Tell whoever follows the task of its record as it now is: this process's listen
    /// streams, and (on a store replicas share) the other replicas'.
    pub(super) async fn told(&self, record: &TaskRecord) {
        self.watchers.notify(record);
        if self.store.is_shared()
            && let Err(error) = self.store.publish_task(&record.id).await
        {
            tracing::warn!(%error, task = %record.id, "a task's change could not be published");
        }
    }

    /// Do what another replica asked of this task.
    pub(crate) async fn apply(&self, signal: TaskSignal) {
        match signal {
            TaskSignal::Cancel => self.cancel.cancel(),
            TaskSignal::Answers(answers) => {
                if let Err(error) = self.answer(answers).await {
                    tracing::warn!(%error, "answers from another replica could not be recorded");
                }
            }
        }
    }

    /// Progress of the task: its message becomes the task's status message.
    pub(crate) async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        // At most one write per poll interval: pollers see no more often than that.
        let now = now_ms();
        let last = self.last_progress.load(Ordering::Relaxed);
        let mut record = self.record.lock().await;
        if last != 0 && now.saturating_sub(last) < record.poll_interval_ms {
            return;
        }
        self.last_progress.store(now, Ordering::Relaxed);
        if record.status.is_terminal() {
            return;
        }
        let figure = match total {
            Some(total) => format!("{progress}/{total}"),
            None => format!("{progress}"),
        };
        record.status_message = Some(match message {
            Some(message) => format!("{figure}: {message}"),
            None => figure,
        });
        record.updated_at_ms = now_ms();
        match self.store.update_task(record.clone()).await {
            Ok(()) => self.told(&record).await,
            Err(error) => tracing::warn!(%error, "a task's progress could not be recorded"),
        }
    }
}

/// A question the task is asking: when the wait ends, however it ends, it is no longer
/// asked, and the record says so.
struct Asking<'a> {
    live: &'a Arc<Live>,
    key: String,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let removed = self
            .live
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key)
            .is_some();
        // Answered questions were removed by the answer, which recorded it; a question the
        // handler stopped waiting for is recorded gone here.
        if removed && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let live = Arc::clone(self.live);
            runtime.spawn(async move {
                if let Err(error) = live.record_questions().await {
                    tracing::warn!(%error, "a task's questions could not be recorded");
                }
            });
        }
    }
}
