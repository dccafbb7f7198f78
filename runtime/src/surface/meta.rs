//! The WordPress adapter's default server: three meta tools over the public abilities.
//!
//! - discover: `{abilities: [{name, label, description}]}` for every public tool ability,
//!   by its ability name (with the slash);
//! - get-info: name, label, description, the ability's own input and output schemas (as the
//!   function declares them, before the wire's `input`/`result` wrapping) and meta;
//! - execute: `{ability_name, parameters}` with `parameters` in the ability's own shape (a
//!   flattened ability takes the bare value), answering `{success: true, data}`; failures are
//!   `isError` results as in native mode. Scopes and the site check apply to the target.
//!
//! Abilities with `public = false` do not exist here: not listed, described or executed.

use std::sync::Arc;

use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::Served;
use super::native::{error_result, success};
use crate::pipeline::{self, Around, Confirm, TOKEN_ARGUMENT};
use crate::{Ability, AbilityError, AbilityKind, CallOutput, Context, ErrorCode, Registry};

fn object(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => Map::new(),
    })
}

/// The annotations of the two meta tools that only read.
fn reading() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

pub(crate) fn discover_tool(name: &str) -> Tool {
    Tool::new(
        name.to_owned(),
        "List the abilities this site offers: name, label and description of each. Describe one with get-ability-info, run it with execute-ability.",
        object(json!({"type": "object", "properties": {}})),
    )
    .with_title("Discover Abilities")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "abilities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "label": {"type": "string"},
                        "description": {"type": "string"}
                    },
                    "required": ["name", "label", "description"]
                }
            }
        },
        "required": ["abilities"]
    })))
    .with_annotations(reading())
}

pub(crate) fn get_info_tool(name: &str) -> Tool {
    Tool::new(
        name.to_owned(),
        "Describe one ability: its input and output JSON Schemas and metadata. Name it as discover-abilities lists it.",
        object(json!({
            "type": "object",
            "properties": {
                "ability_name": {"type": "string", "description": "The ability's name, e.g. my-plugin/count-posts."}
            },
            "required": ["ability_name"]
        })),
    )
    .with_title("Get Ability Info")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "label": {"type": "string"},
            "description": {"type": "string"},
            "input_schema": {"type": "object"},
            "output_schema": {"type": "object"},
            "meta": {"type": "object"}
        },
        "required": ["name", "label", "description", "input_schema"]
    })))
    .with_annotations(reading())
}

pub(crate) fn execute_tool(name: &str) -> Tool {
    Tool::new(
        name.to_owned(),
        "Run one ability with parameters shaped as its input schema (get-ability-info); an ability whose input is a single value takes that value itself.",
        object(json!({
            "type": "object",
            "properties": {
                "ability_name": {"type": "string", "description": "The ability's name, e.g. my-plugin/count-posts."},
                "parameters": {"description": "The ability's input, as its input_schema describes it. Leave out for an ability without parameters."},
                "site_id": {"type": "string", "description": "Optional: the site this call is meant for; a call naming another site is rejected."}
            },
            "required": ["ability_name"]
        })),
    )
    .with_title("Execute Ability")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            // Every JSON type listed, as the adapter's own schema has it (an output schema:
            // no model provider reads it, so the type list is no portability concern).
            "data": {
                "type": ["object", "array", "string", "number", "integer", "boolean", "null"],
                "description": "The ability's output, as its output_schema describes it."
            },
            "error": {"type": "string", "description": "Why the execution failed, when success is false."}
        },
        "required": ["success"]
    })))
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(false),
    )
}

/// The label of an ability: its title, else its name.
fn label(ability: &Ability) -> &str {
    ability.title().unwrap_or_else(|| ability.name())
}

/// The public ability named `name`: its ability name, as discover lists it, or its tool name.
/// A non-public ability is reported exactly like a missing one.
fn public<'r>(registry: &'r Registry, name: &str) -> Result<&'r Arc<Ability>, AbilityError> {
    registry
        .shared(name)
        .filter(|a| a.is_public())
        .ok_or_else(|| AbilityError::unknown(crate::error::Lookup::Ability, name))
}

/// The string `key` of the arguments, or the error a missing or mistyped one calls for.
fn string_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, AbilityError> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(AbilityError::new(
            ErrorCode::ValidationMissingParam,
            format!("missing required parameter '{key}'"),
        )),
        Some(_) => Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!("parameter '{key}' must be a string"),
        )),
    }
}

pub(crate) fn discover(registry: &Registry) -> CallToolResult {
    let abilities: Vec<Value> = registry
        .iter()
        .filter(|a| a.is_public() && a.is_tool())
        .map(|a| json!({"name": a.name(), "label": label(a), "description": a.description()}))
        .collect();
    success(
        CallOutput::structured_only(json!({ "abilities": abilities })),
        false,
    )
}

