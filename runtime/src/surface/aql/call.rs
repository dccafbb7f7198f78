//! One MCP-AQL tool call: a single operation or a batch, answered with the draft's envelope.

use std::sync::OnceLock;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::confirm::Issued;
use super::idempotent::operation;
use super::introspect::introspect;
use super::stages::{Gate, Params, Query};
use super::{Endpoint, Operation, Severity, Table, recoverable, relations, warning};
use crate::ledger::Holder;
use crate::pipeline::{self, Stage};
use crate::{AbilityError, Context, ErrorCode, Registry, Semantic};

/// Keys of a request that are not parameters.
const RESERVED: [&str; 3] = ["operation", "params", "operations"];

/// Answer a call to the tool serving `endpoint`.
pub(crate) async fn call(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: Context,
    holder: &Holder<'_>,
    args: Value,
) -> CallToolResult {
    let answer = match check_payload(table, &args) {
        Err(error) => Answer::Failed(error, None),
        Ok(()) => match args.get("operations") {
            Some(operations) => {
                batch(table, registry, endpoint, &ctx, holder, &args, operations).await
            }
            None => single(table, registry, endpoint, &ctx, holder, &args).await,
        },
    };
    respond(table, answer)
}

/// What one request comes to, before it is an envelope.
enum Answer {
    /// A single operation's data and warnings.
    Done(Value, Vec<Value>),
    /// A batch's whole envelope (always a success: items carry their own outcomes).
    Batch(Value),
    /// A failure, with the confirmation to offer when it is `CONFIRMATION_REQUIRED`.
    Failed(AbilityError, Option<Issued>),
}

/// The envelope as a tool result: its JSON as text; `isError` only for failures the caller
/// cannot fix by changing the request.
fn respond(table: &Table, answer: Answer) -> CallToolResult {
    let (envelope, mut is_error) = match answer {
        Answer::Done(data, warnings) => (success(data, warnings), false),
        Answer::Batch(envelope) => (envelope, false),
        Answer::Failed(error, issued) => {
            (failure(&error, issued.as_ref()), !recoverable(error.code()))
        }
    };
    let mut text = envelope.to_string();
    let limit = table.config.limits.max_response_size;
    if text.len() > limit {
        let error = too_large("response_size", limit, text.len(), "bytes");
        is_error = !recoverable(error.code());
        text = failure(&error, None).to_string();
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.is_error = Some(is_error);
    result
}

/// The most warnings an envelope carries, as the draft allows.
const MAX_WARNINGS: usize = 10;

/// The success envelope, with `warnings` when there are any (deduplicated, at most ten).
/// An operation's `data`: its structured value; without one, its content blocks (a bridged
/// upstream's text, images...): the text itself when there is one text block and nothing
/// else, else `{"content": [blocks]}`; `null` when it returned nothing.
fn data_of(value: Option<Value>, content: Option<Vec<crate::Content>>) -> Value {
    let blocks = match (value, content) {
        (Some(value), _) => return value,
        (None, Some(blocks)) if !blocks.is_empty() => blocks,
        _ => return Value::Null,
    };
    let blocks: Vec<Value> = blocks
        .iter()
        .filter_map(|b| serde_json::to_value(b).ok())
        .collect();
    match blocks.as_slice() {
        [one] if one["type"] == "text" && one["text"].is_string() => one["text"].clone(),
        _ => json!({"content": blocks}),
    }
}

fn success(data: Value, mut warnings: Vec<Value>) -> Value {
    let mut envelope = json!({"success": true, "data": data});
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| seen.insert(w.to_string()));
    warnings.truncate(MAX_WARNINGS);
    if !warnings.is_empty() {
        envelope["warnings"] = Value::Array(warnings);
    }
    envelope
}

