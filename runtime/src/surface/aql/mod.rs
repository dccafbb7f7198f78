//! The MCP-AQL surface (v1.0.0 draft): a few endpoint tools instead of one tool per ability.
//!
//! Abilities become *operations* with snake_case names; each belongs to an endpoint
//! *family*: its semantic (`create`, `read`, `update`, `delete`, `execute`) or the custom
//! `family = "..."` of its attribute. Modes: `single` (one `mcp_aql` tool), `semantic` (one
//! `mcp_aql_<family>` tool per family) or `all` (both). Requests are `{operation, params}`
//! (or `{operations: [...]}` for a batch); answers are the draft's `{success, data}` /
//! `{success: false, error}` envelope as JSON text.

mod call;
mod config;
mod discovery;
mod envelope;
mod idempotent;
mod introspect;
mod limits;
mod operation;
mod params;
pub(crate) mod query;
mod relations;
mod stages;
mod types;

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

pub use config::{Aql, AqlLimits, AqlMode, ComputedField};
pub use query::{CollectionQuery, Condition, FilterOp, SortKey, Window};
use relations::Relation;

use super::SurfaceError;
pub(crate) use crate::pipeline::{Severity, Warning};
use crate::{Ability, Danger, ErrorCode, Registry, Semantic};

pub(crate) use call::call;

/// The draft version this surface implements, as `_protocol.version` reports it.
pub(crate) const SPEC_VERSION: &str = "1.0.0-draft";

/// The five semantic families, in the draft's order.
const CRUDE: [&str; 5] = ["create", "read", "update", "delete", "execute"];

/// The snake_case operation name of an ability name (see [`abilities_core::operation_name`]).
pub use abilities_core::operation_name;

/// Apply an MCP-AQL UPDATE `input` to a stored value with the draft's merge rules: each key of
/// `input` replaces the stored one, except that objects merge recursively; arrays replace
/// whole; an explicit `null` deletes the field. For UPDATE handlers that keep JSON.
///
/// ```
/// use abilities::aql::merge_input;
/// use serde_json::json;
///
/// let mut stored = json!({"title": "a", "meta": {"x": 1, "y": 2}, "tags": ["p"], "due": "mon"});
/// merge_input(&mut stored, &json!({"meta": {"y": 3}, "tags": ["q"], "due": null}));
/// assert_eq!(stored, json!({"title": "a", "meta": {"x": 1, "y": 3}, "tags": ["q"]}));
/// ```
pub fn merge_input(stored: &mut Value, input: &Value) {
    let Value::Object(changes) = input else {
        *stored = input.clone();
        return;
    };
    if !stored.is_object() {
        *stored = Value::Object(Map::new());
    }
    let Value::Object(target) = stored else {
        return;
    };
    for (key, change) in changes {
        match change {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(_) if target.get(key).is_some_and(Value::is_object) => {
                if let Some(existing) = target.get_mut(key) {
                    merge_input(existing, change);
                }
            }
            other => {
                target.insert(key.clone(), other.clone());
            }
        }
    }
}

/// One parameter of an operation, as introspection describes it.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) schema: Value,
    pub(crate) required: bool,
}

/// One operation: an ability seen through MCP-AQL.
#[derive(Debug)]
pub(crate) struct Operation {
    pub(crate) name: String,
    pub(crate) ability: usize,
    pub(crate) family: String,
    pub(crate) category: Semantic,
    pub(crate) danger: Danger,
    /// Why it is at that level: declared, the semantic's default, or a name pattern.
    pub(crate) danger_reason: String,
    /// Relations a request may `include`.
    pub(crate) relations: Vec<Relation>,
    /// Why the operation is deprecated, if it is.
    pub(crate) deprecated: Option<String>,
    /// The ability's own parameters (wire names), with `site_id` where checked.
    pub(crate) params: Vec<Param>,
    /// UPDATE operations with optional fields: those fields travel in `params.input`.
    pub(crate) update_fields: Option<Vec<String>>,
    /// Its handler sees the arguments as JSON (built at run time, or bridged), so a `null`
    /// in `input` reaches it and can clear a field; a typed handler (`Option<T>`) cannot
    /// tell it from a field left out.
    pub(crate) sees_null: bool,
    /// READ operations returning a list of objects: the item schema.
    pub(crate) collection: Option<Map<String, Value>>,
    /// The list comes as `{items, total?}`, `total` the size of the collection it is from.
    pub(crate) envelope: bool,
    pub(crate) computed: Vec<ComputedField>,
    /// READ operations that are not collections (and have no `fields` of their own): the
    /// schema of the object they return, which `fields` selects from (empty when unknown).
    pub(crate) selection: Option<Map<String, Value>>,
    /// The operation runs only once confirmed (its ability's `confirm`, else its danger).
    pub(crate) gated: bool,
    /// The operation needs confirmation and takes the token as `confirmation_token` (or
    /// `_confirmation`).
    pub(crate) confirms: bool,
    /// Every parameter a request may carry, computed once.
    pub(crate) accepted: Vec<String>,
}