pub(crate) fn get_info(registry: &Registry, args: &Value, site: bool) -> CallToolResult {
    match info(registry, args, site) {
        Ok(value) => success(CallOutput::structured_only(value), false),
        Err(error) => error_result(&error),
    }
}

fn info(registry: &Registry, args: &Value, site: bool) -> Result<Value, AbilityError> {
    let ability = public(registry, string_arg(args, "ability_name")?)?;
    let mut info = Map::new();
    info.insert("name".into(), json!(ability.name()));
    info.insert("label".into(), json!(label(ability)));
    info.insert("description".into(), json!(ability.description()));
    info.insert("input_schema".into(), own_input_schema(ability));
    if let Some(output) = own_output_schema(ability) {
        info.insert("output_schema".into(), output);
    }
    let kind = match ability.kind() {
        AbilityKind::Resource { uri, .. } => json!({"type": "resource", "uri": uri}),
        AbilityKind::Prompt => json!({"type": "prompt"}),
        _ => json!({"type": "tool"}),
    };
    info.insert(
        "meta".into(),
        json!({
            "semantic": ability.semantic().as_str(),
            "category": ability.category(),
            "permission": ability.permission(),
            "annotations": ability.annotations(),
            "mcp": {
                "public": true,
                "type": kind["type"],
                "tool_name": ability.tool_name(),
                "uri": kind.get("uri"),
                "input_wrapped": ability.input_wrapped(),
                "output_wrapped": ability.output_wrapped(),
                "site_id": site && ability.takes_site_id(),
            }
        }),
    );
    Ok(Value::Object(info))
}

/// The input schema as the function declares it: the wrapped value's own schema for a
/// flattened ability, the object schema otherwise.
fn own_input_schema(ability: &Ability) -> Value {
    let wire = ability.input_schema();
    if ability.input_wrapped()
        && let Some(inner) = wire.get("properties").and_then(|p| p.get("input"))
    {
        return inner.clone();
    }
    Value::Object((**wire).clone())
}

fn own_output_schema(ability: &Ability) -> Option<Value> {
    let wire = ability.output_schema()?;
    if ability.output_wrapped()
        && let Some(inner) = wire.get("properties").and_then(|p| p.get("result"))
    {
        return Some(inner.clone());
    }
    Some(Value::Object((**wire).clone()))
}

pub(crate) async fn execute(
    registry: &Registry,
    ctx: Context,
    served: &Served<'_>,
    args: Value,
) -> CallToolResult {
    let ability = match string_arg(&args, "ability_name").and_then(|n| public(registry, n)) {
        Ok(ability) => ability,
        Err(error) => return error_result(&error),
    };
    let mut args = match args {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let parameters = args.remove("parameters").unwrap_or(Value::Null);
    // A confirmed retry's token, beside `ability_name` (or among the parameters).
    let token = args.remove(TOKEN_ARGUMENT);
    let site_id = args.remove("site_id");
    // The parameters in the ability's own shape, as the wire carries them.
    let mut wire = if ability.input_wrapped() {
        let mut map = Map::new();
        if !parameters.is_null() {
            map.insert("input".into(), parameters);
        }
        Value::Object(map)
    } else {
        parameters
    };
    if let Some(site_id) = site_id {
        match &mut wire {
            Value::Object(map) => {
                map.entry("site_id").or_insert(site_id);
            }
            Value::Null => wire = json!({ "site_id": site_id }),
            // Not an object: the pipeline rejects it.
            _ => {}
        }
    }
    let gate =
        Confirm::of_tool(ability, &served.holder, served.guards, &mut wire).map(|mut gate| {
            if let Some(Value::String(token)) = token {
                gate.token.get_or_insert(token);
            }
            gate
        });
    let outcome = match gate {
        Some(gate) => {
            let caller = ctx.caller().clone();
            let ctx = if gate.continues() {
                ctx.continuing()
            } else {
                ctx
            };
            let around = Around::guarded(served.guards, ability);
            let outcome = Box::pin(pipeline::run(ability, ctx, wire, around, &[&gate])).await;
            gate.settle(ability, &caller, &outcome).await;
            outcome
        }
        None => ability.call_guarded(ctx, wire, served.guards).await,
    };
    let (data, content, _) = match outcome {
        Ok(output) => output.into_bare(),
        Err(error) => return error_result(&error),
    };
    let data = data.unwrap_or(Value::Null);
    success(
        CallOutput::new(
            Some(json!({"success": true, "data": data})),
            false,
            content,
            None,
        ),
        false,
    )
}
