//! MCP-AQL's request limits: size, string length, array length and nesting depth.

use serde_json::{Value, json};

use super::Table;
use crate::{AbilityError, ErrorCode};

pub(super) fn too_large(kind: &str, limit: usize, actual: usize, unit: &str) -> AbilityError {
    AbilityError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!("Payload exceeds {kind} limit of {limit} {unit}"),
    )
    .with_details(json!({
        "limit_type": kind, "limit_value": limit, "actual_value": actual, "unit": unit
    }))
}

/// Request size, string length, array length and nesting depth.
pub(super) fn check_payload(table: &Table, args: &Value) -> Result<(), AbilityError> {
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