/// The parameter that carries a confirmation token, beside the exempt `_confirmation`.
pub(crate) const CONFIRMATION_TOKEN: &str = "confirmation_token";

/// Parameters a request may carry, as introspection lists them: the ability's own (UPDATE
/// fields replaced by `input`), then the query parameters of a collection (or `fields` for
/// another READ operation), then `confirmation_token` where a confirmation is needed.
fn accepted(
    params: &[Param],
    update_fields: Option<&Vec<String>>,
    collection: bool,
    selection: bool,
    confirms: bool,
) -> Vec<String> {
    let mut names: Vec<String> = params
        .iter()
        .filter(|p| update_fields.is_none_or(|fields| !fields.contains(&p.name)))
        .map(|p| p.name.clone())
        .chain(update_fields.map(|_| "input".to_owned()))
        .collect();
    if collection {
        for q in query::PARAMS {
            if !names.iter().any(|n| n == q) {
                names.push((*q).to_owned());
            }
        }
    }
    if selection {
        names.push("fields".to_owned());
    }
    if confirms {
        names.push(CONFIRMATION_TOKEN.to_owned());
    }
    names
}

/// Which tool a request came through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Single,
    Family(String),
}

/// The operations of a registry and the tools that serve them, built once.
pub(crate) struct Table {
    pub(crate) config: Aql,
    pub(crate) operations: Vec<Operation>,
    by_name: HashMap<String, usize>,
    pub(crate) families: Vec<String>,
    /// The words of every operation, for `introspect`'s search.
    pub(crate) index: discovery::Index,
}

