//! Relations between collection operations: declared with `Aql::relation`, checked when
//! the table is built, and resolved for a request's `include` with one call of the target.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::operation::operation_once;
use super::params::Sent;
use super::query::json_eq;
use super::{Endpoint, Operation, Severity, Table, Warning, warning};
use crate::surface::Served;
use crate::surface::SurfaceError;
use crate::{AbilityError, Context, ErrorCode, Registry};

/// A field of a collection operation's items that points at the items of another: declared
/// with [`Aql::relation`](super::Aql::relation), asked for with `params.include`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Relation {
    /// The operation whose items carry the field.
    pub(crate) operation: String,
    /// What `include` names, and the key the related item is put under.
    pub(crate) name: String,
    /// The field holding the related item's key.
    pub(crate) field: String,
    /// The collection operation that lists the related items.
    pub(crate) target: String,
    /// The related items' key field.
    pub(crate) key: String,
}

/// A relation's operations are collections, the field is an item field of the first and
/// the key one of the target's.
pub(super) fn check_relation(
    relation: &Relation,
    operations: &[Operation],
    by_name: &HashMap<String, usize>,
) -> Result<(), SurfaceError> {
    let problem = |problem: String| SurfaceError::AqlRelation {
        operation: relation.operation.clone(),
        relation: relation.name.clone(),
        problem,
    };
    let collection = |name: &str| -> Result<&Map<String, Value>, SurfaceError> {
        by_name
            .get(name)
            .and_then(|&i| operations.get(i))
            .ok_or_else(|| problem(format!("there is no operation `{name}`")))?
            .collection
            .as_ref()
            .ok_or_else(|| {
                problem(format!(
                    "`{name}` is not a READ operation returning a list of objects"
                ))
            })
    };
    let has = |items: &Map<String, Value>, field: &str| {
        items
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(field))
    };
    let source = collection(&relation.operation)?;
    if !has(source, &relation.field) {
        return Err(problem(format!(
            "its items have no field `{}`",
            relation.field
        )));
    }
    let target = collection(&relation.target)?;
    if !has(target, &relation.key) {
        return Err(problem(format!(
            "the items of `{}` have no field `{}`",
            relation.target, relation.key
        )));
    }
    if has(source, &relation.name) {
        return Err(problem(format!(
            "its items already have a field `{}`: name the relation otherwise",
            relation.name
        )));
    }
    Ok(())
}

/// The relations a request asks for with `include`, taken out of its parameters.
pub(super) fn take_include<'t>(
    op: &'t Operation,
    params: &mut Map<String, Value>,
) -> Result<Vec<&'t Relation>, AbilityError> {
    if op.relations.is_empty() {
        return Ok(Vec::new());
    }
    let names = match params.remove("include") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(name)) => vec![Value::String(name)],
        Some(Value::Array(names)) => names,
        Some(_) => {
            return Err(AbilityError::new(
                ErrorCode::ValidationInvalidType,
                "Parameter 'include' expected 'array of relation names'",
            )
            .with_details(json!({"param_name": "include", "expected_type": "array"})));
        }
    };
    let valid: Vec<&str> = op.relations.iter().map(|r| r.name.as_str()).collect();
    let mut out: Vec<&Relation> = Vec::new();
    for name in &names {
        let relation = name
            .as_str()
            .and_then(|name| op.relations.iter().find(|r| r.name == name));
        let Some(relation) = relation else {
            return Err(AbilityError::new(
                ErrorCode::ValidationInvalidValue,
                format!(
                    "Unknown relation {name} in 'include': '{}' relates {valid:?}",
                    op.name
                ),
            )
            .with_details(json!({"param_name": "include", "valid_relations": valid})));
        };
        if !out.iter().any(|r| r.name == relation.name) {
            out.push(relation);
        }
    }
    Ok(out)
}

/// Put each item's related item under the relation's name, all of them fetched with one
/// call of the target operation.
pub(super) async fn related(
    table: &Table,
    registry: &Registry,
    ctx: &Context,
    served: &Served<'_>,
    relation: &Relation,
    data: &mut Value,
    warnings: &mut Vec<Warning>,
) -> Result<(), AbilityError> {
    let Some(items) = data.get_mut("items").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    // An item without the field has no related item; none with it means it was not
    // selected, and the relation cannot be resolved.
    if !items.is_empty() && items.iter().all(|item| item.get(&relation.field).is_none()) {
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidValue,
            format!(
                "Including '{}' needs the field '{}' in the items: add it to 'fields'",
                relation.name, relation.field
            ),
        )
        .with_details(json!({"param_name": "include", "field": relation.field})));
    }
    let mut keys: Vec<Value> = Vec::new();
    for key in items.iter().filter_map(|item| item.get(&relation.field)) {
        if !key.is_null() && !keys.iter().any(|k| json_eq(k, key)) {
            keys.push(key.clone());
        }
    }
    // One call per page of keys (a page holds at most 1,000), never one per item.
    let mut found: Vec<Value> = Vec::new();
    for chunk in keys.chunks(1000) {
        let request = json!({
            "operation": relation.target,
            "params": {
                "filter": {relation.key.as_str(): {"in": chunk}},
                "first": chunk.len(),
                "fields": "full"
            }
        });
        let request = Sent::read(&request.as_object().cloned().unwrap_or_default())?;
        // The target's own warnings are about its answer, not this one: only whether every
        // related item came back matters here.
        let answer = operation_once(table, registry, &Endpoint::Single, ctx, served, request)
            .await?
            .data;
        if answer["pageInfo"]["hasNextPage"] != false {
            warnings.push(warning(
                "VALIDATION_TRUNCATED_WARNING",
                Severity::Medium,
                format!(
                    "'{}' may not have returned every related item: items without one show null",
                    relation.target
                ),
                json!({"relation": relation.name}),
            ));
        }
        if let Some(list) = answer.get("items").and_then(Value::as_array) {
            found.extend(list.iter().cloned());
        }
    }
    for item in items.iter_mut() {
        let key = item.get(&relation.field).cloned().unwrap_or(Value::Null);
        let related = found
            .iter()
            .find(|r| !key.is_null() && r.get(&relation.key).is_some_and(|k| json_eq(k, &key)))
            .cloned()
            .unwrap_or(Value::Null);
        if let Value::Object(map) = item {
            map.insert(relation.name.clone(), related);
        }
    }
    Ok(())
}
