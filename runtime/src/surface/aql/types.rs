//! The types MCP-AQL introspection names: the JSON type a schema declares, a parameter's
//! description, each operation's result type and the types of the protocol itself, listed
//! and described by `introspect`.

use serde_json::{Map, Value, json};

use super::{Operation, Table};
use crate::{Registry, Semantic};

/// The type `introspect` returns, as introspection names it.
pub(super) const INTROSPECTION_DATA: &str = "IntrospectionData";

/// The JSON type a schema names (the first non-null one of a list, or the one type of the
/// non-null alternatives of an `anyOf` / `oneOf`), `object` for untyped schemas that have
/// properties, `string` for enums of strings, else `any`.
pub(super) fn type_of(schema: &Value) -> String {
    let alternatives = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array);
    if let Some(alternatives) = alternatives {
        let mut types: Vec<String> = alternatives
            .iter()
            .map(type_of)
            .filter(|t| t != "null")
            .collect();
        types.dedup();
        return match types.as_slice() {
            [one] => one.clone(),
            [] => "null".into(),
            _ => "any".into(),
        };
    }
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_owned(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ => match schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            Some(Value::String(_)) => "string".into(),
            Some(Value::Number(_)) => "number".into(),
            _ => "any".into(),
        },
    }
}

/// ParameterInfo: name, type, required and the constraints the schema states.
pub(super) fn parameter_info(name: &str, schema: &Value, required: bool) -> Value {
    let mut info = Map::new();
    info.insert("name".into(), json!(name));
    info.insert("type".into(), json!(type_of(schema)));
    info.insert("required".into(), json!(required));
    for key in [
        "description",
        "default",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
    ] {
        if let Some(value) = schema.get(key) {
            info.insert(key.into(), value.clone());
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        info.insert("items".into(), json!({ "type": type_of(items) }));
    }
    Value::Object(info)
}

pub(super) fn result_type_name(operation: &str) -> String {
    let mut name: String = operation
        .split('_')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut chars = s.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    name.push_str("Result");
    name
}

/// A type introspection can list and describe.
pub(super) struct TypeDef {
    pub(super) name: String,
    pub(super) kind: &'static str,
    description: String,
    values: Vec<Value>,
    fields: Vec<Value>,
    members: Vec<String>,
}

impl TypeDef {
    pub(super) fn info(&self) -> Value {
        json!({"name": self.name, "kind": self.kind, "description": self.description})
    }

    pub(super) fn detail(&self) -> Value {
        let mut detail =
            json!({"name": self.name, "kind": self.kind, "description": self.description});
        match self.kind {
            "enum" => detail["values"] = json!(self.values),
            "object" => detail["fields"] = json!(self.fields),
            "union" => detail["members"] = json!(self.members),
            _ => {}
        }
        detail
    }
}

pub(super) fn object_type(name: &str, description: &str, schema: &Value) -> TypeDef {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(k, s)| parameter_info(k, s, required.contains(&k.as_str())))
                .collect()
        })
        .unwrap_or_default();
    TypeDef {
        name: name.to_owned(),
        kind: "object",
        description: description.to_owned(),
        values: Vec::new(),
        fields,
        members: Vec::new(),
    }
}

pub(super) fn types(table: &Table, registry: &Registry) -> Vec<TypeDef> {
    let mut types = protocol_types();
    types.extend(introspection_types());
    for op in &table.operations {
        let Some(ability) = registry.at(op.ability) else {
            continue;
        };
        types.push(result_type(op, ability));
    }
    types
}

