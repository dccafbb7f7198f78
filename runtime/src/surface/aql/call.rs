//! One MCP-AQL tool call: a single operation or a batch, answered with the draft's envelope.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::introspect::introspect;
use super::query::{self, State};
use super::{Endpoint, Operation, Table, recoverable};
use crate::{AbilityError, Context, ElicitAction, ErrorCode, Registry, Semantic};

/// Keys of a request that are not parameters.
const RESERVED: [&str; 3] = ["operation", "params", "operations"];

/// Answer a call to the tool serving `endpoint`.
pub(crate) async fn call(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: Context,
    session: u64,
    args: Value,
) -> CallToolResult {
    let envelope = match check_payload(table, &args) {
        Err(error) => failure(&error),
        Ok(()) => match args.get("operations") {
            Some(operations) => {
                batch(table, registry, endpoint, &ctx, session, &args, operations).await
            }
            None => single(table, registry, endpoint, &ctx, session, &args).await,
        },
    };
    respond(table, envelope)
}

/// The envelope as a tool result: its JSON as text; `isError` only for failures the caller
/// cannot fix by changing the request.
fn respond(table: &Table, envelope: Value) -> CallToolResult {
    let mut text = envelope.to_string();
    let mut envelope = envelope;
    if text.len() > table.config.limits.max_response_size {
        envelope = failure(&too_large(
            "response_size",
            table.config.limits.max_response_size,
            text.len(),
            "bytes",
        ));
        text = envelope.to_string();
    }
    let is_error = envelope["success"] == false
        && !envelope["error"]["code"].as_str().is_some_and(recoverable);
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.is_error = Some(is_error);
    result
}

fn success(data: Value) -> Value {
    json!({"success": true, "data": data})
}

fn failure(error: &AbilityError) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), json!(error.code().as_str()));
    body.insert("message".into(), json!(error.message()));
    if let Some(details) = error.details().filter(|d| d.is_object()) {
        body.insert("details".into(), details.clone());
    }
    let mut envelope = json!({"success": false, "error": body});
    if error.code() == &ErrorCode::ConfirmationRequired
        && let Some(details) = error.details()
    {
        envelope["confirmation"] = json!({
            "token": details["confirmation_token"],
            "expires_at": details["expires_at"],
            "message": details["confirmation_message"],
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

/// The request's parameters: `params`, then top-level keys it does not have.
fn resolve_params(request: &Map<String, Value>) -> Result<Map<String, Value>, AbilityError> {
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
        if !RESERVED.contains(&key.as_str()) && !params.contains_key(key) {
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
    session: u64,
    args: &Value,
) -> Value {
    let Some(request) = args.as_object() else {
        return failure(&AbilityError::new(
            ErrorCode::ValidationMissingParam,
            "Missing required parameter 'operation'",
        ));
    };
    match operation(table, registry, endpoint, ctx, session, request).await {
        Ok(data) => success(data),
        Err(error) => failure(&error),
    }
}

/// Run one `{operation, params}` request through `endpoint`.
async fn operation(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    session: u64,
    request: &Map<String, Value>,
) -> Result<Value, AbilityError> {
    let name = match request.get("operation") {
        Some(Value::String(name)) => name.as_str(),
        None | Some(Value::Null) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationMissingParam,
                "Missing required parameter 'operation'. Expected: an operation name; list them with introspect",
            )
            .with_details(json!({"param_name": "operation"})));
        }
        Some(_) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationInvalidType,
                "Parameter 'operation' expected 'string'",
            )
            .with_details(json!({"param_name": "operation", "expected_type": "string"})));
        }
    };
    let mut params = resolve_params(request)?;
    if name == "introspect" {
        // The introspection envelope is closed: errors carry a code and a message only.
        let bare = |e: AbilityError| AbilityError::new(e.code().clone(), e.message());
        check_endpoint(table, endpoint, "introspect", "read", Semantic::Read).map_err(bare)?;
        params.retain(|k, _| !k.starts_with('_'));
        reject_unknown(name, &params, &["query", "name"]).map_err(bare)?;
        return introspect(table, registry, &params);
    }
    let Some(op) = table.get(name) else {
        let shown: String = name.chars().take(100).collect();
        return Err(AbilityError::new(
            ErrorCode::Custom("NOT_FOUND_OPERATION".into()),
            format!("Unknown operation: '{shown}'. List operations with introspect"),
        )
        .with_details(json!({"operation": shown})));
    };
    check_endpoint(table, endpoint, &op.name, &op.family, op.category)?;
    let token = confirmation_token(&mut params);
    params.retain(|k, _| !k.starts_with('_'));
    reject_unknown(&op.name, &params, &op.accepted)?;
    let gated = params.clone();
    let mut args = update_args(op, params)?;
    let query = match &op.collection {
        Some(items) => {
            let spec = query::parse(&mut args, items, &op.computed)?;
            Some(Arc::new(State::new(spec)))
        }
        None => None,
    };
    let Some(ability) = registry.at(op.ability) else {
        return Err(AbilityError::internal(
            "the operation table is inconsistent",
        ));
    };
    if op.danger.needs_confirmation() {
        // No confirmation is asked of a caller who could not run the operation anyway.
        ability.check_permission(ctx)?;
        confirm(table, ctx, session, op, &gated, token.as_deref()).await?;
    }
    let mut call_ctx = ctx.clone();
    if let Some(query) = &query {
        call_ctx = call_ctx.with_collection_query(Arc::clone(query));
    }
    let output = Box::pin(ability.call_output(call_ctx, Value::Object(args)))
        .await?
        .into_unwrapped();
    let data = output.structured.unwrap_or(Value::Null);
    Ok(match (&query, &op.collection) {
        (Some(query), Some(items)) => query::apply(query, data, items, &op.computed),
        _ => data,
    })
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
        ErrorCode::Custom("VALIDATION_ENDPOINT_MISMATCH".into()),
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

