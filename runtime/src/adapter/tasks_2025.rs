//! Tasks as protocol 2025-11-25 has them (its experimental tasks utility): a `tools/call`
//! that carries `params.task` answers at once with the task; `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel` read and end it; `notifications/tasks/status` tells the
//! session when it ended. The tasks are the same records, on the same store, as the
//! 2026-07-28 extension's ([`crate::task`]); each version has its own shape and codes.
//!
//! rmcp reads `tasks/get` and `tasks/cancel` as the 2026-07-28 requests and drops
//! `params.task`, so the transports hand these requests over renamed, under [`METHODS`]'s
//! prefix, as they came: in a session of that version only.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::ServerHandler as _;
use rmcp::model::{
    CallToolRequestParams, CustomNotification, CustomResult, ErrorCode, ErrorData,
    PaginatedRequestParams, ProtocolVersion, ServerNotification, TaskStatus,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::McpHandler;
use super::input::Asked;
use crate::context::CancellationToken;
use crate::error::Lookup;
use crate::rpc::ToRpc;
use crate::task::wire_2025;
use crate::{AbilityError, TaskSupport};

/// The prefix a transport puts before the method of a request this room answers.
pub(crate) const PREFIX: &str = "abilities/2025-11-25/";

/// The methods this room answers (after [`PREFIX`]): `tools/call` only with `params.task`.
pub(crate) const METHODS: [&str; 6] = [
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
];

/// The capability a 2025-11-25 session is told of in `initialize`: listing and cancelling
/// tasks, and `tools/call` as a task.
fn capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// The `initialize` answer of a 2025-11-25 session, telling of the tasks capability;
/// `None` for another version (whose answer stays as it is).
pub(crate) fn announced(
    result: &rmcp::model::InitializeResult,
) -> Option<rmcp::model::ServerResult> {
    if result.protocol_version != ProtocolVersion::V_2025_11_25 {
        return None;
    }
    let mut answer = serde_json::to_value(result).ok()?;
    answer
        .get_mut("capabilities")?
        .as_object_mut()?
        .insert("tasks".into(), capability());
    Some(rmcp::model::ServerResult::CustomResult(CustomResult(
        answer,
    )))
}

/// `message` renamed for this room when it is one of its requests (`tools/call` only with
/// `params.task`): what a transport of a 2025-11-25 session hands rmcp in its place.
pub(crate) fn renamed(message: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(message).ok()?;
    let method = message.get("method")?.as_str()?;
    if !METHODS.contains(&method) || message.get("id").is_none() {
        return None;
    }
    if method == "tools/call" && message.pointer("/params/task").is_none_or(Value::is_null) {
        return None;
    }
    message["method"] = Value::String(format!("{PREFIX}{method}"));
    serde_json::to_vec(&message).ok()
}

/// Whether the request's session speaks protocol 2025-11-25.
pub(super) fn speaks(context: &RequestContext<RoleServer>) -> bool {
    context
        .peer
        .peer_info()
        .is_some_and(|info| info.protocol_version == ProtocolVersion::V_2025_11_25)
}

/// The answer to a `tools/call` without `task` of a tool that must run as one: `-32601`.
pub(super) fn required(name: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("tool {name} runs only as a task: call it with `params.task`"),
        None,
    )
}

impl McpHandler {
    /// Whether this endpoint's tools may run as tasks: a 2025-11-25 session is told of the
    /// capability, and its task requests are this room's.
    pub(crate) fn offers_tasks(&self) -> bool {
        self.inner.snapshot().view(self.slot).runs_tasks()
    }

