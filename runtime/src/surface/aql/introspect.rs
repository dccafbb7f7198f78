//! `introspect`: the operation list (with `_protocol`), operation detail, the type list and
//! type detail, all in the draft's closed shapes; unknown names give `null`, not an error.

use serde_json::{Map, Value, json};

use super::types::{
    INTROSPECTION_DATA, TypeDef, parameter_info, result_type, result_type_name, type_of, types,
};
use super::{AqlMode, Operation, SPEC_VERSION, Table, discovery, query};
use crate::skill::SkillSet;
use crate::{AbilityError, ErrorCode, Registry, Semantic};

/// Answer `introspect` with `query` (`operations` or `types`) and an optional `name`.
pub(crate) fn introspect(
    table: &Table,
    registry: &Registry,
    params: &Map<String, Value>,
    skills: &SkillSet,
) -> Result<Value, AbilityError> {
    let name = match params.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name.as_str()),
        Some(_) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationInvalidType,
                "Parameter 'name' expected 'string'",
            ));
        }
    };
    let discovering = discovery::asked(params);
    match params.get("query").and_then(Value::as_str) {
        Some("operations") => Ok(match name {
            None if discovering => search(table, registry, params)?,
            None => operations(table, registry, skills),
            Some(_) if discovering => {
                return Err(AbilityError::new(
                    ErrorCode::ValidationInvalidValue,
                    "Parameter 'name' describes one operation; search, category, endpoint, first and after list them: send one or the other",
                ));
            }
            Some(name) => json!({ "operation": operation_detail(table, registry, name) }),
        }),
        Some("types") if discovering => Err(AbilityError::new(
            ErrorCode::ValidationInvalidValue,
            "search, category, endpoint, first and after list operations: use them with query 'operations'",
        )),
        Some("types") => {
            let types = types(table, registry);
            Ok(match name {
                None => json!({
                    "types": types.iter().map(|t| t.info()).collect::<Vec<_>>()
                }),
                Some(name) => json!({
                    "type": types.iter().find(|t| t.name == name).map(TypeDef::detail)
                }),
            })
        }
        Some(other) => Err(AbilityError::new(
            ErrorCode::InvalidQueryType,
            format!("Introspection query '{other}' is unknown: use 'operations' or 'types'"),
        )),
        None if params.contains_key("query") => Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            "Parameter 'query' expected 'string'",
        )),
        None => Err(AbilityError::new(
            ErrorCode::ValidationMissingParam,
            "Missing required parameter 'query'. Expected: 'operations' or 'types'",
        )),
    }
}

fn protocol(table: &Table) -> Value {
    let limits = &table.config.limits;
    json!({
        "version": SPEC_VERSION,
        "conformance": "level-2",
        "mode": table.config.mode.as_str(),
        "capabilities": {
            "batch": true,
            "field_selection": true,
            "aggregations": true,
            "computed_fields": true,
            "pagination": true,
            "relationship_queries": true,
            "warnings": true,
            "confirmation": true,
            "dangerous_operations": true,
            "operation_search": true
        },
        "limits": {
            "max_request_size": limits.max_request_size,
            "max_response_size": limits.max_response_size,
            "max_string_length": limits.max_string_length,
            "max_array_elements": limits.max_array_elements,
            "max_nesting_depth": limits.max_nesting_depth
        }
    })
}

const INTROSPECT_DESCRIPTION: &str = "List operations or types, or describe one by name.";

/// The parameters `introspect` takes: the draft's two, then the discovery extension's.
pub(super) const INTROSPECT_PARAMS: [&str; 7] = [
    "query",
    "name",
    discovery::PARAMS[0],
    discovery::PARAMS[1],
    discovery::PARAMS[2],
    discovery::PARAMS[3],
    discovery::PARAMS[4],
];

