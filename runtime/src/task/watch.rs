//! Who follows which task: `subscriptions/listen` streams that named `taskIds`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::mpsc;

use super::{TaskRecord, detailed};

/// The task ids a `subscriptions/listen` request asked to hear of (`notifications.taskIds`,
/// the tasks extension's addition), read from the raw request by the transport: rmcp's
/// filter type has no such field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListenTasks(pub(crate) Vec<String>);

impl ListenTasks {
    /// The most task ids one stream may follow.
    const MOST: usize = 100;

    /// The task ids of `message`, when it is a listen request that names some.
    pub(crate) fn of(message: &Value) -> Option<Self> {
        if message["method"] != "subscriptions/listen" {
            return None;
        }
        let named = message["params"]["notifications"]["taskIds"].as_array()?;
        // A task named twice is followed once (and notified once).
        let mut ids: Vec<String> = Vec::new();
        for id in named.iter().filter_map(Value::as_str) {
            if ids.len() == Self::MOST {
                break;
            }
            if !ids.iter().any(|seen| seen == id) {
                ids.push(id.to_owned());
            }
        }
        Some(Self(ids))
    }
}

/// The `notifications/tasks` params of `record`: the task as `tasks/get` shows it, without
/// the result's `resultType`.
pub(super) fn notification(record: &TaskRecord) -> Value {
    let mut task = detailed(record);
    if let Value::Object(fields) = &mut task {
        fields.remove("resultType");
    }
    task
}

/// The `subscriptions/listen` streams following tasks, by task id: each change of a task's
/// record goes to them, in order, as the `notifications/tasks` params (a detailed task).
#[derive(Default)]
pub(super) struct Watchers(Mutex<HashMap<String, Vec<Stream>>>);

/// A listen stream following a task: its key, and where the task's changes go.
type Stream = (u64, mpsc::UnboundedSender<Value>);

impl Watchers {
    /// The stream `key` follows the task `id`.
    pub(super) fn add(&self, id: &str, key: u64, stream: mpsc::UnboundedSender<Value>) {
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

    /// Tell the streams following the task of `record` its new state.
    pub(super) fn notify(&self, record: &TaskRecord) {
        let watchers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(streams) = watchers.get(&record.id) {
            let task = notification(record);
            for (_, stream) in streams {
                // A stream that ended is forgotten by its listener.
                let _ = stream.send(task.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ListenTasks;
    use serde_json::json;

    #[test]
    fn a_listen_request_names_the_tasks_it_follows() {
        let listen = |params| json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params});
        assert_eq!(
            ListenTasks::of(&listen(
                json!({"notifications": {"taskIds": ["a", 7, "b"]}})
            )),
            Some(ListenTasks(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            ListenTasks::of(&listen(
                json!({"notifications": {"toolsListChanged": true}})
            )),
            None
        );
        assert_eq!(
            ListenTasks::of(&listen(
                json!({"notifications": {"taskIds": ["a", "b", "a", "b", "c"]}})
            )),
            Some(ListenTasks(vec!["a".into(), "b".into(), "c".into()]))
        );
        let many: Vec<String> = (0..500).map(|i| i.to_string()).collect();
        let followed = ListenTasks::of(&listen(json!({"notifications": {"taskIds": many}})));
        assert_eq!(followed.map(|t| t.0.len()), Some(100));
        let call = json!({"method": "tools/call", "params": {"notifications": {"taskIds": ["a"]}}});
        assert_eq!(ListenTasks::of(&call), None);
    }
}
