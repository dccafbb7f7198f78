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
                format!("Method not found: {method}"),
                None,
            ));
        }
        let params = params.unwrap_or_else(|| json!({}));
        let owner = self.owner_2025(&context);
        let owner = owner.name.as_str();
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
            "tasks/list" => self.list_2025(&params, &context).await?,
            "tasks/result" => {
                let id = task_id(&params)?.to_owned();
                self.result_2025(id, owner.to_owned(), &context).await?
            }
            other => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("Method not found: {other}"),
                    None,
                ));
            }
        };
        Ok(CustomResult(answer))
    }

    /// `tasks/list`: a page of the caller's tasks, and the next page's cursor.
    async fn list_2025(
        &self,
        params: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
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
        let owner = self.owner_2025(context);
        if !owner.known {
            return Err(ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                "tasks/list needs a caller the server knows: authenticate, or open a session \
                 (an anonymous caller without one is told apart from no other)",
                None,
            ));
        }
        let work = self.inner.tasks.list(&owner.name, cursor);
        let (page, next) = self.traced("tasks/list", context, work).await?;
        let mut answer = json!({"tasks": page.iter().map(wire_2025::task).collect::<Vec<_>>()});
        if let Some(next) = next {
            answer["nextCursor"] = json!(next);
        }
        Ok(answer)
    }

    /// `tasks/result`: once the task ended, what its call answered. The client may give up
    /// waiting (`notifications/cancelled`, or the server stops): the wait ends with the
    /// request.
    async fn result_2025(
        &self,
        id: String,
        owner: String,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let waiting = self.ended(id, owner);
        let cancelled = context.ct.clone();
        let work = async move {
            tokio::select! {
                ended = waiting => ended,
                () = cancelled.cancelled() => Err(ErrorData::new(
                    ErrorCode(-32800),
                    "tasks/result was cancelled before the task ended",
                    None,
                )),
            }
        };
        let record = self.traced("tasks/result", context, work).await?;
        wire_2025::outcome(&record)
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
        // rmcp reads a request's `_meta` apart, into its context.
        let keyed = context.meta.0.contains_key(crate::IDEMPOTENCY_META_KEY)
            || request
                .meta
                .as_ref()
                .is_some_and(|meta| meta.0.contains_key(crate::IDEMPOTENCY_META_KEY));
        if keyed {
            // A key is never silently ignored; a task is its own record to come back to.
            return Err(ErrorData::invalid_params(
                "an idempotency key is not kept for a call run as a task (protocol 2025-11-25): \
                 send it without the key, and come back to the task by its id",
                None,
            ));
        }
        let args = request.arguments.take().map_or(Value::Null, Value::Object);
        let owner = self.owner_2025(&context);
        let report = McpHandler::reporter(&context);
        let holding = (self.inner.guards.confirms && ability.needs_confirmation())
            .then(|| self.holder_of(&context));
        let peer = context.peer.clone();
        let cancel = CancellationToken::new();
        let live = self
            .inner
            .tasks
            .create_for(&owner.name, owner.limited, cancel.clone())
            .await?;
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
        let background = Background {
            inner: Arc::clone(&self.inner),
            live,
            holding,
            peer,
            owner: owner.name,
            report,
        };
        let stages = self.inner.snapshot().view(self.slot).stages();
        background.spawn(ability, ctx, args, stages, &request.name);
        Ok(wire_2025::created(&created))
    }

    /// Whose tasks a request's are: an authenticated caller's principal; an anonymous
    /// caller's session (anonymous callers share one principal, and a list of their tasks
    /// would show each the others'); an anonymous caller without a session, its client, as
    /// for its tokens (the task id is then the secret, and it cannot list).
    fn owner_2025(&self, context: &RequestContext<RoleServer>) -> Owner {
        let caller = self.caller(context);
        if !caller.is_anonymous() {
            return Owner {
                name: caller.principal().to_owned(),
                limited: true,
                known: true,
            };
        }
        let holder = self.holder(context);
        let known = holder.has_session();
        Owner {
            name: format!("{}@{}", caller.principal(), holder.id()),
            limited: known,
            known,
        }
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

/// What a 2025-11-25 task's call runs with once its request is answered.
struct Background {
    inner: Arc<crate::server::Inner>,
    live: Arc<crate::task::Live>,
    /// The request's holder, for a call that must be confirmed.
    holding: Option<(crate::Caller, crate::ledger::Session, Option<Value>)>,
    /// The session, told when the task ends.
    peer: rmcp::Peer<RoleServer>,
    owner: String,
    report: Option<crate::pipeline::Reporter>,
}

impl Background {
    /// Run the call in the background, through the pipeline (and the confirmation gate); its
    /// outcome recorded, then the session told (`notifications/tasks/status`).
    fn spawn(
        self,
        ability: Arc<crate::Ability>,
        ctx: crate::Context,
        args: Value,
        stages: &'static [&'static dyn crate::pipeline::Stage],
        name: &str,
    ) {
        let id = self.live.id().to_owned();
        let run = async move {
            let held = super::tasks::Held {
                inner: Arc::clone(&self.inner),
                holding: self.holding,
            };
            let call = held.run(&ability, ctx, args, self.report.as_ref(), stages);
            let live = Arc::clone(&self.live);
            let ended = super::tasks::settle(Arc::clone(&self.inner), live, call).await;
            // The session hears that the task ended (its status, as `tasks/get` reads it).
            if let Ok(record) = self.inner.tasks.record(self.live.id(), &self.owner).await {
                let note = CustomNotification::new(
                    "notifications/tasks/status",
                    Some(wire_2025::task(&record)),
                );
                let note = ServerNotification::CustomNotification(note);
                if let Err(error) = self.peer.send_notification(note).await {
                    tracing::debug!(%error, "a task's status notification was not sent");
                }
            }
            ended
        };
        tokio::spawn(crate::instruments::Instruments::task_run(name, &id, run));
    }
}

/// Whose a 2025-11-25 task is.
struct Owner {
    /// The owner the records name.
    name: String,
    /// It has a share of running tasks of its own.
    limited: bool,
    /// It is told apart from other callers: it may list its tasks.
    known: bool,
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