fn operations(table: &Table, registry: &Registry, skills: &SkillSet) -> Value {
    let mut list = vec![json!({
        "name": "introspect",
        "semantic_category": "READ",
        "endpoint": "read",
        "description": INTROSPECT_DESCRIPTION
    })];
    list.extend(table.operations.iter().map(|op| info(op, registry)));
    let mut protocol = protocol(table);
    // The skills a client can read (`resources/read`) for how to use these operations.
    let skills: Vec<Value> = skills
        .summaries()
        .map(|(uri, description)| json!({"uri": uri, "description": description}))
        .collect();
    if !skills.is_empty() {
        protocol["skills"] = Value::Array(skills);
    }
    json!({ "_protocol": protocol, "operations": list })
}

/// An operation as the list shows it.
fn info(op: &Operation, registry: &Registry) -> Value {
    json!({
        "name": op.name,
        "semantic_category": op.category.as_str(),
        "endpoint": op.family,
        "description": description(op, Some(registry)),
    })
}

/// A page of the operations a discovery request matches (`introspect` itself is not among
/// them: it is always there), with a short `_protocol` that says what the page is.
fn search(
    table: &Table,
    registry: &Registry,
    params: &Map<String, Value>,
) -> Result<Value, AbilityError> {
    let (page, discovery) = discovery::discover(&table.index, &table.operations, params, |op| {
        info(op, registry)
    })?;
    Ok(json!({
        "_protocol": {
            "version": SPEC_VERSION,
            "mode": table.config.mode.as_str(),
            "discovery": discovery
        },
        "operations": page
    }))
}

/// The description of an operation, saying when it is deprecated, and its danger when it
/// needs confirmation.
fn description(op: &Operation, registry: Option<&Registry>) -> String {
    let mut base = registry
        .and_then(|r| r.at(op.ability))
        .map_or_else(String::new, |a| a.description().to_owned());
    match op.deprecated.as_deref() {
        Some("") => base.push_str(" Deprecated."),
        Some(note) => {
            base.push_str(" Deprecated: ");
            base.push_str(note.trim_end_matches('.'));
            base.push('.');
        }
        None => {}
    }
    if op.gated {
        format!(
            "{base} Needs confirmation (danger: {}, {}).",
            op.danger.as_str(),
            op.danger_reason
        )
        .trim_start()
        .to_owned()
    } else {
        base
    }
}

fn permissions(category: Semantic) -> Value {
    let (read_only, destructive) = match category {
        Semantic::Read => (true, false),
        Semantic::Create => (false, false),
        Semantic::Update | Semantic::Delete | Semantic::Execute => (false, true),
    };
    json!({ "readOnly": read_only, "destructive": destructive })
}

fn operation_detail(table: &Table, registry: &Registry, name: &str) -> Value {
    if name == "introspect" {
        return introspect_detail(table);
    }
    let Some(op) = table.get(name) else {
        return Value::Null;
    };
    let parameters = parameters(op);
    let mut detail = Map::new();
    detail.insert("name".into(), json!(op.name));
    detail.insert("semantic_category".into(), json!(op.category.as_str()));
    detail.insert("endpoint".into(), json!(op.family));
    detail.insert("mcpTool".into(), json!(table.tool_for(op)));
    let text = detail_text(op, registry);
    detail.insert("description".into(), json!(text));
    detail.insert("permissions".into(), permissions(op.category));
    detail.insert("parameters".into(), Value::Array(parameters));
    detail.insert(
        "returns".into(),
        json!({
            "name": result_type_name(&op.name),
            "kind": registry.at(op.ability).map_or("scalar", |a| result_type(op, a).kind),
            "description": if op.collection.is_some() {
                "{items, pagination | pageInfo, aggregations?}"
            } else {
                "The operation's result; describe it with introspect types."
            }
        }),
    );
    detail.insert(
        "examples".into(),
        json!([{"description": format!("Call {}", op.name), "request": example(op)}]),
    );
    if let Some(items) = &op.collection {
        collection_detail(op, items, &mut detail);
    }
    Value::Object(detail)
}

