//! `tools/call` of an ability that may run as a background task (see [`crate::task`]).
//!
//! The handler starts in the request. What it asks before it first waits is asked in the
//! request, as multi-round input (`input_required`, no task yet); a handler that finishes
//! at once is answered at once. Only a handler still running after that becomes a task:
//! the record is written, the answer is the task, and the handler runs on in the
//! background, where its questions wait for `tasks/update`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, DetailedTask, ErrorData, GetMeta,
    ServerNotification, TASKS_EXTENSION_ID, TaskStatusNotification, TaskStatusNotificationParams,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::McpHandler;
use super::input::{Asked, Pending};
use crate::context::CancellationToken;
use crate::ledger::Holder;
use crate::pipeline::Confirm;
use crate::surface::native;
use crate::task::ListenTasks;
use crate::{Ability, AbilityError, pipeline};
use futures_util::FutureExt;

/// Whether the request's client declared the tasks extension.
pub(super) fn declared(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// The answer to a call of a `task = "required"` ability from a client without the tasks
/// extension: `-32021`, naming it.
pub(super) fn required() -> ErrorData {
    let mut needed = ClientCapabilities::default();
    needed.extensions = Some(
        [(
            TASKS_EXTENSION_ID.to_owned(),
            rmcp::model::JsonObject::new(),
        )]
        .into_iter()
        .collect(),
    );
    ErrorData::missing_required_client_capability(needed)
}

/// The task ids a `subscriptions/listen` request follows, as its transport read them.
pub(super) fn listened(context: &RequestContext<RoleServer>) -> Option<ListenTasks> {
    context
        .extensions
        .get::<ListenTasks>()
        .or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<ListenTasks>())
        })
        .cloned()
}

/// Send a followed task's change to its stream: `notifications/tasks`, marked with the
/// stream's subscription id.
pub(super) async fn notify(context: &RequestContext<RoleServer>, task: DetailedTask) {
    let params = TaskStatusNotificationParams::new(task);
    let mut notification =
        ServerNotification::TaskStatusNotification(TaskStatusNotification::new(params));
    notification
        .get_meta_mut()
        .set_subscription_id(context.id.clone());
    if let Err(error) = context.peer.send_notification(notification).await {
        tracing::debug!(%error, "a task notification was not sent");
    }
}

impl McpHandler {
    pub(super) async fn call_as_task(
        &self,
        ability: Arc<Ability>,
        mut request: CallToolRequestParams,
        args: Value,
        context: RequestContext<RoleServer>,
        attempt: Option<Arc<crate::context::Attempt>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let owner = self.caller(&context);
        let report = McpHandler::reporter(&context);
        // A call that must be confirmed is confirmed by the task's first step, held by the
        // request's holder.
        let holding = (self.inner.guards.confirms && ability.needs_confirmation())
            .then(|| self.holder_of(&context));
        let detach = super::Detach::default();
        let (mut ctx, question) = self.asking_context(
            context,
            Asked::tool_call(&mut request, &args),
            Some(Arc::clone(&detach)),
        )?;
        if let Some(attempt) = attempt {
            ctx = ctx.with_attempt(attempt);
        }
        // The task's own cancellation and lifetime, not the request's: the request ends
        // with this answer.
        let cancel = CancellationToken::new();
        let ctx = ctx
            .with_cancellation(cancel.clone())
            .with_timeout(self.inner.tasks.ttl())
            .with_via("task");
        let stages = self.inner.snapshot().view(self.slot).stages();
        // The task is recorded (within the caller's and the server's limits) before its
        // handler starts: a call refused for a limit has done nothing.
        let live = self.inner.tasks.create(&owner, cancel).await?;
        let inner = Arc::clone(&self.inner);
        let mut call = Box::pin(async move {
            let held = Held { inner, holding };
            held.run(&ability, ctx, args, report.as_ref(), stages).await
        });
        let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        let failed = matches!(first, Poll::Ready(Err(_)));
        let asked = match Pending::answer(question.as_ref(), &self.inner, failed) {
            Ok(asked) => asked,
            Err(error) => {
                self.inner.tasks.discard(&live).await;
                return Err(error);
            }
        };
        if let Some(input) = asked {
            self.inner.tasks.discard(&live).await;
            return Ok(input.into());
        }
        if let Poll::Ready(outcome) = first {
            self.inner.tasks.discard(&live).await;
            return Ok(native::result(outcome).into());
        }
        // Set before the handler is polled again: from here on it is a task.
        detach.become_task(Arc::clone(&live)).await;
        let created = live.created().await;
        let run = settle(Arc::clone(&self.inner), live, call);
        // The task's run, below the request's span, when the server traces.
        tokio::spawn(crate::instruments::Instruments::task_run(
            &request.name,
            &created.task.task_id,
            run,
        ));
        Ok(created.into())
    }
}

/// A task's run once its call is detached from the request: the call to its end, and its
/// outcome recorded. The handler's own panics are its call's INTERNAL_ERROR already; whatever
/// else fails on the way still settles the task. Ends with the error's code when it failed.
pub(super) async fn settle(
    inner: Arc<crate::server::Inner>,
    live: Arc<crate::task::Live>,
    call: impl Future<Output = Result<crate::CallOutput, AbilityError>>,
) -> Result<(), String> {
    let outcome = AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            Err(AbilityError::internal(
                "the task's call failed inside the server",
            ))
        });
    let ended = outcome
        .as_ref()
        .map(drop)
        .map_err(|e| e.code().as_str().to_owned());
    inner.tasks.finish(&live, outcome).await;
    ended
}

/// What a task's call runs with: the server, and (for a call that must be confirmed) the
/// request's holder, owned, as the task outlives the request.
pub(super) struct Held {
    pub(super) inner: Arc<crate::server::Inner>,
    pub(super) holding: Option<(crate::Caller, crate::ledger::Session, Option<Value>)>,
}

impl Held {
    /// The call through the pipeline, through the confirmation gate when it has a holder.
    pub(super) async fn run(
        self,
        ability: &Arc<Ability>,
        ctx: crate::Context,
        mut args: Value,
        report: Option<&pipeline::Reporter>,
        stages: &[&dyn pipeline::Stage],
    ) -> Result<crate::CallOutput, AbilityError> {
        let guards = &self.inner.guards;
        let around = pipeline::Around::new(guards, report, ability);
        let Some((caller, session, client)) = self.holding else {
            return pipeline::run(ability, ctx, args, around, stages).await;
        };
        let inner = &self.inner;
        let holder = Holder::new(
            &inner.ledger,
            &inner.seal,
            &caller,
            session,
            client.as_ref().map_or(
                crate::ledger::ClientInfo::None,
                crate::ledger::ClientInfo::Sent,
            ),
        );
        let Some(gate) = Confirm::of_tool(ability, &holder, guards, &mut args) else {
            return pipeline::run(ability, ctx, args, around, stages).await;
        };
        let ctx = if gate.continues() {
            ctx.continuing()
        } else {
            ctx
        };
        let mut gated: Vec<&dyn pipeline::Stage> = stages.to_vec();
        gated.push(&gate);
        let outcome = pipeline::run(ability, ctx, args, around, &gated).await;
        gate.settle(ability, &caller, &outcome).await;
        outcome
    }
}
