//! Tasks on a store replicas share: the process that runs a task says so every few seconds
//! (`alive_at_ms`), so a replica asked about a running task it does not run can tell one that
//! runs elsewhere from one whose replica died, which it then records as failed instead of
//! answering `working` until the task expires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::json;

use super::{Live, Store, TaskRecord, TaskStatus, now_ms};

/// How often a process marks the tasks it runs alive.
pub(super) const BEAT: Duration = Duration::from_secs(5);
/// How long a running task may go unmarked before it reads as failed.
pub(super) const LEASE_MS: u64 = 30_000;
/// The message of a task whose replica stopped.
pub(super) const STOPPED: &str = "the replica running this task stopped before it finished";

/// The tasks this process runs, by id.
pub(super) type Running = Arc<Mutex<HashMap<String, Arc<Live>>>>;

/// Mark the tasks of `running` alive in `store` every few seconds, for as long as the
/// server holds `running` (started once, on the runtime of the first task).
pub(super) fn keep_alive(store: Arc<dyn Store>, running: &Running) {
    let weak: Weak<Mutex<HashMap<String, Arc<Live>>>> = Arc::downgrade(running);
    tokio::spawn(async move {
        let mut beat = tokio::time::interval(BEAT);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            beat.tick().await;
            let Some(running) = weak.upgrade() else {
                return;
            };
            let ids: Vec<String> = running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .keys()
                .cloned()
                .collect();
            drop(running);
            if ids.is_empty() {
                continue;
            }
            if let Err(error) = store.touch_tasks(&ids, now_ms()).await {
                tracing::warn!(%error, "running tasks could not be marked alive");
            }
            // Signals another replica recorded, should the store's word of them have been
            // lost (a broken listener connection): taken on every beat.
            if store.is_shared() {
                match store.take_task_signals(&ids).await {
                    Ok(taken) => {
                        for (id, signal) in taken {
                            let task = weak.upgrade().and_then(|running| {
                                running
                                    .lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .get(&id)
                                    .cloned()
                            });
                            if let Some(task) = task {
                                task.apply(signal).await;
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "signals for running tasks could not be taken")
                    }
                }
            }
        }
    });
}

/// `record` failed, if it still runs and looks unmarked for half the lease by this clock
/// (the store then checks the whole lease by its own); `None` when it is as it reads.
pub(super) fn abandoned(record: &TaskRecord, now: u64) -> Option<TaskRecord> {
    if record.status.is_terminal() || now.saturating_sub(record.alive_at_ms) <= LEASE_MS / 2 {
        return None;
    }
    let mut failed = record.clone();
    failed.status = TaskStatus::Failed;
    failed.status_message = Some(STOPPED.to_owned());
    failed.input_requests = None;
    failed.error = Some(json!({"code": -32603, "message": STOPPED}));
    failed.updated_at_ms = now;
    Some(failed)
}

/// `record` as it stands: when it runs on no live replica (unmarked for the lease, by the
/// store's clock), recorded `failed`, and the streams following it here and on every other
/// replica told so.
pub(super) async fn fail_if_abandoned(
    store: &dyn Store,
    watchers: &super::watch::Watchers,
    record: TaskRecord,
) -> TaskRecord {
    // A first look by this clock (half the lease, for clocks that disagree); the store
    // decides by its own, in one step with the write.
    let Some(failed) = abandoned(&record, now_ms()) else {
        return record;
    };
    match store.fail_abandoned(&failed, LEASE_MS).await {
        Ok(true) => {
            tracing::warn!(task = %record.id, "a task's replica stopped; the task is failed");
            watchers.notify(&failed);
            if let Err(error) = store.publish_task(&failed.id).await {
                tracing::warn!(%error, task = %failed.id, "a failed task's end could not be published");
            }
            failed
        }
        // Alive after all, or finished meanwhile: as the store has it now.
        Ok(false) => match store.task(&record.id).await {
            Ok(Some(now)) => now,
            _ => record,
        },
        Err(error) => {
            tracing::error!(%error, "an abandoned task could not be recorded as failed");
            record
        }
    }
}
