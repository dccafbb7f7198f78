//! Reading a collection query from an MCP-AQL request's parameters, with the draft's
//! invalid combinations refused.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::*;
use crate::surface::aql::{ComputedField, Param, Severity, Warning, warning};
use crate::{AbilityError, ErrorCode};

fn invalid(param: &str, message: String) -> AbilityError {
    AbilityError::new(ErrorCode::ValidationInvalidValue, message)
        .with_details(json!({ "param_name": param }))
}

fn invalid_type(param: &str, expected: &str) -> AbilityError {
    AbilityError::new(
        ErrorCode::ValidationInvalidType,
        format!("Parameter '{param}' expected '{expected}'"),
    )
    .with_details(json!({ "param_name": param, "expected_type": expected }))
}

/// The fields an item has, for validating field names.
fn known_field(items: &Map<String, Value>, computed: &[ComputedField], field: &str) -> bool {
    if let Some(name) = field
        .strip_prefix(COMPUTED)
        .and_then(|f| f.strip_prefix('.'))
    {
        return computed.iter().any(|c| c.name == name);
    }
    // Each segment names a property of the level above; a level whose schema does not say
    // which properties it has (a free-form object, a union) takes any path below it.
    let mut schema = items;
    for segment in field.split('.') {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return admits_object(schema);
        };
        match properties.get(segment).and_then(Value::as_object) {
            Some(next) => schema = next,
            None => return false,
        }
    }
    true
}

/// Whether a schema may be an object whose properties it does not list.
fn admits_object(schema: &Map<String, Value>) -> bool {
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "object"),
        // No type: unions (`anyOf`, `oneOf`) and open schemas may hold anything.
        _ => true,
    }
}

/// A non-negative integer parameter. Integers written as floats (`1e9`, `100.0`) are
/// integers; beyond `u64`, the value saturates (every page size is clamped far below).
fn uint(params: &Map<String, Value>, key: &str) -> Result<Option<u64>, AbilityError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => as_uint(value)
            .map(Some)
            .ok_or_else(|| invalid_type(key, "non-negative integer")),
    }
}

fn as_uint(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        let f = value.as_f64()?;
        // The cast saturates at u64::MAX, which is the intent for huge integral values.
        (f >= 0.0 && f.fract() == 0.0).then_some(f as u64)
    })
}

/// The operators a filter condition may use, for messages.
const OPERATORS: &str = "eq, ne, gt, gte, lt, lte, in, contains";

/// A page size clamped to the most a page holds: kept, with a warning saying so.
fn clamp_page(param: &str, requested: u64, warnings: &mut Vec<Warning>) -> u64 {
    if requested <= MAX_PAGE {
        return requested;
    }
    warnings.push(warning(
        "VALIDATION_TRUNCATED_WARNING",
        Severity::Low,
        format!("Parameter '{param}' asked for {requested} items; a page holds at most {MAX_PAGE}, so {MAX_PAGE} were asked for"),
        json!({"param_name": param, "requested": requested, "limit": MAX_PAGE}),
    ));
    MAX_PAGE
}

/// The fields an item schema names, for messages.
fn available(items: &Map<String, Value>, computed: &[ComputedField]) -> Vec<String> {
    items
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.keys().cloned())
        .chain(computed.iter().map(|c| format!("{COMPUTED}.{}", c.name)))
        .collect()
}

/// The paging an operation does with its own `limit` / `offset` parameters, if it has
/// either: the values its handler will get.
fn own_page(params: &Map<String, Value>, own: &[Param]) -> Option<OwnPage> {
    let param = |name: &str| own.iter().find(|p| p.name == name);
    let (limit, offset) = (param("limit"), param("offset"));
    if limit.is_none() && offset.is_none() {
        return None;
    }
    // What the handler gets: the value sent, else the schema's default.
    let value = |p: Option<&Param>, name: &str| {
        p.and_then(|p| {
            params
                .get(name)
                .filter(|v| !v.is_null())
                .or_else(|| p.schema.get("default"))
                .and_then(as_uint)
        })
    };
    Some(OwnPage {
        limit: value(limit, "limit"),
        limit_declared: limit.is_some(),
        offset: value(offset, "offset").unwrap_or(0),
    })
}

fn cursor(params: &Map<String, Value>, key: &str) -> Result<Option<u64>, AbilityError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => decode_cursor(text).map(Some).ok_or_else(|| {
            invalid(
                key,
                format!("Parameter '{key}' is not a cursor this server issued"),
            )
        }),
        Some(_) => Err(invalid_type(key, "string")),
    }
}

/// An opaque, URL-safe cursor for a position.
pub(super) fn encode_cursor(position: u64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("o:{position}"))
}

fn decode_cursor(text: &str) -> Option<u64> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("o:")?
        .parse()
        .ok()
}