/// The detail of `introspect` itself.
fn introspect_detail(table: &Table) -> Value {
    let tool = match table.config.mode {
        AqlMode::Single => table.tool_name(&super::Endpoint::Single),
        _ => table.tool_name(&super::Endpoint::Family("read".into())),
    };
    json!({
        "name": "introspect",
        "semantic_category": "READ",
        "endpoint": "read",
        "mcpTool": tool,
        "description": INTROSPECT_DESCRIPTION,
        "permissions": permissions(Semantic::Read),
        "parameters": [
            {"name": "query", "type": "string", "required": true, "enum": ["operations", "types"]},
            {"name": "name", "type": "string", "required": false, "description": "An operation or type name."},
            {"name": "search", "type": "string", "required": false, "description": "Extension, with query operations: keywords; the operations whose names, categories, parameters or descriptions match, best first."},
            {"name": "category", "type": "string", "required": false, "description": "Extension, with query operations: only operations of this ability category."},
            {"name": "endpoint", "type": "string", "required": false, "description": "Extension, with query operations: only operations of this endpoint family (read, create...)."},
            {"name": "first", "type": "integer", "required": false, "minimum": 1, "maximum": 100, "description": "Extension, with query operations: the page size of a search or filter (default 20)."},
            {"name": "after", "type": "string", "required": false, "description": "Extension: _protocol.discovery.next_cursor of the page before."}
        ],
        "returns": {"name": INTROSPECTION_DATA, "kind": "union", "description": "Describe it with introspect types."},
        "examples": [
            {"description": "List operations", "request": {"operation": "introspect", "params": {"query": "operations"}}},
            {"description": "Find the operations about invoices", "request": {"operation": "introspect", "params": {"query": "operations", "search": "invoice", "first": 5}}}
        ]
    })
}

