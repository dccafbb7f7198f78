//! Collection queries on READ operations that return lists: filter, sort, field selection,
//! offset and cursor pagination, aggregation and computed fields. The runtime applies them to
//! the items a handler returns, except the stages the handler pushed down itself through the
//! [`CollectionQuery`] extractor.

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::ComputedField;
use crate::{AbilityError, Context, ErrorCode, FromContext};

/// The query parameters of a collection operation, beside its own.
pub(crate) const PARAMS: &[&str] = &[
    "filter",
    "sort",
    "fields",
    "limit",
    "offset",
    "first",
    "after",
    "last",
    "before",
    "aggregate",
    "include_items",
];

const DEFAULT_PAGE: u64 = 20;
const MAX_PAGE: u64 = 1000;
const COMPUTED: &str = "_computed";

/// How a filter condition compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterOp {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
    /// One of an array of values.
    In,
    /// A string containing a substring, or an array containing an element.
    Contains,
}

impl FilterOp {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "eq" => Self::Eq,
            "ne" => Self::Ne,
            "gt" => Self::Gt,
            "gte" => Self::Gte,
            "lt" => Self::Lt,
            "lte" => Self::Lte,
            "in" => Self::In,
            "contains" => Self::Contains,
            _ => return None,
        })
    }
}

/// One filter condition: `filter: {"priority": "high"}` or `{"id": {"gt": 3}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The item field (or `_computed.<name>`).
    pub field: String,
    /// The comparison.
    pub op: FilterOp,
    /// The value compared with.
    pub value: Value,
}

