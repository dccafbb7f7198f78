//! Running a parsed collection query over the items a handler returned: filter, sort,
//! pagination, aggregation, field selection and computed fields.

use std::cmp::Ordering;

use serde_json::{Map, Value, json};

use super::parse::encode_cursor;
use super::*;
use crate::surface::aql::{ComputedField, Severity, Warning, warning};

/// What the runtime knows of the collection behind a handler's items.
enum Extent {
    /// The items are the whole collection (filtered here or by the handler).
    Whole,
    /// The items are the window at `offset` of a collection of `total` (the handler paged).
    Window { offset: u64, total: u64 },
    /// The items are the operation's own page at `offset`: `total` when the page shows
    /// where the collection ends, else unknown.
    OwnPage { offset: u64, total: Option<u64> },
}

/// A warning about what the answer could not know.
fn truncated(message: String, details: Value) -> Warning {
    warning(
        "VALIDATION_TRUNCATED_WARNING",
        Severity::Medium,
        message,
        details,
    )
}

/// Apply the query to the items a handler returned, skipping what it pushed down; the data
/// and the warnings for the envelope.
pub(crate) fn apply(
    state: &State,
    items: Value,
    reported: Option<u64>,
    item_schema: &Map<String, Value>,
    computed: &[ComputedField],
) -> (Value, Vec<Warning>) {
    let spec = &state.spec;
    let mut warnings = spec.warnings.clone();
    let mut items = match items {
        Value::Array(items) => items,
        other => return (other, warnings),
    };
    compute(&mut items, computed);
    let returned_by_handler = items.len() as u64;
    let filtered = state.filtered.load(AtomicOrdering::Relaxed);
    let here: Vec<&Condition> = spec
        .filter
        .iter()
        .filter(|c| !filtered || c.field.starts_with(COMPUTED))
        .collect();
    // Filtered here at all: the items no longer stand at the collection's positions, even
    // when this page lost none of them.
    let filtered_here = !here.is_empty();
    items.retain(|item| here.iter().all(|c| c.matches(item)));
    let sorted_here = !spec.sort.is_empty() && !state.sorted.load(AtomicOrdering::Relaxed);
    if sorted_here {
        items.sort_by(|a, b| order(&spec.sort, a, b));
    }
    let extent = extent(
        state,
        reported,
        items.len() as u64,
        returned_by_handler,
        filtered_here,
    );
    if (filtered_here || sorted_here) && !matches!(extent, Extent::Whole) {
        warnings.push(truncated(
            format!(
                "The operation returned one page of {returned_by_handler} items: the filter and sort were applied to that page only, not to the whole collection"
            ),
            json!({"reason": "page_filtered_or_sorted", "returned": returned_by_handler}),
        ));
    }
    let mut data = Map::new();
    if !spec.aggregate.is_empty() {
        let whole = matches!(extent, Extent::Whole);
        let aggregations = aggregations(spec, whole, &items, returned_by_handler, &mut warnings);
        data.insert("aggregations".into(), Value::Object(aggregations));
    }
    if spec.include_items {
        let exact_positions = !filtered_here && !sorted_here;
        let (page, pagination) = paginate(
            spec,
            extent,
            items,
            item_schema,
            exact_positions,
            &mut warnings,
        );
        data.insert("items".into(), Value::Array(page));
        data.insert(pagination.0.into(), pagination.1);
    }
    (Value::Object(data), warnings)
}

/// Put each item's computed fields in it, under the reserved key.
fn compute(items: &mut [Value], computed: &[ComputedField]) {
    if computed.is_empty() {
        return;
    }
    for item in items {
        let values: Map<String, Value> = computed
            .iter()
            .map(|c| (c.name.clone(), (c.compute)(item)))
            .collect();
        if let Value::Object(map) = item {
            map.insert(COMPUTED.to_owned(), Value::Object(values));
        }
    }
}

/// What is known of the collection behind the items: `shown` of them are left after the
/// filter, of `returned_by_handler`; `reported` is the handler's own total.
fn extent(
    state: &State,
    reported: Option<u64>,
    shown: u64,
    returned_by_handler: u64,
    filtered_here: bool,
) -> Extent {
    let spec = &state.spec;
    match (state.paged.get(), spec.own_page) {
        // Every matching item was asked for and returned.
        (Some(_), _) if spec.window().is_all() => Extent::Whole,
        (Some(&total), _) => Extent::Window {
            offset: spec.window().offset,
            total,
        },
        // No paging of its own and no total reported: the whole collection, by contract.
        (None, None) if reported.is_none() => Extent::Whole,
        (None, own) => {
            let base = own.map_or(0, |own| own.offset);
            let total = match reported {
                // The handler's total counts what its items are drawn from: still true
                // when nothing was filtered out here.
                Some(total) if !filtered_here => Some(total),
                // Filtered here, but everything was there to filter.
                Some(total) if base == 0 && returned_by_handler == total => Some(shown),
                Some(_) => None,
                None => {
                    // A page may be cut when its limit is unknown, or when it is full.
                    let cut = own.is_some_and(|own| match own.limit {
                        Some(limit) => returned_by_handler >= limit,
                        None => own.limit_declared,
                    });
                    // Nothing at an offset says only that the collection ends before it.
                    let past_end = returned_by_handler == 0 && base > 0;
                    // A page that is not cut ends the collection; its total is known when
                    // nothing before it was filtered here.
                    (!cut && !past_end && (base == 0 || !filtered_here))
                        .then(|| base.saturating_add(shown))
                }
            };
            if own.is_none() && base == 0 && total == Some(shown) {
                Extent::Whole
            } else {
                Extent::OwnPage {
                    offset: base,
                    total,
                }
            }
        }
    }
}

