//! An ability's wire schemas, derived once when it is built: its input (and the tool's,
//! with the optional `site_id`), its output and whether the wire wraps it, and the argument
//! table of a prompt or resource template.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Argument, Input, SITE_ID};
use crate::normalize::InputShape;
use crate::schema::{self, Side};

/// The wire output schema of a declared one, and whether the wire wraps the output.
pub(super) fn output_schema(
    output: Option<Map<String, Value>>,
) -> (Option<Arc<Map<String, Value>>>, bool) {
    match output {
        None => (None, false),
        Some(output) => {
            let wire = schema::to_wire(output, Side::Output);
            (Some(Arc::new(wire.schema)), wire.wrapped)
        }
    }
}

/// The arguments of a prompt or resource template: the properties of the wire input.
pub(super) fn arguments(input: &Input, wire: &Map<String, Value>, wrapped: bool) -> Vec<Argument> {
    let required: Vec<&str> = wire
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = wire.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let complete = match input {
                Input::Object(properties) => properties
                    .iter()
                    .find(|p| p.name == name)
                    .and_then(|p| p.complete),
                // The completer of a flattened value completes its `input` argument.
                Input::Value { complete, .. } if wrapped => *complete,
                Input::Value { .. } | Input::None => None,
            };
            Argument {
                name: name.clone(),
                description: schema
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: required.contains(&name.as_str()),
                schema: schema.clone(),
                complete,
            }
        })
        .collect()
}

pub(super) fn input_schema(input: &Input) -> (Map<String, Value>, InputShape) {
    match input {
        Input::None => {
            let wire = schema::to_wire(Map::new(), Side::Input);
            (wire.schema, InputShape::None)
        }
        Input::Object(properties) => (
            schema::object_schema(properties.iter().map(|p| schema::Property {
                name: p.name,
                schema: p.schema,
                description: p.description,
                header: p.header,
                default: p.default,
            })),
            InputShape::Object { default: None },
        ),
        Input::Value {
            schema,
            default,
            description,
            ..
        } => {
            let mut inner = schema.clone();
            if let Some(description) = description {
                inner.insert("description".to_owned(), Value::from(description.as_ref()));
            }
            if let Some(default) = default {
                inner.insert("default".to_owned(), default.clone());
            }
            let mut wire = schema::to_wire(inner, Side::Input);
            if !wire.wrapped {
                return (
                    wire.schema,
                    InputShape::Object {
                        default: default.clone(),
                    },
                );
            }
            let key = Side::Input.key();
            let nullable = schema::wrapped_inner_mut(&mut wire.schema, key)
                .is_some_and(|s| schema::admits_null(s));
            if default.is_some() || nullable {
                // The server fills the key in, so clients may leave it out.
                wire.schema.remove("required");
            }
            (
                wire.schema,
                InputShape::Wrapped {
                    key,
                    default: default.clone(),
                    nullable,
                },
            )
        }
    }
}

/// The tool's input schema: the ability's, with the optional `site_id` the server checks.
pub(super) fn with_site_id(input_schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = input_schema.clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            SITE_ID.to_owned(),
            serde_json::json!({
                "type": "string",
                "description": "Optional: the site this call is meant for; a call naming another site is rejected."
            }),
        );
    }
    schema
}
