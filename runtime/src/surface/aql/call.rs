//! One MCP-AQL tool call: a single operation or a batch, answered with the draft's envelope.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::envelope::{Answer, failure, respond, success};
use super::idempotent::operation;
use super::limits::{check_payload, too_large};
use super::{Endpoint, Table};
use crate::surface::Served;
use crate::{AbilityError, Context, ErrorCode, Registry};

/// Answer a call to the tool serving `endpoint`.
pub(crate) async fn call(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: Context,
    served: &Served<'_>,
    args: Value,
) -> CallToolResult {
    let answer = match check_payload(table, &args) {
        Err(error) => Answer::Failed(error, None),
        Ok(()) => match args.get("operations") {
            Some(operations) => {
                batch(table, registry, endpoint, &ctx, served, &args, operations).await
            }
            None => single(table, registry, endpoint, &ctx, served, &args).await,
        },
    };
    respond(table, answer)
}

async fn single(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    served: &Served<'_>,
    args: &Value,
) -> Answer {
    let Some(request) = args.as_object() else {
        return Answer::Failed(
            AbilityError::new(
                ErrorCode::ValidationMissingParam,
                "Missing required parameter 'operation'",
            ),
            None,
        );
    };
    match operation(table, registry, endpoint, ctx, served, request).await {
        Ok((data, warnings)) => Answer::Done(data, warnings),
        Err((error, issued)) => Answer::Failed(error, issued),
    }
}

async fn batch(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    served: &Served<'_>,
    args: &Value,
    operations: &Value,
) -> Answer {
    let Some(items) = operations.as_array().filter(|items| !items.is_empty()) else {
        return Answer::Failed(
            AbilityError::new(
                ErrorCode::ValidationInvalidType,
                "Parameter 'operations' expected a non-empty array of {operation, params}",
            ),
            None,
        );
    };
    let extra: Vec<&String> = args
        .as_object()
        .map(|a| {
            a.keys()
                .filter(|k| *k != "operations" && !k.starts_with('_'))
                .collect()
        })
        .unwrap_or_default();
    if !extra.is_empty() {
        return Answer::Failed(
            AbilityError::new(
                ErrorCode::ValidationUnknownParam,
                format!(
                    "A batch request holds only 'operations', not {}",
                    extra
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            None,
        );
    }
    let limit = table.config.limits.max_batch_operations;
    if items.len() > limit {
        return Answer::Failed(
            too_large("batch_operations", limit, items.len(), "operations"),
            None,
        );
    }
    let mut results = Vec::new();
    let (mut succeeded, mut failed) = (0, 0);
    for (index, item) in items.iter().enumerate() {
        let name = item.get("operation").cloned().unwrap_or(Value::Null);
        let outcome = match item.as_object() {
            Some(request) => operation(table, registry, endpoint, ctx, served, request).await,
            None => Err((
                AbilityError::new(
                    ErrorCode::ValidationInvalidType,
                    format!("Batch item {index} expected an object {{operation, params}}"),
                ),
                None,
            )),
        };
        let halts =
            matches!(&outcome, Err((error, _)) if error.code() == &ErrorCode::ConfirmationRequired);
        let envelope = match outcome {
            Ok((data, warnings)) => {
                succeeded += 1;
                success(data, warnings)
            }
            Err((error, issued)) => {
                if !halts {
                    failed += 1;
                }
                failure(&error, issued.as_ref())
            }
        };
        if halts {
            let halted = json!({"index": index, "operation": name, "result": envelope});
            let pending: Vec<Value> = items
                .iter()
                .enumerate()
                .skip(index + 1)
                .map(|(i, item)| {
                    json!({"index": i, "operation": item.get("operation"), "params": item.get("params")})
                })
                .collect();
            let total = items.len();
            return Answer::Batch(json!({
                "success": true,
                "data": null,
                "results": results,
                "summary": {
                    "total": total, "succeeded": succeeded, "failed": failed,
                    "halted": 1, "pending": pending.len()
                },
                "halted_at": halted,
                "pending_operations": pending
            }));
        }
        results.push(json!({"index": index, "operation": name, "result": envelope}));
    }
    Answer::Batch(json!({
        "success": true,
        "data": null,
        "results": results,
        "summary": {"total": items.len(), "succeeded": succeeded, "failed": failed}
    }))
}
