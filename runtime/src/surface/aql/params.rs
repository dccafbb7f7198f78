//! The parameters of one MCP-AQL request: where they are read from, which are refused,
//! what an UPDATE changes, and the confirmation token among them.

use serde_json::{Map, Value, json};

use super::{CONFIRMATION_TOKEN, Operation, Severity, Warning, warning};
use crate::{AbilityError, ErrorCode};

/// Keys of a request that are not parameters.
pub(super) const RESERVED: [&str; 3] = ["operation", "params", "operations"];

/// A request `{operation, params}` as read once: the operation's name, its parameters
/// (top-level keys merged in) and the warnings reading them raised.
pub(super) struct Sent {
    pub(super) name: String,
    pub(super) params: Map<String, Value>,
    pub(super) warnings: Vec<Warning>,
}

impl Sent {
    /// Read `request`: its `operation` must be a string, its `params` an object.
    pub(super) fn read(request: &Map<String, Value>) -> Result<Self, AbilityError> {
        let name = match request.get("operation") {
            Some(Value::String(name)) => name.clone(),
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
        let mut warnings = Vec::new();
        let params = resolve_params(request, &mut warnings)?;
        Ok(Self {
            name,
            params,
            warnings,
        })
    }
}

/// The request's parameters: `params`, then top-level keys it does not have. A top-level key
/// that `params` also has is ignored, with a warning.
pub(super) fn resolve_params(
    request: &Map<String, Value>,
    warnings: &mut Vec<Warning>,
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
    // A handler takes a field left out and a `null` alike (an `Option`), so it cannot
    // remove a field as the draft's `null` asks: refused, rather than answered as done.
    let cleared: Vec<&str> = input
        .iter()
        .filter(|(_, value)| !op.sees_null && value.is_null())
        .map(|(key, _)| key.as_str())
        .collect();
    if !cleared.is_empty() {
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidValue,
            format!(
                "'{}' cannot clear {}: null would remove a field, which this operation does not do. Leave a field out to keep it, or send a value",
                op.name,
                cleared
                    .iter()
                    .map(|k| format!("'input.{k}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_details(json!({
            "operation": op.name, "param_name": "input", "null_fields": cleared
        })));
    }
    params.extend(input);
    Ok(params)
}

/// The confirmation token from the parameters: `_confirmation`, or `confirmation_token` for
/// an operation that takes it (elsewhere it stays, and is refused as unknown).
pub(super) fn confirmation_token(params: &mut Map<String, Value>, takes: bool) -> Option<String> {
    let own = params.remove("_confirmation");
    let named = if takes {
        params.remove(CONFIRMATION_TOKEN)
    } else {
        None
    };
    own.or(named)?.as_str().map(str::to_owned)
}
