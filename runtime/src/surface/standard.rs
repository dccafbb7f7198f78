//! Standard mode's leniency: string forms of booleans and numbers accepted where the schema
//! wants them, and pretty-printed results.

use rmcp::model::CallToolResult;
use serde_json::{Map, Number, Value};

use crate::pipeline::{Call, Stage};
use crate::{AbilityError, CallOutput};

/// A successful standard-mode result: pretty-printed JSON text, the same `structuredContent`
/// as native mode (a declared output schema obliges it), then any content blocks.
pub(crate) fn result(output: CallOutput) -> CallToolResult {
    super::native::success(output, true)
}

/// Standard mode's stage among the arguments: strings coerced to the booleans and numbers
/// the ability's schema asks for, before validation judges them.
pub(crate) struct Lenient;

impl Stage for Lenient {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        let args = Value::Object(std::mem::take(&mut call.args));
        if let Value::Object(args) = coerce(args, call.ability.tool_input_schema()) {
            call.args = args;
        }
        Ok(())
    }
}

/// `args` with strings turned into the booleans and numbers `schema` asks for, at any depth
/// of `properties` and `items`: `"true"`, `"yes"`, `"1"` (and `"false"`, `"no"`, `"0"`, any
/// case, trimmed) for a boolean; a decimal string for a number or an integer. Anything else
/// is left for validation to judge.
pub(crate) fn coerce(mut args: Value, schema: &Map<String, Value>) -> Value {
    coerce_value(&mut args, schema);
    args
}

fn coerce_value(value: &mut Value, schema: &Map<String, Value>) {
    match value {
        Value::String(text) => {
            if let Some(coerced) = from_string(text, schema) {
                *value = coerced;
            }
        }
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (key, item) in map.iter_mut() {
                if let Some(Value::Object(sub)) = properties.get(key) {
                    coerce_value(item, sub);
                }
            }
        }
        Value::Array(items) => {
            if let Some(Value::Object(sub)) = schema.get("items") {
                for item in items {
                    coerce_value(item, sub);
                }
            }
        }
        _ => {}
    }
}

/// The types a schema allows: its `type`, or those of its `anyOf` branches (`Option<T>`).
fn types(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => match schema.get("anyOf") {
            Some(Value::Array(branches)) => branches
                .iter()
                .filter_map(|b| b.get("type").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        },
    }
}

fn from_string(text: &str, schema: &Map<String, Value>) -> Option<Value> {
    let types = types(schema);
    if types.is_empty() || types.contains(&"string") {
        return None;
    }
    let trimmed = text.trim();
    if types.contains(&"boolean") {
        match trimmed.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => return Some(Value::Bool(true)),
            "false" | "no" | "0" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    if types.contains(&"integer") {
        if let Ok(n) = trimmed.parse::<i64>() {
            return Some(Value::from(n));
        }
        if let Ok(n) = trimmed.parse::<u64>() {
            return Some(Value::from(n));
        }
    }
    if types.contains(&"number") {
        if let Ok(n) = trimmed.parse::<i64>() {
            return Some(Value::from(n));
        }
        return trimmed
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number);
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn booleans_and_numbers_from_strings() {
        let s = schema(json!({"type": "object", "properties": {
            "dry_run": {"type": "boolean"},
            "id": {"type": "integer"},
            "ratio": {"type": "number"},
            "name": {"type": "string"},
            "maybe": {"type": ["boolean", "null"]},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "inner": {"type": "object", "properties": {"flag": {"type": "boolean"}}}
        }}));
        let args = json!({
            "dry_run": " YES ", "id": "42", "ratio": "0.5", "name": "true", "maybe": "No",
            "tags": ["1", "x"], "inner": {"flag": "0"}, "extra": "1"
        });
        assert_eq!(
            coerce(args, &s),
            json!({
                "dry_run": true, "id": 42, "ratio": 0.5, "name": "true", "maybe": false,
                "tags": [1, "x"], "inner": {"flag": false}, "extra": "1"
            })
        );
    }

    #[test]
    fn what_cannot_be_read_is_left_for_validation() {
        let s = schema(json!({"type": "object", "properties": {
            "dry_run": {"type": "boolean"}, "id": {"type": "integer"}, "n": {"type": "number"}
        }}));
        let args = json!({"dry_run": "perhaps", "id": "4.5", "n": "NaN"});
        assert_eq!(coerce(args.clone(), &s), args);
        // A wrapped flattened boolean.
        let s = schema(json!({"type": "object", "properties": {"input": {"type": "boolean"}}}));
        assert_eq!(coerce(json!({"input": "1"}), &s), json!({"input": true}));
    }
}
