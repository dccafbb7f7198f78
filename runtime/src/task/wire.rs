//! A task as the wire shows it, built as rmcp's types: the fields every answer carries, and
//! what its status holds (questions, result or error), for the create answer, `tasks/get` and
//! `notifications/tasks`.

use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputRequests, JsonObject, Task, TaskPayload,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{TaskRecord, TaskStatus};

/// The answer to the call that created the task.
pub(crate) fn created(record: &TaskRecord) -> CreateTaskResult {
    CreateTaskResult::new(task(record))
}

/// The `tasks/get` answer.
pub(crate) fn polled(record: &TaskRecord) -> GetTaskResult {
    GetTaskResult::new(detailed(record))
}

/// The task and what its status carries: `tasks/get`'s and `notifications/tasks`' payload.
pub(crate) fn detailed(record: &TaskRecord) -> DetailedTask {
    let payload = match (
        record.status,
        &record.input_requests,
        &record.result,
        &record.error,
    ) {
        (TaskStatus::Working, ..) => Some(TaskPayload::Working),
        (TaskStatus::Cancelled, ..) => Some(TaskPayload::Cancelled),
        (TaskStatus::InputRequired, Some(asked), _, _) => InputRequests::deserialize(asked)
            .ok()
            .map(|input_requests| TaskPayload::InputRequired { input_requests }),
        (TaskStatus::Completed, _, Some(Value::Object(result)), _) => {
            Some(TaskPayload::Completed {
                result: result.clone(),
            })
        }
        (TaskStatus::Failed, _, _, Some(Value::Object(error))) => Some(TaskPayload::Failed {
            error: error.clone(),
        }),
        _ => None,
    };
    // A record missing what its status carries (a store that lost it): never shown as what
    // it is not.
    let payload = payload.unwrap_or_else(|| TaskPayload::Failed {
        error: incomplete(),
    });
    DetailedTask::new(task(record), payload)
}

/// The fields every task answer has.
fn task(record: &TaskRecord) -> Task {
    let task = Task::new(
        record.id.clone(),
        status(record.status),
        crate::clock::utc(record.created_at_ms, true),
        crate::clock::utc(record.updated_at_ms, true),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(record.poll_interval_ms);
    match &record.status_message {
        Some(message) => task.with_status_message(message.clone()),
        None => task,
    }
}

fn status(status: TaskStatus) -> rmcp::model::TaskStatus {
    match status {
        TaskStatus::Working => rmcp::model::TaskStatus::Working,
        TaskStatus::InputRequired => rmcp::model::TaskStatus::InputRequired,
        TaskStatus::Completed => rmcp::model::TaskStatus::Completed,
        TaskStatus::Failed => rmcp::model::TaskStatus::Failed,
        TaskStatus::Cancelled => rmcp::model::TaskStatus::Cancelled,
    }
}

fn incomplete() -> JsonObject {
    JsonObject::from_iter([
        ("code".to_owned(), json!(-32603)),
        (
            "message".to_owned(),
            json!("the task's record is incomplete"),
        ),
    ])
}