/// Parse the query parameters in `params` (taking them out), for items shaped by `items`.
/// A query parameter the operation declares itself (`own`) is the operation's: it stays in
/// `params` for the handler, and only `limit` / `offset` are read, as the operation's own
/// paging.
pub(crate) fn parse(
    params: &mut Map<String, Value>,
    items: &Map<String, Value>,
    computed: &[ComputedField],
    own: &[Param],
) -> Result<Spec, AbilityError> {
    let owned = |key: &str| own.iter().any(|p| p.name == key);
    let mut taken = Map::new();
    for key in PARAMS {
        if !owned(key)
            && let Some(value) = params.remove(*key)
        {
            taken.insert((*key).to_owned(), value);
        }
    }
    let own_page = own_page(params, own);
    let original = &*params;
    let params = &mut taken;
    let mut warnings = Vec::new();
    let mut filter = Vec::new();
    match params.remove("filter") {
        None | Some(Value::Null) => {}
        Some(Value::Object(conditions)) => {
            for (field, value) in conditions {
                if !known_field(items, computed, &field) {
                    return Err(invalid("filter", format!("Unknown filter field '{field}'")));
                }
                match value {
                    // An object is a map of operators: `{"gt": 3}`.
                    Value::Object(ops) => {
                        if ops.is_empty() {
                            return Err(invalid(
                                "filter",
                                format!(
                                    "Filter on '{field}' names no operator: use one of {OPERATORS}"
                                ),
                            ));
                        }
                        for (name, value) in ops {
                            let Some(op) = FilterOp::parse(&name) else {
                                return Err(AbilityError::new(
                                    ErrorCode::ValidationInvalidValue,
                                    format!("Unknown filter operator '{name}' on '{field}': use one of {OPERATORS}"),
                                )
                                .with_details(json!({
                                    "param_name": "filter",
                                    "field": field,
                                    "operator": name,
                                    "valid_operators": OPERATORS.split(", ").collect::<Vec<_>>()
                                })));
                            };
                            if op == FilterOp::In && !value.is_array() {
                                return Err(invalid_type("filter", "array for 'in'"));
                            }
                            filter.push(Condition {
                                field: field.clone(),
                                op,
                                value,
                            });
                        }
                    }
                    value => filter.push(Condition {
                        field,
                        op: FilterOp::Eq,
                        value,
                    }),
                }
            }
        }
        Some(_) => return Err(invalid_type("filter", "object")),
    }

    let mut sort = Vec::new();
    let keys = match params.remove("sort") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(keys)) => keys,
        Some(key) => vec![key],
    };
    for key in keys {
        let (field, order) = match &key {
            Value::String(field) => (field.clone(), "asc"),
            Value::Object(map) => (
                map.get("field")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("sort", "Parameter 'sort' needs a 'field'".into()))?
                    .to_owned(),
                map.get("order").and_then(Value::as_str).unwrap_or("asc"),
            ),
            _ => return Err(invalid_type("sort", "object")),
        };
        if !known_field(items, computed, &field) {
            return Err(invalid("sort", format!("Unknown sort field '{field}'")));
        }
        let descending = match order {
            "asc" => false,
            "desc" => true,
            other => {
                return Err(invalid(
                    "sort",
                    format!("Sort order '{other}' is neither 'asc' nor 'desc'"),
                ));
            }
        };
        sort.push(SortKey { field, descending });
    }

    let fields = fields(params.remove("fields"), items, computed, Fields::Standard)?;

    let (limit, offset) = (uint(params, "limit")?, uint(params, "offset")?);
    let (first, last) = (uint(params, "first")?, uint(params, "last")?);
    let (after, before) = (cursor(params, "after")?, cursor(params, "before")?);
    for key in ["limit", "offset", "first", "last", "after", "before"] {
        params.remove(key);
    }
    // The operation's own limit / offset, when sent, are a page too: not with a cursor.
    let own_sent: Vec<&str> = ["limit", "offset"]
        .into_iter()
        .filter(|k| owned(k) && original.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    let cursor_sent = first.is_some() || last.is_some() || after.is_some() || before.is_some();
    if !own_sent.is_empty() && cursor_sent {
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!(
                "Pagination parameters {own_sent:?} cannot be combined with first/after or last/before"
            ),
        )
        .with_details(json!({
            "param_name": "pagination",
            "provided": own_sent,
            "hint": "use first/after, last/before, or limit/offset"
        })));
    }
    let provided: Vec<&str> = [
        ("limit", limit.is_some()),
        ("offset", offset.is_some()),
        ("first", first.is_some()),
        ("after", after.is_some()),
        ("last", last.is_some()),
        ("before", before.is_some()),
    ]
    .iter()
    .filter(|(_, given)| *given)
    .map(|(name, _)| *name)
    .collect();
    let mixed = (limit.is_some() || offset.is_some())
        && (first.is_some() || last.is_some() || after.is_some() || before.is_some());
    let bad = mixed
        || (first.is_some() && last.is_some())
        || (after.is_some() && first.is_none())
        || (before.is_some() && last.is_none())
        || (first.is_some() && before.is_some())
        || (last.is_some() && after.is_some());
    if bad {
        // Say what is missing when one parameter needs another, else what clashes.
        let message = if after.is_some() && first.is_none() && last.is_none() && !mixed {
            "Parameter 'after' needs 'first': send first (the page size) with after".to_owned()
        } else if before.is_some() && last.is_none() && first.is_none() && !mixed {
            "Parameter 'before' needs 'last': send last (the page size) with before".to_owned()
        } else {
            format!(
                "Pagination parameters {} cannot be combined: use first/after, last/before, or limit/offset",
                provided.join(", ")
            )
        };
        return Err(
            AbilityError::new(ErrorCode::ValidationInvalidType, message).with_details(json!({
                "param_name": "pagination",
                "provided": provided,
                "hint": "use first/after, last/before, or limit/offset"
            })),
        );
    }
    let page = match (first, last) {
        (Some(first), _) => Page::Forward {
            first: clamp_page("first", first, &mut warnings),
            after,
        },
        (_, Some(last)) => Page::Backward {
            last: clamp_page("last", last, &mut warnings),
            before,
        },
        _ => Page::Offset {
            limit: clamp_page("limit", limit.unwrap_or(DEFAULT_PAGE), &mut warnings).max(1),
            offset: offset.unwrap_or(0),
        },
    };

    let mut aggregate = Vec::new();
    match params.remove("aggregate") {
        None | Some(Value::Null) => {}
        Some(Value::Object(expressions)) => {
            for (label, expression) in expressions {
                aggregate.push(parse_aggregate(label, expression, items, computed)?);
            }
        }
        Some(_) => return Err(invalid_type("aggregate", "object")),
    }
    let include_items = match params.remove("include_items") {
        None | Some(Value::Null) => aggregate.is_empty(),
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(invalid_type("include_items", "boolean")),
    };
    Ok(Spec {
        filter,
        sort,
        fields,
        page,
        own_page,
        aggregate,
        include_items,
        warnings,
    })
}