fn reject_unknown(
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
fn update_args(
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
            ErrorCode::Custom("VALIDATION_UNKNOWN_FIELD".into()),
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
fn confirmation_token(params: &mut Map<String, Value>) -> Option<String> {
    let token = params
        .remove("_confirmation")
        .or_else(|| params.remove("confirmation_token"))?;
    token.as_str().map(str::to_owned)
}

/// Let an operation that needs confirmation through: with a valid token, or (where the
/// client supports it) the user's answer to a direct question; otherwise
/// `CONFIRMATION_REQUIRED` with a fresh token.
async fn confirm(
    table: &Table,
    ctx: &Context,
    session: u64,
    op: &Operation,
    params: &Map<String, Value>,
    token: Option<&str>,
) -> Result<(), AbilityError> {
    if let Some(token) = token {
        return table.confirmations.redeem(session, token, &op.name, params);
    }
    let message = format!(
        "Confirm {} operation '{}' with {}",
        op.danger.as_str(),
        op.name,
        Value::Object(params.clone())
    );
    if table.config.elicit_confirmation {
        let schema = json!({
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "title": "Go ahead", "default": false}},
            "required": ["confirm"]
        });
        match ctx.elicit(&message, schema).await {
            Ok(answer)
                if answer.action == ElicitAction::Accept
                    && answer.content.as_ref().and_then(|c| c.get("confirm"))
                        == Some(&Value::Bool(true)) =>
            {
                return Ok(());
            }
            Ok(_) => {
                return Err(AbilityError::permission_denied(format!(
                    "The user did not confirm '{}'",
                    op.name
                ))
                .with_details(json!({"operation": op.name, "reason": "not confirmed"})));
            }
            // No elicitation here: fall back to a token.
            Err(_) => {}
        }
    }
    let issued = table
        .confirmations
        .issue(session, &op.name, params, table.config.confirm_ttl)?;
    Err(AbilityError::new(
        ErrorCode::ConfirmationRequired,
        format!(
            "Operation '{}' is {}: retry with params._confirmation set to the token",
            op.name,
            op.danger.as_str()
        ),
    )
    .with_details(json!({
        "operation": op.name,
        "danger_level": op.danger.as_str(),
        "reasons": [format!("{} operations need confirmation", op.danger.as_str())],
        "confirmation_message": message,
        "confirmation_token": issued.token,
        "expires_at": issued.expires_at
    })))
}

async fn batch(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    session: u64,
    args: &Value,
    operations: &Value,
) -> Value {
    let Some(items) = operations.as_array().filter(|items| !items.is_empty()) else {
        return failure(&AbilityError::new(
            ErrorCode::ValidationInvalidType,
            "Parameter 'operations' expected a non-empty array of {operation, params}",
        ));
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
        return failure(&AbilityError::new(
            ErrorCode::ValidationUnknownParam,
            format!(
                "A batch request holds only 'operations', not {}",
                extra
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let limit = table.config.limits.max_batch_operations;
    if items.len() > limit {
        return failure(&too_large(
            "batch_operations",
            limit,
            items.len(),
            "operations",
        ));
    }
    let mut results = Vec::new();
    let (mut succeeded, mut failed) = (0, 0);
    for (index, item) in items.iter().enumerate() {
        let name = item.get("operation").cloned().unwrap_or(Value::Null);
        let envelope = match item.as_object() {
            Some(request) => {
                match operation(table, registry, endpoint, ctx, session, request).await {
                    Ok(data) => success(data),
                    Err(error) => failure(&error),
                }
            }
            None => failure(&AbilityError::new(
                ErrorCode::ValidationInvalidType,
                format!("Batch item {index} expected an object {{operation, params}}"),
            )),
        };
        if envelope["error"]["code"] == "CONFIRMATION_REQUIRED" {
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
            return json!({
                "success": true,
                "data": null,
                "results": results,
                "summary": {
                    "total": total, "succeeded": succeeded, "failed": failed,
                    "halted": 1, "pending": pending.len()
                },
                "halted_at": halted,
                "pending_operations": pending
            });
        }
        if envelope["success"] == true {
            succeeded += 1;
        } else {
            failed += 1;
        }
        results.push(json!({"index": index, "operation": name, "result": envelope}));
    }
    json!({
        "success": true,
        "data": null,
        "results": results,
        "summary": {"total": items.len(), "succeeded": succeeded, "failed": failed}
    })
}