/// The failure envelope. A confirmation travels as the draft asks, in `error.details` and
/// as the top-level `confirmation`, both written here from the token the gate issued.
fn failure(error: &AbilityError, issued: Option<&Issued>) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), json!(error.code().as_str()));
    body.insert("message".into(), json!(error.message()));
    let mut details = error.details().filter(|d| d.is_object()).cloned();
    if let (Some(issued), Some(Value::Object(details))) = (issued, &mut details) {
        details.insert("confirmation_token".into(), json!(issued.token));
        details.insert("expires_at".into(), json!(issued.expires_at));
    }
    if let Some(details) = details {
        body.insert("details".into(), details);
    }
    let mut envelope = json!({"success": false, "error": body});
    if let Some(issued) = issued {
        envelope["confirmation"] = json!({
            "token": issued.token,
            "expires_at": issued.expires_at,
            "message": issued.message,
        });
    }
    envelope
}

fn too_large(kind: &str, limit: usize, actual: usize, unit: &str) -> AbilityError {
    AbilityError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!("Payload exceeds {kind} limit of {limit} {unit}"),
    )
    .with_details(json!({
        "limit_type": kind, "limit_value": limit, "actual_value": actual, "unit": unit
    }))
}

/// Request size, string length, array length and nesting depth.
fn check_payload(table: &Table, args: &Value) -> Result<(), AbilityError> {
    let limits = &table.config.limits;
    let size = args.to_string().len();
    if size > limits.max_request_size {
        return Err(too_large(
            "request_size",
            limits.max_request_size,
            size,
            "bytes",
        ));
    }
    fn walk(value: &Value, depth: usize, limits: &super::AqlLimits) -> Result<(), AbilityError> {
        if depth > limits.max_nesting_depth {
            return Err(too_large(
                "nesting_depth",
                limits.max_nesting_depth,
                depth,
                "levels",
            ));
        }
        match value {
            Value::String(s) if s.len() > limits.max_string_length => Err(too_large(
                "string_length",
                limits.max_string_length,
                s.len(),
                "bytes",
            )),
            Value::Array(items) => {
                if items.len() > limits.max_array_elements {
                    return Err(too_large(
                        "array_elements",
                        limits.max_array_elements,
                        items.len(),
                        "elements",
                    ));
                }
                items.iter().try_for_each(|v| walk(v, depth + 1, limits))
            }
            Value::Object(map) => map.values().try_for_each(|v| walk(v, depth + 1, limits)),
            _ => Ok(()),
        }
    }
    walk(args, 1, limits)
}

/// The request's parameters: `params`, then top-level keys it does not have. A top-level key
/// that `params` also has is ignored, with a warning.
pub(super) fn resolve_params(
    request: &Map<String, Value>,
    warnings: &mut Vec<Value>,
) -> Result<Map<String, Value>, AbilityError> {
    let mut params = match request.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationInvalidType,
                "Parameter 'params' expected 'object'",
            )
            .with_details(json!({"param_name": "params", "expected_type": "object"})));
        }
    };
    for (key, value) in request {
        if RESERVED.contains(&key.as_str()) {
            continue;
        }
        if params.contains_key(key) {
            if params.get(key) != Some(value) {
                warnings.push(warning(
                    "VALIDATION_IGNORED_PARAM_WARNING",
                    Severity::Low,
                    format!("Top-level '{key}' was ignored: 'params.{key}' is used"),
                    json!({"param_name": key}),
                ));
            }
        } else {
            params.insert(key.clone(), value.clone());
        }
    }
    Ok(params)
}

async fn single(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    holder: &Holder<'_>,
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
    match operation(table, registry, endpoint, ctx, holder, request).await {
        Ok((data, warnings)) => Answer::Done(data, warnings),
        Err((error, issued)) => Answer::Failed(error, issued),
    }
}

/// A refused operation: the error, and the token issued when it needs confirmation.
pub(super) type Refusal = (AbilityError, Option<Issued>);