impl Condition {
    fn matches(&self, item: &Value) -> bool {
        let actual = lookup(item, &self.field).unwrap_or(&Value::Null);
        match self.op {
            FilterOp::Eq => json_eq(actual, &self.value),
            FilterOp::Ne => !json_eq(actual, &self.value),
            FilterOp::Gt => compare(actual, &self.value) == Some(Ordering::Greater),
            FilterOp::Gte => matches!(
                compare(actual, &self.value),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            FilterOp::Lt => compare(actual, &self.value) == Some(Ordering::Less),
            FilterOp::Lte => matches!(
                compare(actual, &self.value),
                Some(Ordering::Less | Ordering::Equal)
            ),
            FilterOp::In => self
                .value
                .as_array()
                .is_some_and(|values| values.iter().any(|v| json_eq(actual, v))),
            FilterOp::Contains => match (actual, &self.value) {
                (Value::String(s), Value::String(part)) => s.contains(part.as_str()),
                (Value::Array(items), value) => items.iter().any(|v| json_eq(v, value)),
                _ => false,
            },
        }
    }
}

/// One sort key: `sort: {"field": "priority", "order": "desc"}` (or a list of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// The item field (or `_computed.<name>`).
    pub field: String,
    /// Largest first.
    pub descending: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Page {
    Offset { limit: u64, offset: u64 },
    Forward { first: u64, after: Option<u64> },
    Backward { last: u64, before: Option<u64> },
}

#[derive(Clone, Debug, PartialEq)]
enum Fields {
    Minimal,
    Standard,
    Full,
    Paths(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
struct Aggregate {
    label: String,
    group_by: Option<String>,
    function: Function,
}

#[derive(Clone, Debug, PartialEq)]
enum Function {
    Count,
    Sum(String),
    Avg(String),
    Min(String),
    Max(String),
}

/// A parsed collection query.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spec {
    filter: Vec<Condition>,
    sort: Vec<SortKey>,
    fields: Fields,
    page: Page,
    aggregate: Vec<Aggregate>,
    include_items: bool,
}

/// A query with what the handler pushed down.
#[derive(Debug)]
pub(crate) struct State {
    spec: Spec,
    filtered: AtomicBool,
    sorted: AtomicBool,
}

/// The collection query of the current MCP-AQL request, for a READ handler that applies
/// filtering and sorting itself (say, in SQL). Take it as a parameter; it is empty outside
/// MCP-AQL. Call [`filtered`](Self::filtered) / [`sorted`](Self::sorted) once applied, and
/// the runtime leaves those stages alone; everything else (pagination, aggregation, fields,
/// computed fields) it still applies to what the handler returns.
///
/// ```standalone_crate
/// use abilities::{CollectionQuery, FilterOp, ability};
///
/// /// List numbers.
/// #[ability(semantic = "READ")]
/// fn numbers(query: CollectionQuery) -> Vec<Item> {
///     let min = query
///         .filter()
///         .iter()
///         .find(|c| c.field == "n" && c.op == FilterOp::Gte)
///         .and_then(|c| c.value.as_u64());
///     if query.filter().len() == 1 && min.is_some() {
///         query.filtered(); // applied below, as a database would
///     }
///     (min.unwrap_or(0)..10).map(|n| Item { n }).collect()
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Item {
///     n: u64,
/// }
/// ```
///
/// `CollectionQuery::default()` is the empty query, for calling such a handler's helpers from
/// elsewhere.
#[derive(Clone, Debug, Default)]
pub struct CollectionQuery(Option<Arc<State>>);

impl CollectionQuery {
    /// The filter conditions (all must hold).
    pub fn filter(&self) -> &[Condition] {
        self.0.as_ref().map_or(&[], |s| &s.spec.filter)
    }

    /// The sort keys, most significant first.
    pub fn sort(&self) -> &[SortKey] {
        self.0.as_ref().map_or(&[], |s| &s.spec.sort)
    }

    /// Declare every filter condition applied: the runtime will not filter again.
    pub fn filtered(&self) {
        if let Some(state) = &self.0 {
            state.filtered.store(true, AtomicOrdering::Relaxed);
        }
    }

    /// Declare the items returned in the requested order.
    pub fn sorted(&self) {
        if let Some(state) = &self.0 {
            state.sorted.store(true, AtomicOrdering::Relaxed);
        }
    }
}

impl FromContext for CollectionQuery {
    fn from_context(ctx: &Context) -> Result<Self, AbilityError> {
        Ok(Self(ctx.surface_data::<State>()))
    }
}

impl State {
    pub(crate) fn new(spec: Spec) -> Self {
        Self {
            spec,
            filtered: AtomicBool::new(false),
            sorted: AtomicBool::new(false),
        }
    }
}

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
    let top = field.split('.').next().unwrap_or(field);
    items
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(top))
}

fn uint(params: &Map<String, Value>, key: &str) -> Result<Option<u64>, AbilityError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid_type(key, "non-negative integer")),
    }
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
fn encode_cursor(position: u64) -> String {
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
pub(crate) fn parse(
    params: &mut Map<String, Value>,
    items: &Map<String, Value>,
    computed: &[ComputedField],
) -> Result<Spec, AbilityError> {
    let mut filter = Vec::new();
    match params.remove("filter") {
        None | Some(Value::Null) => {}
        Some(Value::Object(conditions)) => {
            for (field, value) in conditions {
                if !known_field(items, computed, &field) {
                    return Err(invalid("filter", format!("Unknown filter field '{field}'")));
                }
                match value {
                    Value::Object(ops)
                        if !ops.is_empty() && ops.keys().all(|k| FilterOp::parse(k).is_some()) =>
                    {
                        for (op, value) in ops {
                            let op = FilterOp::parse(&op).unwrap_or(FilterOp::Eq);
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

    let fields = match params.remove("fields") {
        None | Some(Value::Null) => Fields::Standard,
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
                out.push(path);
            }
            Fields::Paths(out)
        }
        Some(_) => return Err(invalid_type("fields", "string or array")),
    };

    let (limit, offset) = (uint(params, "limit")?, uint(params, "offset")?);
    let (first, last) = (uint(params, "first")?, uint(params, "last")?);
    let (after, before) = (cursor(params, "after")?, cursor(params, "before")?);
    for key in ["limit", "offset", "first", "last", "after", "before"] {
        params.remove(key);
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
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!("Pagination parameters {provided:?} cannot be combined"),
        )
        .with_details(json!({
            "param_name": "pagination",
            "provided": provided,
            "hint": "use first/after, last/before, or limit/offset"
        })));
    }
    let clamp = |n: u64| n.min(MAX_PAGE);
    let page = match (first, last) {
        (Some(first), _) => Page::Forward {
            first: clamp(first),
            after,
        },
        (_, Some(last)) => Page::Backward {
            last: clamp(last),
            before,
        },
        _ => Page::Offset {
            limit: clamp(limit.unwrap_or(DEFAULT_PAGE)).max(1),
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
        aggregate,
        include_items,
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

/// Apply the query to the items a handler returned, skipping what it pushed down.
pub(crate) fn apply(
    state: &State,
    items: Value,
    item_schema: &Map<String, Value>,
    computed: &[ComputedField],
) -> Value {
    let spec = &state.spec;
    let mut items = match items {
        Value::Array(items) => items,
        other => return other,
    };
    if !computed.is_empty() {
        for item in &mut items {
            let values: Map<String, Value> = computed
                .iter()
                .map(|c| (c.name.clone(), (c.compute)(item)))
                .collect();
            if let Value::Object(map) = item {
                map.insert(COMPUTED.to_owned(), Value::Object(values));
            }
        }
    }
    let filtered = state.filtered.load(AtomicOrdering::Relaxed);
    items.retain(|item| {
        spec.filter
            .iter()
            .filter(|c| !filtered || c.field.starts_with(COMPUTED))
            .all(|c| c.matches(item))
    });
    if !spec.sort.is_empty() && !state.sorted.load(AtomicOrdering::Relaxed) {
        items.sort_by(|a, b| {
            for key in &spec.sort {
                let (x, y) = (lookup(a, &key.field), lookup(b, &key.field));
                let order = match (x, y) {
                    (None | Some(Value::Null), None | Some(Value::Null)) => Ordering::Equal,
                    // Missing values last, whatever the order.
                    (None | Some(Value::Null), _) => return Ordering::Greater,
                    (_, None | Some(Value::Null)) => return Ordering::Less,
                    (Some(x), Some(y)) => compare(x, y).unwrap_or(Ordering::Equal),
                };
                let order = if key.descending {
                    order.reverse()
                } else {
                    order
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
            Ordering::Equal
        });
    }
    let mut data = Map::new();
    if !spec.aggregate.is_empty() {
        let aggregations: Map<String, Value> = spec
            .aggregate
            .iter()
            .map(|a| (a.label.clone(), aggregate(a, &items)))
            .collect();
        data.insert("aggregations".into(), Value::Object(aggregations));
    }
    if spec.include_items {
        let total = items.len() as u64;
        let (start, end) = match spec.page {
            Page::Offset { limit, offset } => {
                (offset.min(total), offset.saturating_add(limit).min(total))
            }
            Page::Forward { first, after } => {
                let start = after.map_or(0, |a| a.saturating_add(1)).min(total);
                (start, start.saturating_add(first).min(total))
            }
            Page::Backward { last, before } => {
                let end = before.unwrap_or(total).min(total);
                (end.saturating_sub(last), end)
            }
        };
        let page: Vec<Value> = items
            .into_iter()
            .skip(usize::try_from(start).unwrap_or(usize::MAX))
            .take(usize::try_from(end - start).unwrap_or(usize::MAX))
            .map(|item| select(item, &spec.fields, item_schema))
            .collect();
        let returned = page.len() as u64;
        data.insert("items".into(), Value::Array(page));
        match spec.page {
            Page::Offset { limit, offset } => {
                data.insert(
                    "pagination".into(),
                    json!({
                        "limit": limit, "offset": offset, "returned": returned,
                        "total_items": total, "has_more": end < total
                    }),
                );
            }
            Page::Forward { .. } | Page::Backward { .. } => {
                let mut info = json!({
                    "hasNextPage": end < total,
                    "hasPreviousPage": start > 0,
                    "totalCount": total
                });
                if returned > 0 {
                    info["startCursor"] = json!(encode_cursor(start));
                    info["endCursor"] = json!(encode_cursor(end - 1));
                }
                data.insert("pageInfo".into(), info);
            }
        }
    }
    Value::Object(data)
}

fn aggregate(aggregate: &Aggregate, items: &[Value]) -> Value {
    let compute = |items: &[&Value]| -> Value {
        let numbers = |field: &str| -> Vec<f64> {
            items
                .iter()
                .filter_map(|item| lookup(item, field).and_then(Value::as_f64))
                .collect()
        };
        match &aggregate.function {
            Function::Count => json!(items.len()),
            Function::Sum(field) => number(numbers(field).iter().sum()),
            Function::Avg(field) => {
                let values = numbers(field);
                if values.is_empty() {
                    Value::Null
                } else {
                    number(values.iter().sum::<f64>() / values.len() as f64)
                }
            }
            Function::Min(field) => extreme(items, field, Ordering::Less),
            Function::Max(field) => extreme(items, field, Ordering::Greater),
        }
    };
    match &aggregate.group_by {
        None => compute(&items.iter().collect::<Vec<_>>()),
        Some(field) => {
            let mut groups: Vec<(String, Vec<&Value>)> = Vec::new();
            for item in items {
                let key = match lookup(item, field) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => "null".to_owned(),
                };
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, members)) => members.push(item),
                    None => groups.push((key, vec![item])),
                }
            }
            Value::Object(
                groups
                    .into_iter()
                    .map(|(key, members)| (key, compute(&members)))
                    .collect(),
            )
        }
    }
}

fn extreme(items: &[&Value], field: &str, wanted: Ordering) -> Value {
    items
        .iter()
        .filter_map(|item| lookup(item, field))
        .filter(|v| !v.is_null())
        .fold(None::<&Value>, |best, v| match best {
            Some(b) if compare(v, b) != Some(wanted) => Some(b),
            _ => Some(v),
        })
        .cloned()
        .unwrap_or(Value::Null)
}

/// An integer when the float is one, so `sum` of integers stays an integer.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// The item with only the selected fields (paths keep their nesting).
fn select(item: Value, fields: &Fields, schema: &Map<String, Value>) -> Value {
    let Value::Object(mut map) = item else {
        return item;
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    match fields {
        Fields::Full => Value::Object(map),
        Fields::Standard => {
            map.retain(|key, value| key != COMPUTED && !value.is_object() && !value.is_array());
            Value::Object(map)
        }
        Fields::Minimal => {
            let keep: Vec<String> = ["id", "name", "title"]
                .iter()
                .filter(|k| map.contains_key(**k))
                .map(|k| (*k).to_owned())
                .collect();
            let keep = if keep.is_empty() {
                properties
                    .and_then(|p| p.keys().next().cloned())
                    .into_iter()
                    .collect()
            } else {
                keep
            };
            map.retain(|key, _| keep.contains(key));
            Value::Object(map)
        }
        Fields::Paths(paths) => {
            let source = Value::Object(map);
            let mut out = Map::new();
            for path in paths {
                if let Some(value) = lookup(&source, path) {
                    insert_path(&mut out, path, value.clone());
                }
            }
            Value::Object(out)
        }
    }
}

fn insert_path(out: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            out.insert(path.to_owned(), value);
        }
        Some((head, rest)) => {
            let entry = out
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(inner) = entry {
                insert_path(inner, rest, value);
            }
        }
    }
}

fn lookup<'v>(item: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(item, |value, key| value.get(key))
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Map<String, Value> {
        match json!({"type": "object", "properties": {
            "id": {"type": "integer"}, "title": {"type": "string"},
            "priority": {"type": "string"}, "size": {"type": "integer"}
        }}) {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn items() -> Value {
        json!([
            {"id": 1, "title": "a", "priority": "high", "size": 10},
            {"id": 2, "title": "b", "priority": "low", "size": 20},
            {"id": 3, "title": "c", "priority": "high", "size": 30},
            {"id": 4, "title": "d", "priority": "low", "size": 5}
        ])
    }

    fn run(params: Value) -> Result<Value, AbilityError> {
        let Value::Object(mut params) = params else {
            panic!("params")
        };
        let spec = parse(&mut params, &schema(), &[])?;
        Ok(apply(&State::new(spec), items(), &schema(), &[]))
    }

    #[test]
    fn filter_sort_page_select() {
        let out = run(json!({
            "filter": {"priority": "high", "size": {"gte": 10}},
            "sort": {"field": "size", "order": "desc"},
            "fields": ["id"],
            "limit": 1
        }))
        .unwrap();
        assert_eq!(
            out,
            json!({"items": [{"id": 3}], "pagination": {
                "limit": 1, "offset": 0, "returned": 1, "total_items": 2, "has_more": true}})
        );
    }

    #[test]
    fn cursors_walk_forward_and_back() {
        let first = run(json!({"first": 2})).unwrap();
        assert_eq!(
            first["items"],
            json!([
                {"id": 1, "title": "a", "priority": "high", "size": 10},
                {"id": 2, "title": "b", "priority": "low", "size": 20}
            ])
        );
        assert_eq!(first["pageInfo"]["hasNextPage"], true);
        let end = first["pageInfo"]["endCursor"].clone();
        let next = run(json!({"first": 2, "after": end, "fields": "minimal"})).unwrap();
        assert_eq!(
            next["items"],
            json!([{"id": 3, "title": "c"}, {"id": 4, "title": "d"}])
        );
        assert_eq!(next["pageInfo"]["hasNextPage"], false);
        assert_eq!(next["pageInfo"]["hasPreviousPage"], true);
        let before = next["pageInfo"]["startCursor"].clone();
        let back = run(json!({"last": 1, "before": before, "fields": ["id"]})).unwrap();
        assert_eq!(back["items"], json!([{"id": 2}]));
    }

    #[test]
    fn aggregations() {
        let out = run(json!({"aggregate": {
            "total": {"count": true},
            "by_priority": {"group_by": "priority"},
            "size_by_priority": {"group_by": "priority", "sum": "size"},
            "average": {"avg": "size"},
            "largest": {"max": "size"}
        }}))
        .unwrap();
        assert_eq!(
            out,
            json!({"aggregations": {
                "total": 4,
                "by_priority": {"high": 2, "low": 2},
                "size_by_priority": {"high": 40, "low": 25},
                "average": 16.25,
                "largest": 30
            }})
        );
    }

    #[test]
    fn bad_queries_are_rejected() {
        for (params, code) in [
            (json!({"first": 1, "last": 1}), "VALIDATION_INVALID_TYPE"),
            (json!({"after": "x"}), "VALIDATION_INVALID_VALUE"),
            (json!({"limit": 1, "first": 1}), "VALIDATION_INVALID_TYPE"),
            (
                json!({"filter": {"colour": "red"}}),
                "VALIDATION_INVALID_VALUE",
            ),
            (
                json!({"sort": {"field": "id", "order": "up"}}),
                "VALIDATION_INVALID_VALUE",
            ),
            (json!({"fields": "tiny"}), "VALIDATION_INVALID_VALUE"),
            (
                json!({"aggregate": {"x": {"median": "size"}}}),
                "VALIDATION_INVALID_VALUE",
            ),
            (json!({"limit": -1}), "VALIDATION_INVALID_TYPE"),
        ] {
            let error = run(params.clone()).unwrap_err();
            assert_eq!(error.code().as_str(), code, "{params}");
        }
    }
}