/// The types of every request and answer.
fn protocol_types() -> Vec<TypeDef> {
    vec![
        TypeDef {
            name: "SemanticCategory".into(),
            kind: "enum",
            description: "What an operation does.".into(),
            values: Semantic::ALL.map(|s| json!(s.as_str())).to_vec(),
            fields: Vec::new(),
            members: Vec::new(),
        },
        object_type(
            "OperationInput",
            "A request.",
            &json!({"properties": {"operation": {"type": "string"}, "params": {"type": "object"}}, "required": ["operation"]}),
        ),
        TypeDef {
            name: "OperationResult".into(),
            kind: "union",
            description: "Every answer.".into(),
            values: Vec::new(),
            fields: Vec::new(),
            members: vec!["OperationSuccess".into(), "OperationFailure".into()],
        },
        object_type(
            "OperationSuccess",
            "A success.",
            &json!({"properties": {"success": {"type": "boolean", "const": true}, "data": {}}, "required": ["success", "data"]}),
        ),
        object_type(
            "OperationFailure",
            "A failure.",
            &json!({"properties": {"success": {"type": "boolean", "const": false}, "error": {"type": "object"}}, "required": ["success", "error"]}),
        ),
    ]
}

/// The types of what `introspect` answers.
fn introspection_types() -> Vec<TypeDef> {
    vec![
        TypeDef {
            name: INTROSPECTION_DATA.into(),
            kind: "union",
            description: "What introspect answers: a list or one detail.".into(),
            values: Vec::new(),
            fields: Vec::new(),
            members: vec![
                "OperationsListData".into(),
                "OperationDetailData".into(),
                "TypesListData".into(),
                "TypeDetailData".into(),
            ],
        },
        object_type(
            "OperationsListData",
            "query: operations without a name.",
            &json!({"properties": {
                "_protocol": {"type": "object", "description": "The version and mode served; the capabilities and limits on the whole list, what the page is (discovery) on a search."},
                "operations": {"type": "array", "items": {"type": "object"}, "description": "{name, semantic_category, endpoint, description} of each operation."}
            }, "required": ["operations"]}),
        ),
        object_type(
            "OperationDetailData",
            "query: operations with a name.",
            &json!({"properties": {
                "operation": {"type": "object", "description": "The operation's details, or null for an unknown name."}
            }, "required": ["operation"]}),
        ),
        object_type(
            "TypesListData",
            "query: types without a name.",
            &json!({"properties": {
                "types": {"type": "array", "items": {"type": "object"}, "description": "{name, kind, description} of each type."}
            }, "required": ["types"]}),
        ),
        object_type(
            "TypeDetailData",
            "query: types with a name.",
            &json!({"properties": {
                "type": {"type": "object", "description": "The type's details, or null for an unknown name."}
            }, "required": ["type"]}),
        ),
        object_type(
            "EndpointPermissions",
            "What an endpoint may do.",
            &json!({"properties": {"readOnly": {"type": "boolean"}, "destructive": {"type": "boolean"}}, "required": ["readOnly", "destructive"]}),
        ),
    ]
}

/// The type an operation returns, as `introspect types` describes it: a collection's item
/// type, else the output's own kind.
pub(super) fn result_type(op: &Operation, ability: &crate::Ability) -> TypeDef {
    let name = result_type_name(&op.name);
    let own = ability.output_schema().map(|wire| {
        if ability.output_wrapped() {
            wire.get("properties")
                .and_then(|p| p.get("result"))
                .cloned()
                .unwrap_or(Value::Null)
        } else {
            Value::Object((**wire).clone())
        }
    });
    let description = format!("What {} returns.", op.name);
    match (&op.collection, own) {
        (Some(items), _) => object_type(&name, &description, &Value::Object(items.clone())),
        (None, Some(schema)) if type_of(&schema) == "object" => {
            object_type(&name, &description, &schema)
        }
        (None, Some(schema)) if schema.get("enum").is_some() => TypeDef {
            name,
            kind: "enum",
            description,
            // Enum values are strings in the draft's type detail: others as their JSON text.
            values: schema["enum"]
                .as_array()
                .map(|values| {
                    values
                        .iter()
                        .map(|v| match v {
                            Value::String(_) => v.clone(),
                            other => Value::String(other.to_string()),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            fields: Vec::new(),
            members: Vec::new(),
        },
        _ => TypeDef {
            name,
            kind: "scalar",
            description,
            values: Vec::new(),
            fields: Vec::new(),
            members: Vec::new(),
        },
    }
}