/// `fields`: a preset (`minimal`, `standard`, `full`) or a list of paths, each starting at a
/// field `items` names (when it names any); `default` when not sent.
pub(crate) fn fields(
    value: Option<Value>,
    items: &Map<String, Value>,
    computed: &[ComputedField],
    default: Fields,
) -> Result<Fields, AbilityError> {
    Ok(match value {
        None | Some(Value::Null) => default,
        Some(Value::String(preset)) => match preset.as_str() {
            "minimal" => Fields::Minimal,
            "standard" => Fields::Standard,
            "full" => Fields::Full,
            other => {
                return Err(invalid(
                    "fields",
                    format!("Unknown field preset '{other}': use minimal, standard or full"),
                ));
            }
        },
        Some(Value::Array(paths)) => {
            let mut out = Vec::new();
            for path in paths {
                let Value::String(path) = path else {
                    return Err(invalid_type("fields", "array of strings"));
                };
                if !valid_path(&path) {
                    return Err(invalid("fields", format!("Invalid field path '{path}'")));
                }
                // Where the item schema names its fields, a path must start at one of them.
                let named = items.get("properties").and_then(Value::as_object).is_some();
                if named && !known_field(items, computed, &path) {
                    return Err(AbilityError::new(
                        ErrorCode::ValidationInvalidValue,
                        format!("Unknown field '{path}' in 'fields'"),
                    )
                    .with_details(json!({
                        "param_name": "fields",
                        "field": path,
                        "valid_fields": available(items, computed)
                    })));
                }
                out.push(path);
            }
            Fields::Paths(out)
        }
        Some(_) => return Err(invalid_type("fields", "string or array")),
    })
}

fn parse_aggregate(
    label: String,
    expression: Value,
    items: &Map<String, Value>,
    computed: &[ComputedField],
) -> Result<Aggregate, AbilityError> {
    let Value::Object(expression) = expression else {
        return Err(invalid_type("aggregate", "object"));
    };
    let mut group_by = None;
    let mut function = None;
    for (key, value) in expression {
        let field = || -> Result<String, AbilityError> {
            let field = value
                .as_str()
                .ok_or_else(|| invalid_type("aggregate", "field name"))?;
            if !known_field(items, computed, field) {
                return Err(invalid(
                    "aggregate",
                    format!("Unknown aggregate field '{field}'"),
                ));
            }
            Ok(field.to_owned())
        };
        let next = match key.as_str() {
            "group_by" => {
                group_by = Some(field()?);
                continue;
            }
            "count" if value == Value::Bool(true) => Function::Count,
            "count" => continue,
            "sum" => Function::Sum(field()?),
            "avg" => Function::Avg(field()?),
            "min" => Function::Min(field()?),
            "max" => Function::Max(field()?),
            other => {
                return Err(invalid(
                    "aggregate",
                    format!(
                        "Unknown aggregate function '{other}': use count, group_by, sum, avg, min or max"
                    ),
                ));
            }
        };
        if function.replace(next).is_some() {
            return Err(invalid(
                "aggregate",
                format!(
                    "Aggregate '{label}' has more than one function: use one label per function"
                ),
            ));
        }
    }
    Ok(Aggregate {
        label,
        group_by,
        function: function.unwrap_or(Function::Count),
    })
}

fn valid_path(path: &str) -> bool {
    let path = path.strip_prefix("_computed.").map_or(path, |rest| rest);
    !path.is_empty()
        && path.split('.').all(|segment| {
            segment.starts_with(|c: char| c.is_ascii_lowercase())
                && segment
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}