    /// A request a transport renamed under [`PREFIX`]: `method` is its own name.
    pub(super) async fn tasks_2025(
        &self,
        method: &str,
        params: Option<Value>,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if !speaks(&context) {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {PREFIX}{method}"),
                None,
            ));
        }
        let params = params.unwrap_or_else(|| json!({}));
        let owner = self.caller(&context);
        let owner = owner.principal();
        let tasks = &self.inner.tasks;
        let answer = match method {
            "tools/call" => self.call_2025(params, context).await?,
            "tools/list" => self.list_tools_2025(params, context).await?,
            "tasks/get" => {
                let id = task_id(&params)?;
                let work = tasks.record(id, owner);
                wire_2025::task(&self.traced("tasks/get", &context, work).await?)
            }
            "tasks/cancel" => {
                let id = task_id(&params)?;
                let work = tasks.cancel_now(id, owner);
                wire_2025::task(&self.traced("tasks/cancel", &context, work).await?)
            }
            "tasks/list" => {
                let cursor = match params.get("cursor") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(cursor)) => Some(cursor.as_str()),
                    Some(_) => {
                        return Err(ErrorData::invalid_params(
                            "Invalid params for tasks/list: the cursor must be a string",
                            None,
                        ));
                    }
                };
                let work = tasks.list(owner, cursor);
                let (page, next) = self.traced("tasks/list", &context, work).await?;
                let mut answer =
                    json!({"tasks": page.iter().map(wire_2025::task).collect::<Vec<_>>()});
                if let Some(next) = next {
                    answer["nextCursor"] = json!(next);
                }
                answer
            }
            "tasks/result" => {
                let id = task_id(&params)?.to_owned();
                let work = self.ended(id, owner.to_owned());
                let record = self.traced("tasks/result", &context, work).await?;
                wire_2025::outcome(&record)?
            }
            other => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("Method not found: {PREFIX}{other}"),
                    None,
                ));
            }
        };
        Ok(CustomResult(answer))
    }

    /// `tools/call` with `params.task`: the task is recorded, the answer is the task, and the
    /// call runs in the background, through the same pipeline (and confirmation gate) as any.
    async fn call_2025(
        &self,
        params: Value,
        context: RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let mut request: CallToolRequestParams = serde_json::from_value(params).map_err(|e| {
            ErrorData::invalid_params(format!("Invalid params for tools/call: {e}"), None)
        })?;
        let snapshot = self.inner.snapshot();
        let view = snapshot.view(self.slot);
        let Some(ability) = view.task_ability(&snapshot.registry, &request.name) else {
            if view.has_tool(&request.name) {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "tool {} does not run as a task: call it without `params.task`",
                        request.name
                    ),
                    None,
                ));
            }
            return Err(AbilityError::unknown(Lookup::Tool, &request.name).to_rpc());
        };
        let args = request.arguments.take().map_or(Value::Null, Value::Object);
        let owner = self.caller(&context);
        let report = McpHandler::reporter(&context);
        let holding = (self.inner.guards.confirms && ability.needs_confirmation())
            .then(|| self.holder_of(&context));
        let peer = context.peer.clone();
        let cancel = CancellationToken::new();
        let live = self.inner.tasks.create(&owner, cancel.clone()).await?;
        let created = live.record().await;
        // Questions the handler asks go to the session, as in any call of this version,
        // marked as the task's; the task is `input_required` while one waits.
        let mut context = context;
        context
            .extensions
            .insert(super::client::RelatedTask(Arc::clone(&live)));
        let ctx = match self.asking_context(context, Asked::tool_call(&mut request, &args), None) {
            Ok((ctx, _)) => ctx,
            Err(error) => {
                self.inner.tasks.discard(&live).await;
                return Err(error);
            }
        };
        let ctx = ctx
            .with_cancellation(cancel)
            .with_timeout(self.inner.tasks.ttl())
            .with_via("task");
        let inner = Arc::clone(&self.inner);
        let stages = self.inner.snapshot().view(self.slot).stages();
        let principal = owner.principal().to_owned();
        let name = request.name.clone();
        let id = created.id.clone();
        let task = id.clone();
        let run = async move {
            let held = super::tasks::Held {
                inner: Arc::clone(&inner),
                holding,
            };
            let call = held.run(&ability, ctx, args, report.as_ref(), stages);
            let ended = super::tasks::settle(Arc::clone(&inner), Arc::clone(&live), call).await;
            // The session hears that the task ended (its status, as `tasks/get` reads it).
            if let Ok(record) = inner.tasks.record(&task, &principal).await {
                let note = CustomNotification::new(
                    "notifications/tasks/status",
                    Some(wire_2025::task(&record)),
                );
                let note = ServerNotification::CustomNotification(note);
                if let Err(error) = peer.send_notification(note).await {
                    tracing::debug!(%error, "a task's status notification was not sent");
                }
            }
            ended
        };
        tokio::spawn(crate::instruments::Instruments::task_run(&name, &id, run));
        Ok(wire_2025::created(&created))
    }

    /// `tools/list` of this version: each tool that may run as a task says so in
    /// `execution.taskSupport` (a tool without it runs only in its request).
    async fn list_tools_2025(
        &self,
        params: Value,
        context: RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let request: Option<PaginatedRequestParams> =
            serde_json::from_value(params).map_err(|e| {
                ErrorData::invalid_params(format!("Invalid params for tools/list: {e}"), None)
            })?;
        let listed = self.list_tools(request, context).await?;
        let mut answer = serde_json::to_value(listed)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let snapshot = self.inner.snapshot();
        let view = snapshot.view(self.slot);
        if let Some(Value::Array(tools)) = answer.get_mut("tools") {
            for tool in tools {
                let Some(name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let support = match view.task_ability(&snapshot.registry, name) {
                    Some(ability) if ability.task_support() == TaskSupport::Required => "required",
                    Some(_) => "optional",
                    None => continue,
                };
                tool["execution"] = json!({"taskSupport": support});
            }
        }
        Ok(answer)
    }

    /// The task `id` of `owner`, once it has ended: `tasks/result` waits for it.
    async fn ended(&self, id: String, owner: String) -> Result<crate::task::TaskRecord, ErrorData> {
        let tasks = &self.inner.tasks;
        let record = tasks.record(&id, &owner).await?;
        if record.status.is_terminal() {
            return Ok(record);
        }
        let key = super::next_session();
        let (sender, mut changes) = tokio::sync::mpsc::unbounded_channel();
        tasks
            .watch(std::slice::from_ref(&id), &owner, key, &sender)
            .await;
        drop(sender);
        let _forget = Forget(tasks, key);
        while let Some(change) = changes.recv().await {
            if matches!(
                change.task.status,
                TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
            ) {
                break;
            }
        }
        tasks.record(&id, &owner).await
    }
}

/// Stop following a task when `tasks/result` ends (answered, or dropped with its request).
struct Forget<'a>(&'a crate::task::Tasks, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.forget(self.1);
    }
}

/// The `taskId` of a task request.
fn task_id(params: &Value) -> Result<&str, ErrorData> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params("Invalid params: `taskId` must be a string", None))
}
