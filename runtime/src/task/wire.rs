//! A task as the wire shows it: the fields every answer carries, and what its status holds
//! (questions, result or error), for the create answer, `tasks/get` and `notifications/tasks`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use super::{TaskRecord, TaskStatus};

/// Which answer a task is shown in.
#[derive(Clone, Copy)]
pub(crate) enum Shown {
    /// The answer to the call that created it (`resultType: "task"`, no payload).
    Created,
    /// `tasks/get` (`resultType: "complete"` and what the status carries).
    Polled,
    /// `notifications/tasks` (what the status carries, no `resultType`).
    Notified,
}

/// One task on the wire.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskView<'a> {
    task_id: &'a str,
    status: &'static str,
    created_at: String,
    last_updated_at: String,
    ttl_ms: u64,
    poll_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, Value>>,
}

/// `record` as `shown`.
pub(crate) fn task(record: &TaskRecord, shown: Shown) -> Value {
    let mut view = TaskView {
        task_id: &record.id,
        status: record.status.as_str(),
        created_at: crate::clock::utc(record.created_at_ms, true),
        last_updated_at: crate::clock::utc(record.updated_at_ms, true),
        ttl_ms: record.ttl_ms,
        poll_interval_ms: record.poll_interval_ms,
        status_message: record.status_message.as_deref(),
        result_type: match shown {
            Shown::Created => Some("task"),
            Shown::Polled => Some("complete"),
            Shown::Notified => None,
        },
        input_requests: None,
        result: None,
        error: None,
    };
    if !matches!(shown, Shown::Created) {
        match (
            record.status,
            &record.input_requests,
            &record.result,
            &record.error,
        ) {
            (TaskStatus::InputRequired, Some(asked), _, _) => view.input_requests = Some(asked),
            (TaskStatus::Completed, _, Some(result), _) => view.result = Some(result),
            (TaskStatus::Failed, _, _, Some(error)) => view.error = Some(Cow::Borrowed(error)),
            (TaskStatus::Working | TaskStatus::Cancelled, ..) => {}
            // A record missing what its status carries (a store that lost it): never shown
            // as what it is not.
            _ => {
                view.status = TaskStatus::Failed.as_str();
                view.error = Some(Cow::Owned(
                    json!({"code": -32603, "message": "the task's record is incomplete"}),
                ));
            }
        }
    }
    // Strings, numbers and values: serializing cannot fail.
    serde_json::to_value(&view).unwrap_or_default()
}
