//! MCP-AQL's request limits: size, string length, array length and nesting depth.

use serde_json::{Value, json};

use super::Table;
use crate::{AbilityError, ErrorCode};

pub(super) fn too_large(kind: &str, limit: usize, actual: usize, unit: &str) -> AbilityError {
    AbilityError::new(
        ErrorCode::ValidationPayloadTooLarge,
        format!("Payload exceeds {kind} limit of {limit} {unit} (it has {actual})"),
    )
    .with_details(json!({
        "limit_type": kind, "limit_value": limit, "actual_value": actual, "unit": unit
    }))
}

/// Request size, string length, array length and nesting depth, in one walk of the request
/// (its size is counted as compact JSON would write it, without writing it).
pub(super) fn check_payload(table: &Table, args: &Value) -> Result<(), AbilityError> {
    let limits = &table.config.limits;
    let mut size = 0;
    let mut first = None;
    let mut stack = vec![(args, 1)];
    while let Some((value, depth)) = stack.pop() {
        size += own_size(value);
        if first.is_none() {
            first = over_limit(value, depth, limits);
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().rev().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().rev().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    if size > limits.max_request_size {
        return Err(too_large(
            "request_size",
            limits.max_request_size,
            size,
            "bytes",
        ));
    }
    first.map_or(Ok(()), Err)
}

/// The first limit `value` itself (at `depth`) exceeds, if any.
fn over_limit(value: &Value, depth: usize, limits: &super::AqlLimits) -> Option<AbilityError> {
    if depth > limits.max_nesting_depth {
        return Some(too_large(
            "nesting_depth",
            limits.max_nesting_depth,
            depth,
            "levels",
        ));
    }
    match value {
        Value::String(s) if s.len() > limits.max_string_length => Some(too_large(
            "string_length",
            limits.max_string_length,
            s.len(),
            "bytes",
        )),
        Value::Array(items) if items.len() > limits.max_array_elements => Some(too_large(
            "array_elements",
            limits.max_array_elements,
            items.len(),
            "elements",
        )),
        _ => None,
    }
}

/// The bytes compact JSON spends on `value` itself: a scalar whole, a container's brackets,
/// separators and keys (its members are counted on their own).
fn own_size(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            let mut counted = Counted(0);
            let _ = std::fmt::Write::write_fmt(&mut counted, format_args!("{n}"));
            counted.0
        }
        Value::String(s) => string_size(s),
        Value::Array(items) => 2 + items.len().saturating_sub(1),
        Value::Object(map) => {
            2 + map.len().saturating_sub(1) + map.keys().map(|k| string_size(k) + 1).sum::<usize>()
        }
    }
}

/// A string's bytes as JSON writes it: quoted, `"` and `\` and control characters escaped.
fn string_size(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// Counts what is written to it.
struct Counted(usize);

impl std::fmt::Write for Counted {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    /// What the walk counts, for a value alone.
    fn counted(value: &Value) -> usize {
        let mut size = 0;
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            size += super::own_size(value);
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        size
    }

    #[test]
    fn sizes_are_what_compact_json_writes() {
        for value in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(0.1),
            json!(-0.0),
            json!(1e300),
            json!(2.5e-8),
            json!(""),
            json!("plain"),
            json!("quote \" backslash \\ newline \n tab \t bell \u{7} nul \u{0} del \u{7f}"),
            json!("é 漢字 🦀"),
            json!([]),
            json!({}),
            json!([1, [2, [3, {}]], "x"]),
            json!({"a": 1, "b\"c": [true, null], "": {"d": "e\u{1f}"}}),
        ] {
            assert_eq!(counted(&value), value.to_string().len(), "{value}");
        }
    }
}
