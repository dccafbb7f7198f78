//! Collection queries on READ operations that return lists: filter, sort, field selection,
//! offset and cursor pagination, aggregation and computed fields. The runtime applies them to
//! the items a handler returns, except the stages the handler pushed down itself through the
//! [`CollectionQuery`] extractor.
//!
//! This file holds the query's types; `parse` reads one from a request's parameters, `apply`
//! runs it over a handler's items.

mod apply;
mod parse;
#[cfg(test)]
mod tests;

pub(crate) use apply::apply;
use apply::{compare, json_eq, lookup};
pub(crate) use parse::parse;

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use serde_json::Value;

use crate::{AbilityError, Context, FromContext};

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

pub(super) const DEFAULT_PAGE: u64 = 20;
pub(super) const MAX_PAGE: u64 = 1000;
pub(super) const COMPUTED: &str = "_computed";

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
pub(super) enum Page {
    Offset { limit: u64, offset: u64 },
    Forward { first: u64, after: Option<u64> },
    Backward { last: u64, before: Option<u64> },
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Fields {
    Minimal,
    Standard,
    Full,
    Paths(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Aggregate {
    pub(super) label: String,
    pub(super) group_by: Option<String>,
    pub(super) function: Function,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Function {
    Count,
    Sum(String),
    Avg(String),
    Min(String),
    Max(String),
}

/// A parsed collection query.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spec {
    pub(super) filter: Vec<Condition>,
    pub(super) sort: Vec<SortKey>,
    pub(super) fields: Fields,
    pub(super) page: Page,
    pub(super) aggregate: Vec<Aggregate>,
    pub(super) include_items: bool,
}

/// A query with what the handler pushed down.
#[derive(Debug)]
pub(crate) struct State {
    pub(super) spec: Spec,
    pub(super) filtered: AtomicBool,
    pub(super) sorted: AtomicBool,
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
