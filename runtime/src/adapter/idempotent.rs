//! Idempotent `tools/call`: a call whose `_meta` carries an idempotency key runs at most once
//! per caller and key within the window; its retries, on any replica sharing the store, get
//! its first answer.

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, ErrorData};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::input::{Asked, Pending};
use super::{McpHandler, from_json, tasks};
use crate::ledger::Idempotent;
use crate::rpc::ToRpc;

impl McpHandler {
    /// Run `request` under the idempotency `key`: claim it, run the call, and record its
    /// answer (a result, a task, or an internal error) for retries. A call refused before it
    /// ran, or one that asks the client something first, frees the key.
    pub(super) async fn call_idempotent(
        &self,
        key: Value,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().map_or(Value::Null, Value::Object);
        let what = format!("tools/call:{}", request.name);
        let holder = self.holder(&context);
        let claim = match Idempotent::claim(&holder, &key, &what, &args).await {
            Ok(Idempotent::Run(claim)) => claim,
            Ok(Idempotent::Replay(outcome)) => return replay(outcome),
            Err(error) => return Err(error.to_rpc()),
        };
        let response = self.call_tool_once(request, context).await;
        let outcome = match &response {
            // Refused for its rate: it did not run, and a retry later may.
            Ok(CallToolResponse::Complete(result)) if rate_limited(result) => None,
            Ok(CallToolResponse::Complete(result)) => Some(json!({"complete": result})),
            Ok(CallToolResponse::Task(task)) => Some(json!({"task": task})),
            // An internal error may come after the handler did its work (it failed, panicked
            // or ran out of time): the outcome stands. Other errors refuse the call before
            // it runs (unknown tool, invalid arguments, a missing scope or capability, a
            // limit), and free the key.
            Err(error) if error.code == ErrorCode::INTERNAL_ERROR => Some(json!({"error": error})),
            _ => None,
        };
        match outcome {
            Some(outcome) => Idempotent::settle(&claim, &holder, &outcome).await,
            None => Idempotent::release(&claim, &holder).await,
        }
        response
    }

    /// A `tools/call`, once.
    pub(super) async fn call_tool_once(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.take().map_or(Value::Null, Value::Object);
        let snapshot = self.inner.snapshot();
        if let Some(ability) = snapshot
            .view(self.slot)
            .task_ability(&snapshot.registry, &request.name)
        {
            if tasks::declared(&context) {
                // Boxed: the common path's future stays small.
                return Box::pin(self.call_as_task(ability, request, args, context)).await;
            }
            if ability.task_support() == crate::TaskSupport::Required {
                return Err(tasks::required());
            }
        }
        let holder = self.holder(&context);
        let (ctx, question) =
            self.asking_context(context, Asked::tool_call(&mut request, &args), None)?;
        let result = snapshot
            .view(self.slot)
            .call(&snapshot.registry, ctx, &holder, &request.name, args)
            .await;
        let failed = result.as_ref().map_or(true, |r| r.is_error == Some(true));
        match Pending::answer(question.as_ref(), &self.inner, failed)? {
            Some(input) => Ok(input.into()),
            None => result.map(Into::into),
        }
    }
}

/// The first call's answer, as recorded.
fn replay(mut outcome: Value) -> Result<CallToolResponse, ErrorData> {
    if let Some(error) = outcome.get_mut("error").map(Value::take) {
        return Err(serde_json::from_value(error).unwrap_or_else(|_| {
            ErrorData::internal_error("the first call with this idempotency key failed", None)
        }));
    }
    if let Some(task) = outcome.get_mut("task").map(Value::take) {
        return from_json(task).map(CallToolResponse::Task);
    }
    let result = outcome.get_mut("complete").map_or(Value::Null, Value::take);
    from_json::<CallToolResult>(result).map(CallToolResponse::Complete)
}

/// Whether a tool result is the `RATE_LIMITED` refusal of a call that did not run: a native
/// `isError` result, or an MCP-AQL envelope (`isError: false`, the code under `error`).
fn rate_limited(result: &CallToolResult) -> bool {
    let code = crate::ErrorCode::RateLimited.as_str();
    result
        .content
        .first()
        .and_then(|block| block.as_text())
        .and_then(|text| serde_json::from_str::<Value>(&text.text).ok())
        .is_some_and(|answer| {
            (result.is_error == Some(true) && answer["code"] == code)
                || (answer["success"] == false && answer["error"]["code"] == code)
        })
}