impl Table {
    pub(crate) fn new(config: Aql, registry: &Registry, site: bool) -> Result<Self, SurfaceError> {
        let mut operations: Vec<Operation> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        by_name.insert("introspect".to_owned(), usize::MAX);
        for (i, ability) in registry.iter().enumerate() {
            if !ability.is_tool() || !ability.is_public() {
                continue;
            }
            let name = operation_name(ability.name());
            if let Some(&other) = by_name.get(&name) {
                let first = operations
                    .get(other)
                    .and_then(|o| registry.at(o.ability))
                    .map_or_else(
                        || "the built-in `introspect`".to_owned(),
                        |a| format!("`{}` ({})", a.name(), a.location()),
                    );
                return Err(SurfaceError::AqlOperationCollision {
                    operation: name,
                    first,
                    second: format!("`{}` ({})", ability.name(), ability.location()),
                });
            }
            by_name.insert(name.clone(), operations.len());
            operations.push(operation(name, i, ability, &config, site));
        }
        for relation in &config.relations {
            relations::check_relation(relation, &operations, &by_name)?;
            if let Some(&i) = by_name.get(&relation.operation)
                && let Some(op) = operations.get_mut(i)
            {
                op.relations.push(relation.clone());
                if !op.accepted.iter().any(|p| p == "include") {
                    op.accepted.push("include".to_owned());
                }
            }
        }
        let mut families: Vec<String> = CRUDE
            .iter()
            .filter(|f| {
                **f == "read"
                    || !config.skip_empty_families
                    || operations.iter().any(|o| o.family == **f)
            })
            .map(|f| (*f).to_owned())
            .collect();
        let mut custom: Vec<String> = operations
            .iter()
            .map(|o| o.family.clone())
            .filter(|f| !CRUDE.contains(&f.as_str()))
            .collect();
        custom.sort();
        custom.dedup();
        families.extend(custom);
        let index = discovery::Index::new(&operations, registry);
        Ok(Self {
            config,
            operations,
            by_name,
            families,
            index,
        })
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Operation> {
        self.by_name.get(name).and_then(|&i| self.operations.get(i))
    }

    /// The tool name of a family, or of the single endpoint.
    pub(crate) fn tool_name(&self, endpoint: &Endpoint) -> String {
        match endpoint {
            Endpoint::Single => format!("{}mcp_aql", self.config.prefix),
            Endpoint::Family(family) => format!("{}mcp_aql_{family}", self.config.prefix),
        }
    }

    /// The tool an operation is called through in this mode.
    pub(crate) fn tool_for(&self, op: &Operation) -> String {
        match self.config.mode {
            AqlMode::Single => self.tool_name(&Endpoint::Single),
            _ => self.tool_name(&Endpoint::Family(op.family.clone())),
        }
    }

    /// The tools of this surface with the endpoint each serves.
    pub(crate) fn tools(&self) -> Vec<(Tool, Endpoint)> {
        let mut tools = Vec::new();
        if matches!(self.config.mode, AqlMode::Single | AqlMode::All) {
            let endpoint = Endpoint::Single;
            let description = "MCP-AQL endpoint: send {operation, params}. List operations: {\"operation\":\"introspect\",\"params\":{\"query\":\"operations\"}} (or find some: add \"search\":\"<words>\"); add \"name\":\"<op>\" for its parameters. Batch: {\"operations\":[...]}.";
            let annotations = annotations(false, true);
            tools.push((
                self.tool(&endpoint, description.to_owned(), annotations),
                endpoint,
            ));
        }
        if matches!(self.config.mode, AqlMode::Semantic | AqlMode::All) {
            let read_tool = self.tool_name(&Endpoint::Family("read".into()));
            for family in &self.families {
                let endpoint = Endpoint::Family(family.clone());
                let ops: Vec<&Operation> = self
                    .operations
                    .iter()
                    .filter(|o| &o.family == family)
                    .collect();
                // An empty family's hints are its semantic's.
                let read_only = if ops.is_empty() {
                    family == "read"
                } else {
                    ops.iter().all(|o| o.category == Semantic::Read)
                };
                let destructive = if ops.is_empty() {
                    matches!(family.as_str(), "update" | "delete" | "execute")
                } else {
                    ops.iter().any(|o| {
                        matches!(
                            o.category,
                            Semantic::Update | Semantic::Delete | Semantic::Execute
                        )
                    })
                };
                let description = if family == "read" {
                    "MCP-AQL READ operations: send {operation, params}. List every operation: {\"operation\":\"introspect\",\"params\":{\"query\":\"operations\"}} (or find some: add \"search\":\"<words>\"); add \"name\":\"<op>\" for its parameters.".to_owned()
                } else {
                    format!(
                        "MCP-AQL {} operations: send {{operation, params}}. List them with introspect on {read_tool}.",
                        family.to_uppercase()
                    )
                };
                let annotations = annotations(read_only, destructive);
                tools.push((self.tool(&endpoint, description, annotations), endpoint));
            }
        }
        tools
    }

    fn tool(&self, endpoint: &Endpoint, description: String, annotations: ToolAnnotations) -> Tool {
        let input = json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string"},
                "params": {"type": "object"},
                "operations": {"type": "array", "items": {"type": "object"}}
            }
        });
        let input = match input {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Tool::new(self.tool_name(endpoint), description, Arc::new(input))
            .with_annotations(annotations)
    }
}

/// The two hints the draft asks for, set to the riskiest operation of the tool.
fn annotations(read_only: bool, destructive: bool) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(destructive)
}

fn operation(name: String, index: usize, ability: &Ability, config: &Aql, site: bool) -> Operation {
    let family = ability.family().map_or_else(
        || ability.semantic().as_str().to_ascii_lowercase(),
        str::to_owned,
    );
    let params = params_of(ability.listed_input_schema(site));
    let update_fields = (ability.semantic() == Semantic::Update
        && !params.iter().any(|p| p.name == "input"))
    .then(|| {
        params
            .iter()
            .filter(|p| !p.required && p.name != crate::ability::SITE_ID)
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    })
    .filter(|fields| !fields.is_empty());
    let (collection, envelope) = match (ability.semantic() == Semantic::Read)
        .then(|| collection_items(ability))
        .flatten()
    {
        Some((items, envelope)) => (Some(items), envelope),
        None => (None, false),
    };
    let computed = config
        .computed
        .iter()
        .filter(|c| c.operation == name)
        .cloned()
        .collect();
    let (danger, danger_reason) = danger_of(&name, ability);
    let own = |key: &str| params.iter().any(|p| p.name == key);
    let selection =
        (ability.semantic() == Semantic::Read && collection.is_none() && !own("fields"))
            .then(|| returned_object(ability))
            .flatten();
    let gated = ability
        .confirm_declared()
        .unwrap_or_else(|| danger.needs_confirmation());
    let confirms = gated && !own(CONFIRMATION_TOKEN);
    Operation {
        accepted: accepted(
            &params,
            update_fields.as_ref(),
            collection.is_some(),
            selection.is_some(),
            confirms,
        ),
        name,
        ability: index,
        family,
        category: ability.semantic(),
        danger,
        danger_reason,
        relations: Vec::new(),
        deprecated: ability.deprecated().map(str::to_owned),
        params,
        update_fields,
        sees_null: ability.rust_path().is_empty(),
        collection,
        envelope,
        computed,
        selection,
        gated,
        confirms,
    }
}

