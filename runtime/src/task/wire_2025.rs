//! A task as protocol 2025-11-25 shows it (its experimental tasks utility): the same record
//! as the 2026-07-28 extension's, in that version's shape. A task is a member `task` of the
//! create answer, and flat in `tasks/get`, `tasks/cancel`, `tasks/list` and
//! `notifications/tasks/status`; `ttl` and `pollInterval` are in milliseconds; a tool result
//! with `isError` is a `failed` task; the result is read with `tasks/result`.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{Map, Value, json};

use super::{TaskRecord, TaskStatus};

/// The key of the `_meta` that names the task a message belongs to.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The task's fields: `taskId`, `status`, `statusMessage` (when there is one), `createdAt`,
/// `lastUpdatedAt`, `ttl` and `pollInterval`.
pub(crate) fn task(record: &TaskRecord) -> Value {
    let mut task = Map::with_capacity(7);
    task.insert("taskId".into(), json!(record.id));
    task.insert("status".into(), json!(status(record)));
    match &record.status_message {
        Some(message) => {
            task.insert("statusMessage".into(), json!(message));
        }
        None if status(record) == "failed" => {
            task.insert(
                "statusMessage".into(),
                json!("the tool returned an error: read it with tasks/result"),
            );
        }
        None => {}
    }
    task.insert(
        "createdAt".into(),
        json!(crate::clock::utc(record.created_at_ms, true)),
    );
    task.insert(
        "lastUpdatedAt".into(),
        json!(crate::clock::utc(record.updated_at_ms, true)),
    );
    task.insert("ttl".into(), json!(record.ttl_ms));
    task.insert("pollInterval".into(), json!(record.poll_interval_ms));
    Value::Object(task)
}

/// The answer to the `tools/call` that created the task.
pub(crate) fn created(record: &TaskRecord) -> Value {
    json!({ "task": task(record) })
}

/// The task's status as this version names it: a completed call whose result is a tool
/// error is `failed`.
pub(crate) fn status(record: &TaskRecord) -> &'static str {
    match record.status {
        TaskStatus::Completed if is_tool_error(record) => "failed",
        status => status.as_str(),
    }
}

fn is_tool_error(record: &TaskRecord) -> bool {
    record
        .result
        .as_ref()
        .and_then(|r| r.get("isError"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// What `tasks/result` answers for a task that ended: the call's own result (marked with
/// the task it belongs to), or the call's own error.
pub(crate) fn outcome(record: &TaskRecord) -> Result<Value, ErrorData> {
    match (record.status, &record.result, &record.error) {
        (TaskStatus::Completed, Some(Value::Object(result)), _) => {
            let mut result = result.clone();
            // The 2026-07-28 marker of a complete answer: not this version's.
            result.remove("resultType");
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(RELATED_TASK.into(), json!({ "taskId": record.id }));
            }
            Ok(Value::Object(result))
        }
        (TaskStatus::Failed, _, Some(error)) => {
            let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the task failed");
            Err(ErrorData::new(
                ErrorCode(i32::try_from(code).unwrap_or(-32603)),
                message.to_owned(),
                Some(json!({ "taskId": record.id })),
            ))
        }
        (TaskStatus::Cancelled, ..) => Err(ErrorData::new(
            ErrorCode(-32000),
            format!("task {} was cancelled: it has no result", record.id),
            Some(json!({ "code": "TASK_CANCELLED", "taskId": record.id })),
        )),
        // A record missing what its status carries (a store that lost it): never shown as
        // what it is not.
        _ => Err(ErrorData::internal_error(
            format!("the record of task {} is incomplete", record.id),
            None,
        )),
    }
}