/// The aggregations over the items: their values when the items are the whole collection
/// (`whole`), else `null` each, with a warning.
fn aggregations(
    spec: &Spec,
    whole: bool,
    items: &[Value],
    returned_by_handler: u64,
    warnings: &mut Vec<Warning>,
) -> Map<String, Value> {
    if whole {
        return spec
            .aggregate
            .iter()
            .map(|a| (a.label.clone(), aggregate(a, items)))
            .collect();
    }
    warnings.push(truncated(
        format!(
            "The operation returned one page of {returned_by_handler} items, not its whole collection: aggregations are unknown"
        ),
        json!({"reason": "incomplete_collection", "returned": returned_by_handler}),
    ));
    spec.aggregate
        .iter()
        .map(|a| (a.label.clone(), Value::Null))
        .collect()
}

/// The page of `items` the query asked for, with its pagination object (`pagination` or
/// `pageInfo`), every figure in it true: one the runtime cannot know is `null`, and a warning
/// says why. `exact_positions`: the items are in collection order with nothing filtered or
/// sorted here, so their positions are the collection's.
fn paginate(
    spec: &Spec,
    extent: Extent,
    items: Vec<Value>,
    item_schema: &Map<String, Value>,
    exact_positions: bool,
    warnings: &mut Vec<Warning>,
) -> (Vec<Value>, (&'static str, Value)) {
    let count = items.len() as u64;
    let cursor = !matches!(spec.page, Page::Offset { .. });
    // Where the items start in the collection, and its size when known.
    let (base, total) = match extent {
        Extent::Whole => (0, Some(count)),
        Extent::Window { offset, total } => (offset, Some(total)),
        Extent::OwnPage { offset, total, .. } => (offset, total),
    };
    // Offset-style figures: the operation's own page, or the runtime's.
    let (limit, offset) = match (spec.own_page, &spec.page) {
        (Some(own), _) => (own.limit, own.offset),
        (None, Page::Offset { limit, offset }) => (Some(*limit), *offset),
        (None, _) => (None, 0),
    };
    // The page's positions in the collection (`end` may be past the known items).
    let known = total.unwrap_or(base.saturating_add(count));
    let (start, end) = positions(&spec.page, limit, offset, known);
    // The items start at `base`: a page cannot start before them.
    let start = start.max(base).min(end.max(base));
    let page: Vec<Value> = items
        .into_iter()
        .skip(usize::try_from(start.saturating_sub(base)).unwrap_or(usize::MAX))
        .take(usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX))
        .map(|item| select(item, &spec.fields, item_schema))
        .collect();
    let returned = page.len() as u64;
    let end = start.saturating_add(returned);
    // Without a total, more is known to follow only when known items are left over.
    let more = match total {
        Some(total) => Some(end < total),
        None if exact_positions && end < known => Some(true),
        None => None,
    };
    if total.is_none() {
        warnings.push(unknown_total(count, base));
    }
    let pagination = if cursor {
        let mut info = json!({
            "hasNextPage": more,
            "hasPreviousPage": start > 0,
            "totalCount": total
        });
        if returned > 0 && (total.is_some() || exact_positions) {
            info["startCursor"] = json!(encode_cursor(start));
            info["endCursor"] = json!(encode_cursor(end - 1));
        }
        ("pageInfo", info)
    } else {
        (
            "pagination",
            json!({
                "limit": limit, "offset": offset, "returned": returned,
                "total_items": total, "has_more": more
            }),
        )
    };
    (page, pagination)
}

/// The page's positions in a collection of `known` items (`end` excluded).
fn positions(page: &Page, limit: Option<u64>, offset: u64, known: u64) -> (u64, u64) {
    match *page {
        Page::Offset { .. } => (
            offset.min(known),
            offset.saturating_add(limit.unwrap_or(u64::MAX)).min(known),
        ),
        Page::Forward { first, after } => {
            let start = after.map_or(0, |a| a.saturating_add(1)).min(known);
            (start, start.saturating_add(first).min(known))
        }
        Page::Backward { last, before } => {
            let end = before.unwrap_or(known).min(known);
            (end.saturating_sub(last), end)
        }
    }
}

/// The warning that a page of `count` items at offset `base` is not the whole collection.
fn unknown_total(count: u64, base: u64) -> Warning {
    truncated(
        format!(
            "The operation returned one page of {count} items at offset {base}, not its whole collection: the total is unknown, so the figures that need it are null. Ask for the next page with offset {}",
            base.saturating_add(count)
        ),
        json!({"reason": "page_of_collection", "returned": count, "offset": base}),
    )
}

fn order(keys: &[SortKey], a: &Value, b: &Value) -> Ordering {
    for key in keys {
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

/// `data` with only the selected fields: an object, or each object of an array.
pub(crate) fn select_fields(data: Value, fields: &Fields, schema: &Map<String, Value>) -> Value {
    match data {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| select(item, fields, schema))
                .collect(),
        ),
        other => select(other, fields, schema),
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

pub(super) fn lookup<'v>(item: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(item, |value, key| value.get(key))
}

pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

pub(super) fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}
