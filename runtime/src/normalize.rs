//! The argument normalizer: what missing, `null` and `{}` arguments mean for each kind of
//! ability, before validation.
//!
//! | arguments \ ability    | no input | object input | flattened (wrapped) | wrapped, with default `D` | wrapped, admits `null` |
//! |------------------------|----------|--------------|---------------------|---------------------------|------------------------|
//! | missing                | `{}`     | `{}`         | `{}`                | `{"input": D}`            | `{"input": null}`      |
//! | `null`                 | `{}`     | `{}`         | `{}`                | `{"input": D}`            | `{"input": null}`      |
//! | `{}`                   | `{}`     | `{}`         | `{}`                | `{"input": D}`            | `{"input": null}`      |
//! | `{"input": null}`      | as sent  | as sent      | as sent             | `{"input": D}`            | as sent                |
//! | any other object       | as sent  | as sent      | as sent             | as sent                   | as sent                |
//! | not an object          | `VALIDATION_INVALID_TYPE` for every kind                                                  |||||
//!
//! Then validation decides: an object input with required parameters rejects `{}` with
//! `VALIDATION_MISSING_PARAM`, and so does a flattened input with neither default nor `null`.
//! A flattened *object* (a struct that passes unwrapped) with a default gets `D` itself for
//! missing, `null` and `{}`. Fields that no schema describes are accepted and ignored.

use serde_json::{Map, Value};

use crate::{AbilityError, ErrorCode};

/// How an ability's input sits on the wire, decided once at registration.
#[derive(Clone, Debug)]
pub(crate) enum InputShape {
    /// No value parameters.
    None,
    /// The arguments object is the input.
    Object {
        /// Replaces missing, `null` and `{}` arguments.
        default: Option<Value>,
    },
    /// The input sits under `key`.
    Wrapped {
        key: &'static str,
        /// Applied when the key is absent or `null`.
        default: Option<Value>,
        /// The inner schema admits `null`, so an absent key means `null`.
        nullable: bool,
    },
}

/// Arguments as an object: `null` (or missing) is `{}`, anything else but an object is an error.
pub(crate) fn into_object(args: Value) -> Result<Map<String, Value>, AbilityError> {
    match args {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        other => Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!("arguments must be a JSON object, got {}", json_type(&other)),
        )),
    }
}

/// Normalize arguments into the object the input schema validates.
pub(crate) fn normalize(shape: &InputShape, mut map: Map<String, Value>) -> Value {
    match shape {
        InputShape::None => {}
        InputShape::Object { default } => {
            if let (true, Some(Value::Object(default))) = (map.is_empty(), default) {
                map = default.clone();
            }
        }
        InputShape::Wrapped {
            key,
            default,
            nullable,
        } => {
            let absent = map.get(*key).is_none_or(Value::is_null);
            if absent {
                if let Some(default) = default {
                    map.insert((*key).to_owned(), default.clone());
                } else if *nullable {
                    map.insert((*key).to_owned(), Value::Null);
                }
            }
        }
    }
    Value::Object(map)
}

/// Take the handler's value out of validated, normalized arguments.
pub(crate) fn unwrap_input(shape: &InputShape, args: Value) -> Value {
    match (shape, args) {
        (InputShape::None, _) => Value::Null,
        (InputShape::Object { .. }, args) => args,
        // A validated wrapped input has the one key: take it without hashing.
        (InputShape::Wrapped { key, .. }, Value::Object(map)) if map.len() == 1 => map
            .into_iter()
            .next()
            .and_then(|(k, v)| (k == *key).then_some(v))
            .unwrap_or(Value::Null),
        (InputShape::Wrapped { key, .. }, Value::Object(mut map)) => {
            map.remove(*key).unwrap_or(Value::Null)
        }
        (InputShape::Wrapped { .. }, other) => other,
    }
}

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn non_objects_are_rejected() {
        for bad in [json!(1), json!("x"), json!([]), json!(true)] {
            let err = into_object(bad).err().map(|e| e.code().clone());
            assert_eq!(err, Some(ErrorCode::ValidationInvalidType));
        }
        assert_eq!(into_object(Value::Null).ok(), Some(Map::new()));
    }

    #[test]
    fn explicit_null_under_the_key_takes_the_default() {
        let shape = InputShape::Wrapped {
            key: "input",
            default: Some(json!("post")),
            nullable: false,
        };
        let args = into_object(json!({"input": null})).unwrap_or_default();
        assert_eq!(normalize(&shape, args), json!({"input": "post"}));
    }
}
