//! Who follows which task: `subscriptions/listen` streams that named `taskIds`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::DetailedTask;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::{Live, Store, TaskRecord};
use crate::store::TaskEvent;

/// The task ids a `subscriptions/listen` request asked to hear of (`notifications.taskIds`,
/// the tasks extension's addition), read from the raw request by the transport: rmcp's
/// filter type has no such field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListenTasks(pub(crate) Vec<String>);

impl ListenTasks {
    /// The most task ids one stream may follow.
    const MOST: usize = 100;

    /// Following `named`, each once, at most [`MOST`](Self::MOST) of them.
    pub(crate) fn new<'a>(named: impl Iterator<Item = &'a str>) -> Self {
        // A task named twice is followed once (and notified once).
        let mut ids: Vec<String> = Vec::new();
        for id in named {
            if ids.len() == Self::MOST {
                break;
            }
            if !ids.iter().any(|seen| seen == id) {
                ids.push(id.to_owned());
            }
        }
        Self(ids)
    }
}

/// Hear other replicas' task events for as long as the server keeps its tasks: a signal for
/// a task this process runs is taken from the store and done; a change of a task some
/// listen stream here follows is read from the store and told to it. Events that may have
/// been missed (lagging, a broken connection to the store) are made up for: every running
/// task takes its signals, every followed task is read again. Every few seconds the
/// followed tasks that run elsewhere are looked at too, so a stream hears of one whose
/// replica died.
pub(super) fn follow(
    mut events: crate::store::TaskEvents,
    store: Arc<dyn Store>,
    running: Weak<Mutex<HashMap<String, Arc<Live>>>>,
    watchers: Arc<Watchers>,
) {
    tokio::spawn(async move {
        let mut look = tokio::time::interval(super::lease::BEAT);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let event = tokio::select! {
                event = events.recv() => Some(event),
                _ = look.tick() => None,
            };
            // The server is gone: so is this.
            let Some(running) = running.upgrade() else {
                return;
            };
            let Some(event) = event else {
                fail_abandoned(&*store, &watchers, &running).await;
                continue;
            };
            let (signalled, changed): (Vec<String>, Vec<String>) = match event {
                Ok(TaskEvent::Signalled(id)) => (vec![id], Vec::new()),
                Ok(TaskEvent::Changed(id)) => (Vec::new(), vec![id]),
                Ok(TaskEvent::Missed) | Err(RecvError::Lagged(_)) => {
                    tracing::warn!(
                        "task events may have been missed: every task is looked at again"
                    );
                    let ids = running
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .keys()
                        .cloned()
                        .collect();
                    (ids, watchers.followed())
                }
                Err(RecvError::Closed) => return,
            };
            deliver_signals(&*store, signalled, &running).await;
            drop(running);
            tell_changes(&*store, &watchers, changed).await;
        }
    });
}

/// The running task `id` of this process, if it is one.
fn live(running: &Mutex<HashMap<String, Arc<Live>>>, id: &str) -> Option<Arc<Live>> {
    running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(id)
        .cloned()
}

/// At each look: a followed task that runs nowhere any more (its replica stopped) is failed.
async fn fail_abandoned(
    store: &dyn Store,
    watchers: &Watchers,
    running: &Mutex<HashMap<String, Arc<Live>>>,
) {
    for id in watchers.followed() {
        if live(running, &id).is_some() {
            continue;
        }
        if let Ok(Some(record)) = store.task(&id).await
            && !record.status.is_terminal()
        {
            super::lease::fail_if_abandoned(store, watchers, record).await;
        }
    }
}

/// The signals sent to the tasks `signalled` (a cancellation, an answer), taken from the store
/// and applied by those that run here.
async fn deliver_signals(
    store: &dyn Store,
    signalled: Vec<String>,
    running: &Mutex<HashMap<String, Arc<Live>>>,
) {
    let signalled: Vec<String> = signalled
        .into_iter()
        .filter(|id| live(running, id).is_some())
        .collect();
    if signalled.is_empty() {
        return;
    }
    match store.take_task_signals(&signalled).await {
        Ok(taken) => {
            for (id, signal) in taken {
                if let Some(task) = live(running, &id) {
                    task.apply(signal).await;
                }
            }
        }
        Err(error) => tracing::warn!(%error, "signals for running tasks could not be taken"),
    }
}

/// The tasks `changed`, read again and told to the streams that follow them.
async fn tell_changes(store: &dyn Store, watchers: &Watchers, changed: Vec<String>) {
    for id in changed {
        if !watchers.follows(&id) {
            continue;
        }
        match store.task(&id).await {
            Ok(Some(record)) => watchers.notify(&record),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, task = %id, "a changed task could not be read")
            }
        }
    }
}

/// The `subscriptions/listen` streams following tasks, by task id: each change of a task's
/// record goes to them, in order, as the `notifications/tasks` params (a detailed task).
#[derive(Default)]
pub(crate) struct Watchers(Mutex<HashMap<String, Vec<Stream>>>);

/// A listen stream following a task: its key, and where the task's changes go.
type Stream = (u64, mpsc::UnboundedSender<DetailedTask>);

impl Watchers {
    /// The stream `key` follows the task `id`.
    pub(super) fn add(&self, id: &str, key: u64, stream: mpsc::UnboundedSender<DetailedTask>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(id.to_owned())
            .or_default()
            .push((key, stream));
    }

    /// The stream `key` follows nothing any more.
    pub(super) fn forget(&self, key: u64) {
        let mut watchers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        watchers.retain(|_, streams| {
            streams.retain(|(k, _)| *k != key);
            !streams.is_empty()
        });
    }

    /// Whether some stream follows the task `id`.
    pub(super) fn follows(&self, id: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(id)
    }

    /// The tasks some stream follows.
    pub(super) fn followed(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// Tell the streams following the task of `record` its new state.
    pub(super) fn notify(&self, record: &TaskRecord) {
        let watchers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(streams) = watchers.get(&record.id) {
            let task = super::wire::detailed(record);
            for (_, stream) in streams {
                // A stream that ended is forgotten by its listener.
                let _ = stream.send(task.clone());
            }
        }
    }
}