/// Run one `{operation, params}` request through `endpoint`: route it to its ability, then
/// through the pipeline with MCP-AQL's stages.
pub(super) async fn operation_once(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    holder: &Holder<'_>,
    request: &Map<String, Value>,
) -> Result<(Value, Vec<Value>), Refusal> {
    let refused = |error: AbilityError| (error, None);
    let name = match request.get("operation") {
        Some(Value::String(name)) => name.as_str(),
        None | Some(Value::Null) => {
            return Err(refused(AbilityError::new(
                ErrorCode::ValidationMissingParam,
                "Missing required parameter 'operation'. Expected: an operation name; list them with introspect",
            )
            .with_details(json!({"param_name": "operation"}))));
        }
        Some(_) => {
            return Err(refused(
                AbilityError::new(
                    ErrorCode::ValidationInvalidType,
                    "Parameter 'operation' expected 'string'",
                )
                .with_details(json!({"param_name": "operation", "expected_type": "string"})),
            ));
        }
    };
    let mut fallback = Vec::new();
    let mut params = resolve_params(request, &mut fallback).map_err(refused)?;
    if name == "introspect" {
        // The introspection envelope is closed: errors carry a code and a message only.
        let bare = |e: AbilityError| (AbilityError::new(e.code().clone(), e.message()), None);
        check_endpoint(table, endpoint, "introspect", "read", Semantic::Read).map_err(bare)?;
        params.retain(|k, _| !k.starts_with('_'));
        reject_unknown(name, &params, &["query", "name"]).map_err(bare)?;
        return introspect(table, registry, &params)
            .map(|data| (data, Vec::new()))
            .map_err(refused);
    }
    let Some(op) = table.get(name) else {
        let shown: String = name.chars().take(100).collect();
        return Err(refused(
            AbilityError::new(
                ErrorCode::NotFoundOperation,
                format!("Unknown operation: '{shown}'. List operations with introspect"),
            )
            .with_details(json!({"operation": shown})),
        ));
    };
    check_endpoint(table, endpoint, &op.name, &op.family, op.category).map_err(refused)?;
    let Some(ability) = registry.at(op.ability) else {
        return Err(refused(AbilityError::internal(
            "the operation table is inconsistent",
        )));
    };
    let token = confirmation_token(&mut params);
    params.retain(|k, _| !k.starts_with('_'));
    let include = relations::take_include(op, &mut params).map_err(refused)?;
    let checks = Params { op };
    let query = op.collection.as_ref().map(|items| Query {
        op,
        items,
        state: OnceLock::new(),
        warnings: OnceLock::new(),
    });
    let gate = op.danger.needs_confirmation().then(|| Gate {
        table,
        op,
        holder,
        sent: params.clone(),
        token,
        issued: OnceLock::new(),
    });
    let mut stages: Vec<&dyn Stage> = vec![&checks];
    if let Some(query) = &query {
        stages.push(query);
    }
    if let Some(gate) = &gate {
        stages.push(gate);
    }
    // A confirmed retry was counted against the rate when its token was issued.
    let run_ctx = match &gate {
        Some(gate) if gate.token.is_some() => ctx.clone().continuing(),
        _ => ctx.clone(),
    };
    match Box::pin(pipeline::run(
        ability,
        run_ctx,
        Value::Object(params),
        &stages,
    ))
    .await
    {
        Ok(output) => {
            let mut warnings = fallback;
            if let Some(note) = &op.deprecated {
                let message = if note.is_empty() {
                    format!("Operation '{}' is deprecated", op.name)
                } else {
                    format!("Operation '{}' is deprecated: {note}", op.name)
                };
                warnings.push(warning(
                    "DEPRECATION_WARNING",
                    Severity::Medium,
                    message,
                    json!({"operation": op.name}),
                ));
            }
            warnings.extend(
                query
                    .and_then(|q| q.warnings.into_inner())
                    .unwrap_or_default(),
            );
            let (value, content, _) = output.into_bare();
            let mut data = data_of(value, content);
            for relation in include {
                Box::pin(relations::related(
                    table,
                    registry,
                    ctx,
                    holder,
                    relation,
                    &mut data,
                    &mut warnings,
                ))
                .await
                .map_err(refused)?;
            }
            Ok((data, warnings))
        }
        Err(error) => {
            let issued = gate.and_then(|gate| gate.issued.into_inner());
            Err((error, issued))
        }
    }
}