/// An operation's parameters: its input schema's properties, each required or not.
fn params_of(schema: &Map<String, Value>) -> Vec<Param> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, schema)| Param {
                    name: name.clone(),
                    schema: schema.clone(),
                    required: required.contains(&name.as_str()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An operation's danger level and why: a declared level stands; otherwise the semantic's
/// default, raised by the operation's name.
fn danger_of(name: &str, ability: &Ability) -> (Danger, String) {
    if ability.danger_declared() {
        return (ability.danger(), "declared".to_owned());
    }
    match Danger::from_name(name) {
        Some((level, pattern)) if level > ability.danger() => {
            (level, format!("the name matches '{pattern}'"))
        }
        _ => (
            ability.danger(),
            format!("the {} default", ability.semantic().as_str()),
        ),
    }
}

/// The schema of the object an ability returns (its output, unwrapped), which `fields`
/// selects from; `None` when it returns no object whose fields its schema names (a number,
/// a string, an undeclared result), where no field could be checked or selected.
fn returned_object(ability: &Ability) -> Option<Map<String, Value>> {
    let wire = ability.output_schema()?;
    let own = if ability.output_wrapped() {
        wire.get("properties")
            .and_then(|p| p.get("result"))
            .and_then(Value::as_object)
    } else {
        Some(&**wire)
    };
    own.filter(|schema| {
        schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
    })
    .cloned()
}

/// The item schema of an ability whose own output is an array of objects, or an object with
/// such an `items` array (and the collection's `total` beside it, if the handler reports it).
fn collection_items(ability: &Ability) -> Option<(Map<String, Value>, bool)> {
    let wire = ability.output_schema()?;
    let objects = |array: &Value| -> Option<Map<String, Value>> {
        if array.get("type")? != "array" {
            return None;
        }
        let items = array.get("items")?.as_object()?;
        (items.get("type")? == "object").then(|| items.clone())
    };
    if ability.output_wrapped() {
        return objects(wire.get("properties")?.get("result")?).map(|items| (items, false));
    }
    let properties = wire.get("properties")?.as_object()?;
    let items = objects(properties.get("items")?)?;
    let total_ok = properties
        .get("total")
        .is_none_or(|t| t.get("type").and_then(Value::as_str) == Some("integer"));
    (total_ok && properties.keys().all(|k| k == "items" || k == "total")).then_some((items, true))
}

/// One entry of an envelope's `warnings`.
pub(crate) fn warning(
    code: &'static str,
    severity: Severity,
    message: String,
    details: Value,
) -> Warning {
    Warning {
        code: code.into(),
        message,
        severity,
        details,
    }
}

/// The error envelope's `error` object and the `isError` flag for an error code: recoverable
/// failures (the caller can fix them) are `isError: false`, the rest `true`.
pub(crate) fn recoverable(code: &ErrorCode) -> bool {
    match code {
        ErrorCode::NotFoundResource
        | ErrorCode::NotFoundOperation
        | ErrorCode::PermissionDenied
        | ErrorCode::SiteMismatch
        | ErrorCode::ConfirmationRequired
        | ErrorCode::TokenInvalid
        | ErrorCode::TokenExpired
        | ErrorCode::TokenAlreadyUsed
        | ErrorCode::TokenScopeMismatch
        | ErrorCode::ConflictAlreadyExists
        | ErrorCode::RateLimited => true,
        ErrorCode::Custom(code) => matches!(
            code.as_ref(),
            "RATE_LIMIT_EXCEEDED" | "RATE_LIMIT_QUOTA_PAUSE"
        ),
        code => code.is_validation(),
    }
}

#[cfg(test)]
mod tests {
    use super::operation_name;

    #[test]
    fn operation_names_are_snake_case() {
        assert_eq!(
            operation_name("my-plugin/count-posts"),
            "my_plugin_count_posts"
        );
        assert_eq!(operation_name("list_todos"), "list_todos");
        assert_eq!(operation_name("Users/Display.Name"), "users_display_name");
        assert_eq!(operation_name("--a//b--"), "a_b");
        assert_eq!(operation_name("3d/render"), "op_3d_render");
    }
}