/// An operation's parameters, as introspection lists them.
fn parameters(op: &Operation) -> Vec<Value> {
    let mut parameters: Vec<Value> = Vec::new();
    for param in &op.params {
        if op
            .update_fields
            .as_ref()
            .is_some_and(|fields| fields.contains(&param.name))
        {
            continue;
        }
        parameters.push(parameter_info(&param.name, &param.schema, param.required));
    }
    if let Some(fields) = &op.update_fields {
        let mut input = Map::new();
        input.insert("name".into(), json!("input"));
        input.insert("type".into(), json!("object"));
        input.insert("required".into(), json!(true));
        input.insert(
            "description".into(),
            json!(if op.sees_null {
                format!(
                    "The fields to change: {}. A field left out keeps its value; null clears it.",
                    fields.join(", ")
                )
            } else {
                format!(
                    "The fields to change: {}. A field left out keeps its value; null is refused (these fields cannot be cleared).",
                    fields.join(", ")
                )
            }),
        );
        parameters.push(Value::Object(input));
    }
    if let Some(items) = &op.collection {
        parameters.extend(query_parameters(op, items));
    }
    if let Some(schema) = &op.selection {
        let named: Vec<&String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        let description = if named.is_empty() {
            "A preset (minimal, standard, full) or a list of field paths to keep.".to_owned()
        } else {
            format!(
                "A preset (minimal, standard, full) or a list of field paths to keep; fields: {}.",
                named
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        parameters.push(json!({
            "name": "fields", "type": "array", "required": false, "description": description
        }));
    }
    if !op.relations.is_empty() {
        let names: Vec<&str> = op.relations.iter().map(|r| r.name.as_str()).collect();
        parameters.push(json!({
            "name": "include", "type": "array", "required": false,
            "description": format!("Related items to put beside each item: {}.", names.join(", "))
        }));
    }
    if op.confirms {
        parameters.push(json!({
            "name": super::CONFIRMATION_TOKEN, "type": "string", "required": false,
            "description": "The token a CONFIRMATION_REQUIRED answer offered, to run the operation it was issued for (also accepted as _confirmation)."
        }));
    }
    parameters
}

/// An operation's description in its detail: with its danger level and why, and its
/// category.
fn detail_text(op: &Operation, registry: &Registry) -> String {
    // The detail always says the level and why; the list only when it needs confirmation.
    let mut text = description(op, Some(registry));
    if !op.gated {
        text = format!(
            "{text} Danger: {} ({}).",
            op.danger.as_str(),
            op.danger_reason
        )
        .trim_start()
        .to_owned();
    }
    if let Some(category) = registry.at(op.ability).and_then(|a| a.category()) {
        text = format!("{text} Category: {category}.");
    }
    text
}

/// What a collection operation's detail says besides: its computed fields and what it
/// aggregates.
fn collection_detail(op: &Operation, items: &Map<String, Value>, detail: &mut Map<String, Value>) {
    if !op.computed.is_empty() {
        detail.insert(
            "computed_fields".into(),
            Value::Array(
                op.computed
                    .iter()
                    .map(|c| {
                        json!({"name": c.name, "type": c.kind, "description": c.description,
                               "filterable": true, "sortable": true})
                    })
                    .collect(),
            ),
        );
    }
    let properties = items.get("properties").and_then(Value::as_object);
    let fields: Vec<&String> = properties.map(|p| p.keys().collect()).unwrap_or_default();
    let numeric: Vec<&String> = properties
        .map(|p| {
            p.iter()
                .filter(|(_, s)| matches!(type_of(s).as_str(), "integer" | "number"))
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default();
    detail.insert(
        "aggregation_support".into(),
        json!({
            "supported": true,
            "default_mode": "summary_only",
            "functions": ["count", "group_by", "sum", "avg", "min", "max"],
            "groupable_fields": fields,
            "numeric_fields": numeric
        }),
    );
}

fn query_parameters(op: &Operation, items: &Map<String, Value>) -> Vec<Value> {
    let declared: Vec<&str> = op.params.iter().map(|p| p.name.as_str()).collect();
    let fields: Vec<String> = items
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let listed = fields.join(", ");
    let specs = [
        ("filter", "object", format!("Conditions on {listed}: {{field: value}} or {{field: {{eq|ne|gt|gte|lt|lte|in|contains: value}}}}.")),
        ("sort", "object", format!("{{field, order: asc|desc}}, or a list of them; fields: {listed}.")),
        ("fields", "array", "A preset (minimal, standard, full) or a list of field paths, _computed.<name> included.".to_owned()),
        ("limit", "integer", "Page size for offset pagination (default 20, at most 1000).".to_owned()),
        ("offset", "integer", "Items to skip for offset pagination.".to_owned()),
        ("first", "integer", "Page size for forward cursor pagination.".to_owned()),
        ("after", "string", "Cursor from pageInfo.endCursor.".to_owned()),
        ("last", "integer", "Page size for backward cursor pagination.".to_owned()),
        ("before", "string", "Cursor from pageInfo.startCursor.".to_owned()),
        ("aggregate", "object", "{label: {count: true} | {group_by: field} | {sum|avg|min|max: field}, with an optional group_by}.".to_owned()),
        ("include_items", "boolean", "With aggregate: return the items too (default false).".to_owned()),
    ];
    specs
        .into_iter()
        .filter(|(name, _, _)| !declared.contains(name))
        .map(|(name, kind, description)| {
            let mut info =
                json!({"name": name, "type": kind, "required": false, "description": description});
            match name {
                "limit" | "first" | "last" => {
                    info["minimum"] = json!(1);
                    info["maximum"] = json!(1000);
                }
                "offset" => info["minimum"] = json!(0),
                _ => {}
            }
            debug_assert!(query::PARAMS.contains(&name));
            info
        })
        .collect()
}

/// A request that calls `op` with plausible values for its required parameters.
fn example(op: &Operation) -> Value {
    let mut params = Map::new();
    for param in &op.params {
        if !param.required {
            continue;
        }
        params.insert(param.name.clone(), sample(&param.schema));
    }
    if let Some(fields) = &op.update_fields
        && let Some(field) = fields.first()
        && let Some(param) = op.params.iter().find(|p| &p.name == field)
    {
        params.insert("input".into(), json!({ field: sample(&param.schema) }));
    }
    json!({"operation": op.name, "params": params})
}

fn sample(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match type_of(schema).as_str() {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "array" => json!([]),
        "object" => json!({}),
        _ => json!("example"),
    }
}