/// `VALIDATION_ENDPOINT_MISMATCH` when an operation is sent to another family's tool.
fn check_endpoint(
    table: &Table,
    endpoint: &Endpoint,
    operation: &str,
    family: &str,
    category: Semantic,
) -> Result<(), AbilityError> {
    let Endpoint::Family(actual) = endpoint else {
        return Ok(());
    };
    if actual == family {
        return Ok(());
    }
    let expected = table.tool_name(&Endpoint::Family(family.to_owned()));
    Err(AbilityError::new(
        ErrorCode::ValidationEndpointMismatch,
        format!(
            "Operation '{operation}' is a {} operation: call it through {expected}, not {}",
            category.as_str(),
            table.tool_name(endpoint)
        ),
    )
    .with_details(json!({
        "operation": operation,
        "expected_endpoint": family,
        "actual_endpoint": actual,
        "expected_tool": expected
    })))
}

pub(super) fn reject_unknown(
    operation: &str,
    params: &Map<String, Value>,
    accepted: &[impl AsRef<str>],
) -> Result<(), AbilityError> {
    let listed: Vec<&str> = params
        .keys()
        .map(String::as_str)
        .filter(|k| !accepted.iter().any(|a| a.as_ref() == *k))
        .collect();
    if listed.is_empty() {
        return Ok(());
    }
    let accepted: Vec<&str> = accepted.iter().map(AsRef::as_ref).collect();
    Err(AbilityError::new(
        ErrorCode::ValidationUnknownParam,
        format!(
            "Unknown parameter(s) for operation '{operation}': {}. Valid: {}",
            listed.join(", "),
            if accepted.is_empty() {
                "none".to_owned()
            } else {
                accepted.join(", ")
            }
        ),
    )
    .with_details(json!({
        "operation": operation,
        "unknown_params": listed,
        "valid_params": accepted
    })))
}

/// For UPDATE operations with fields, the changed fields arrive in `params.input`: check it
/// and spread it into the ability's arguments beside the identifiers.
pub(super) fn update_args(
    op: &Operation,
    mut params: Map<String, Value>,
) -> Result<Map<String, Value>, AbilityError> {
    let Some(fields) = &op.update_fields else {
        return Ok(params);
    };
    let input = match params.remove("input") {
        Some(Value::Object(input)) => input,
        None | Some(Value::Null) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationMissingParam,
                format!(
                    "Missing required parameter 'input'. Expected: an object of the fields to change ({})",
                    fields.join(", ")
                ),
            )
            .with_details(json!({"param_name": "input", "operation": op.name})));
        }
        Some(_) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationInvalidType,
                "Parameter 'input' expected 'object'",
            )
            .with_details(json!({"param_name": "input", "expected_type": "object"})));
        }
    };
    let unknown: Vec<&String> = input.keys().filter(|k| !fields.contains(k)).collect();
    if !unknown.is_empty() {
        let listed: Vec<&str> = unknown.iter().map(|k| k.as_str()).collect();
        return Err(AbilityError::new(
            ErrorCode::ValidationUnknownField,
            format!(
                "Unknown field(s) in 'input' of '{}': {}. Changeable: {}; identifiers go beside 'input'",
                op.name,
                listed.join(", "),
                fields.join(", ")
            ),
        )
        .with_details(json!({
            "operation": op.name, "unknown_fields": listed, "valid_fields": fields
        })));
    }
    params.extend(input);
    Ok(params)
}

/// `_confirmation` (or `confirmation_token`) from the parameters.
pub(super) fn confirmation_token(params: &mut Map<String, Value>) -> Option<String> {
    let token = params
        .remove("_confirmation")
        .or_else(|| params.remove("confirmation_token"))?;
    token.as_str().map(str::to_owned)
}

async fn batch(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    holder: &Holder<'_>,
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
            Some(request) => operation(table, registry, endpoint, ctx, holder, request).await,
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
