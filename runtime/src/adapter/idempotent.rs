//! Idempotent `tools/call`: a call whose `_meta` carries an idempotency key runs at most once
//! per caller and key within the window; its retries, on any replica sharing the store, get
//! its first answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::future::Either;
use rmcp::RoleServer;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ErrorData};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::input::{Asked, Pending};
use super::{McpHandler, tasks};
use crate::context::{Attempt, HeldKey};
use crate::ledger::{Idempotent, Recorded};
use crate::rpc::ToRpc;
use crate::surface::Served;

impl McpHandler {
    /// Run `request` under the idempotency `key`: claim it, run the call, and record its
    /// answer (a result, a task, or an error after its handler started) for retries. A call
    /// refused before a handler started (unknown tool, invalid arguments, a missing scope,
    /// a rate or a limit, a confirmation to give), or one that asks the client something
    /// first, frees the key. An MCP-AQL operation takes the key as if it were sent among its
    /// own parameters, so a key means the same wherever the client put it.
    pub(super) async fn call_idempotent(
        &self,
        key: Value,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.inner.guards.keeps_keys {
            return Err(crate::ledger::keys_not_kept(crate::IDEMPOTENCY_META_KEY).to_rpc());
        }
        let args = request.arguments.clone().map_or(Value::Null, Value::Object);
        let snapshot = self.inner.snapshot();
        if snapshot
            .view(self.slot)
            .claims_own_keys(&request.name, &args)
        {
            let attempt = Attempt::new(Some(HeldKey::Handed(key)));
            let response = self
                .call_tool_once(request, context, Some(Arc::clone(&attempt)))
                .await;
            // A key sent in `_meta` and refused (reused, in use, malformed) is a JSON-RPC
            // error on every surface.
            if let Some(refused) = attempt.key_refusal() {
                return Err(refused.to_rpc());
            }
            return response;
        }
        drop(snapshot);
        let what = format!("tools/call:{}", request.name);
        let holder = self.holder(&context);
        let claim = match Idempotent::claim(&holder, &key, &what, &args).await {
            Ok(Idempotent::Run(claim)) => claim,
            Ok(Idempotent::Replay(outcome)) => return replay(outcome),
            Err(error) => return Err(error.to_rpc()),
        };
        let attempt = Attempt::new(Some(HeldKey::Claimed(key)));
        let response = self
            .call_tool_once(request, context, Some(Arc::clone(&attempt)))
            .await;
        let outcome = match &response {
            // A task was created: its handler runs on.
            Ok(CallToolResponse::Task(task)) => Some(Recorded::Task(Box::new(task.clone()))),
            // Refused before any handler started: nothing happened, and a retry may run. Or
            // answered with the call's rounds of input: it runs again, from the start.
            _ if !attempt.started() || attempt.asked() => None,
            Ok(CallToolResponse::Complete(result)) => {
                Some(Recorded::Complete(Box::new(result.clone())))
            }
            // A question for the client: the call runs again, from the start, with its answer.
            Ok(_) => None,
            // The handler started, then failed (an error, a panic, its time limit): what it
            // did before stands, and so does the answer.
            Err(error) => Some(Recorded::Error(error.clone())),
        };
        match outcome {
            Some(outcome) => Idempotent::settle(claim, &outcome).await,
            None => Idempotent::release(claim).await,
        }
        response
    }

    /// A `tools/call`, once; `attempt` records whether a handler started. What only checks
    /// runs now; the future keeps what the call needs after its handler, and nothing of the
    /// request it no longer reads.
    pub(super) fn call_tool_once(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        attempt: Option<Arc<Attempt>>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        let args = request.arguments.take().map_or(Value::Null, Value::Object);
        let snapshot = self.inner.snapshot();
        if let Some(ability) = snapshot
            .view(self.slot)
            .task_ability(&snapshot.registry, &request.name)
        {
            // A 2025-11-25 session has that version's tasks, asked for with `params.task`
            // (see `tasks_2025`); the 2026-07-28 extension is not its own.
            let speaks_2025 = super::tasks_2025::speaks(&context);
            if tasks::declared(&context) && !speaks_2025 {
                // Boxed: the common path's future stays small.
                let task = self.call_as_task(ability, request, args, context, attempt);
                return Either::Left(Box::pin(task) as Boxed<'_>);
            }
            if ability.task_support() == crate::TaskSupport::Required {
                let refused = if speaks_2025 {
                    super::tasks_2025::required(&request.name)
                } else {
                    tasks::required()
                };
                return Either::Left(Box::pin(std::future::ready(Err(refused))));
            }
        }
        let holder = self.holder(&context);
        let report = McpHandler::reporter(&context);
        let asked = self.asking_context(context, Asked::tool_call(&mut request, &args), None);
        let name = request.name;
        Either::Right(async move {
            let (mut ctx, question) = asked?;
            if let Some(attempt) = &attempt {
                ctx = ctx.with_attempt(Arc::clone(attempt));
            }
            let served = Served {
                holder,
                guards: &self.inner.guards,
                report,
                skills: &snapshot.skills,
            };
            let result = snapshot
                .view(self.slot)
                .call(&snapshot.registry, ctx, &served, &name, args)
                .await;
            let failed = result.as_ref().map_or(true, |r| r.is_error == Some(true));
            let rounds = Pending::answer(question.as_ref(), &self.inner, failed);
            if let (Some(attempt), Ok(Some(_)) | Err(_)) = (&attempt, &rounds) {
                // A question, a capability to declare or answers too large: not an outcome.
                attempt.ask();
            }
            match rounds? {
                Some(input) => Ok(input.into()),
                None => result.map(Into::into),
            }
        })
    }
}

/// A `tools/call` on a rarer path, boxed apart.
type Boxed<'a> = Pin<Box<dyn Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'a>>;

/// The first call's answer, as recorded.
fn replay(outcome: Recorded) -> Result<CallToolResponse, ErrorData> {
    match outcome {
        Recorded::Complete(result) => Ok(CallToolResponse::Complete(*result)),
        Recorded::Task(task) => Ok(CallToolResponse::Task(*task)),
        Recorded::Error(error) => Err(error),
        // Keys are bound to what they were used for: another surface's record is not this
        // call's answer.
        Recorded::Operation { .. } | Recorded::Failed(_) => Err(ErrorData::internal_error(
            "the idempotency key was recorded for an MCP-AQL operation",
            None,
        )),
    }
}
