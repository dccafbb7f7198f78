//! One MCP-AQL tool call: a single operation or a batch, answered with the draft's envelope.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::envelope::{Answer, Batch, Envelope, Item, Pending, respond};
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
        Err(error) if args.get("operations").is_some() => Answer::Refused(error),
        Err(error) => Answer::One(Envelope::Failed(error)),
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
        return Answer::One(Envelope::Failed(AbilityError::new(
            ErrorCode::ValidationMissingParam,
            "Missing required parameter 'operation'",
        )));
    };
    Answer::One(
        match operation(table, registry, endpoint, ctx, served, request).await {
            Ok(done) => Envelope::Done(done),
            Err(error) => Envelope::Failed(error),
        },
    )
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
    let items = match batch_items(table, args, operations) {
        Ok(items) => items,
        Err(refused) => return Answer::Refused(refused),
    };
    let mut envelope = Batch::new(items.len());
    for (index, item) in items.iter().enumerate() {
        let name = operation_of(item);
        let outcome = match item.as_object() {
            Some(request) => operation(table, registry, endpoint, ctx, served, request).await,
            None => Err(AbilityError::new(
                ErrorCode::ValidationInvalidType,
                format!("Batch item {index} expected an object {{operation, params}}"),
            )),
        };
        let halts =
            matches!(&outcome, Err(error) if error.code() == &ErrorCode::ConfirmationRequired);
        let result = match outcome {
            Ok(done) => {
                envelope.summary.succeeded += 1;
                Envelope::Done(done)
            }
            Err(error) => {
                if !halts {
                    envelope.summary.failed += 1;
                }
                Envelope::Failed(error)
            }
        };
        let item = Item {
            index,
            operation: name,
            result,
        };
        if halts {
            let pending = pending_after(items, index);
            envelope.summary.halted = Some(1);
            envelope.summary.pending = Some(pending.len());
            envelope.halted_at = Some(item);
            envelope.pending_operations = Some(pending);
            return Answer::Batch(envelope);
        }
        envelope.results.push(item);
    }
    Answer::Batch(envelope)
}

/// A batch's operations, or its refusal as a whole: `operations` must be a non-empty array
/// within the limit, and the request hold nothing else (but reserved `_` keys).
fn batch_items<'v>(
    table: &Table,
    args: &Value,
    operations: &'v Value,
) -> Result<&'v Vec<Value>, AbilityError> {
    let Some(items) = operations.as_array().filter(|items| !items.is_empty()) else {
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            "Parameter 'operations' expected a non-empty array of {operation, params}",
        ));
    };
    let extra: Vec<&str> = args
        .as_object()
        .map(|a| {
            a.keys()
                .filter(|k| *k != "operations" && !k.starts_with('_'))
                .map(String::as_str)
                .collect()
        })
        .unwrap_or_default();
    if !extra.is_empty() {
        return Err(AbilityError::new(
            ErrorCode::ValidationUnknownParam,
            format!(
                "A batch request holds only 'operations', not {}",
                extra.join(", ")
            ),
        ));
    }
    // A key beside `operations` would name no call: it is never silently dropped.
    if args.get("_idempotency_key").is_some() {
        return Err(AbilityError::new(
            ErrorCode::ValidationUnknownParam,
            "A batch takes an idempotency key in _meta (for the whole batch) or in each \
             operation's params, not beside 'operations'",
        )
        .with_details(json!({"param_name": "_idempotency_key"})));
    }
    let limit = table.config.limits.max_batch_operations;
    if items.len() > limit {
        return Err(too_large(
            "batch_operations",
            limit,
            items.len(),
            "operations",
        ));
    }
    Ok(items)
}

/// The operations of a batch after the one at `index`, which halted it.
fn pending_after(items: &[Value], index: usize) -> Vec<Pending> {
    items
        .iter()
        .enumerate()
        .skip(index + 1)
        .map(|(index, item)| Pending {
            index,
            operation: operation_of(item),
            params: item.get("params").filter(|p| p.is_object()).cloned(),
        })
        .collect()
}

/// A batch item's operation name as its answer names it: the name sent, or (when none was,
/// or it is not a string) the JSON text of what was, so every item's `operation` is a string.
fn operation_of(item: &Value) -> String {
    match item.get("operation") {
        Some(Value::String(name)) => name.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}
