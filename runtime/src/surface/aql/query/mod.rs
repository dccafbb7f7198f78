//! Collection queries on READ operations that return lists: filter, sort, field selection,
//! offset and cursor pagination, aggregation and computed fields. The runtime applies them to
//! the items a handler returns, except the stages the handler pushed down itself through the
//! [`CollectionQuery`] extractor.
//!
//! Every figure an answer carries is true. The runtime knows it has the whole collection when
//! the handler says so ([`CollectionQuery::paged`]: it returned the requested window and the
//! total), or when the operation has no paging of its own (its contract is then to return the
//! whole collection). An operation that pages itself (its own `limit` / `offset`) and returns
//! a full page leaves the total unknown: the answer says so with `null` figures and a warning.
//!
//! This file holds the query's types; `parse` reads one from a request's parameters, `apply`
//! runs it over a handler's items.

mod apply;
mod parse;
#[cfg(test)]
mod tests;

pub(crate) use apply::apply;
pub(crate) use apply::json_eq;
pub(crate) use apply::select_fields;
use apply::{compare, lookup};
pub(crate) use parse::{fields, parse};

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

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

/// Which fields an answer keeps.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fields {
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

/// The paging an operation does itself, through parameters of its own named `limit` and
/// `offset`: the values its handler got (sent, or the schema's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OwnPage {
    /// The limit the handler got; `None` when it has no `limit` or got none.
    pub(super) limit: Option<u64>,
    /// The operation has a `limit` parameter: without a known value, a page may be cut.
    pub(super) limit_declared: bool,
    pub(super) offset: u64,
}

/// A parsed collection query.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spec {
    pub(super) filter: Vec<Condition>,
    pub(super) sort: Vec<SortKey>,
    pub(super) fields: Fields,
    /// The runtime's page; unused when the operation pages itself.
    pub(super) page: Page,
    pub(super) own_page: Option<OwnPage>,
    pub(super) aggregate: Vec<Aggregate>,
    pub(super) include_items: bool,
    /// Warnings about the request itself (a page size clamped).
    pub(super) warnings: Vec<super::Warning>,
}

impl Spec {
    /// Whether a filter condition or sort key is on a computed field.
    fn uses_computed(&self) -> bool {
        self.filter.iter().any(|c| c.field.starts_with(COMPUTED))
            || self.sort.iter().any(|k| k.field.starts_with(COMPUTED))
    }

    /// The slice of the filtered, sorted collection the answer needs: every item
    /// ([`Window::ALL`]) for aggregations, or the last items with no cursor to count back from.
    fn window(&self) -> Window {
        if !self.aggregate.is_empty() {
            return Window::ALL;
        }
        match self.page {
            // No cursor: the operation's own page, if it pages itself.
            Page::Offset { limit, offset } => match self.own_page {
                Some(own) => Window {
                    offset: own.offset,
                    limit: own.limit.unwrap_or(u64::MAX),
                },
                None => Window { offset, limit },
            },
            Page::Forward { first, after } => Window {
                offset: after.map_or(0, |a| a.saturating_add(1)),
                limit: first,
            },
            Page::Backward {
                last,
                before: Some(before),
            } => Window {
                offset: before.saturating_sub(last),
                limit: last.min(before),
            },
            Page::Backward { before: None, .. } => Window::ALL,
        }
    }
}

/// The part of a collection a page needs: `limit` items from position `offset` of the
/// filtered, sorted collection. See [`CollectionQuery::page`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Window {
    /// Items to skip.
    pub offset: u64,
    /// Items to return at most (`u64::MAX`: no limit).
    pub limit: u64,
}

impl Window {
    /// `limit` items from position `offset`.
    pub fn new(offset: u64, limit: u64) -> Self {
        Self { offset, limit }
    }

    /// Every item.
    pub const ALL: Self = Self {
        offset: 0,
        limit: u64::MAX,
    };

    /// Whether this is every item.
    pub fn is_all(&self) -> bool {
        *self == Self::ALL
    }
}

/// A query with what the handler pushed down.
#[derive(Debug)]
pub(crate) struct State {
    pub(super) spec: Spec,
    pub(super) filtered: AtomicBool,
    pub(super) sorted: AtomicBool,
    /// The collection's total, from a handler that returned exactly the window.
    pub(super) paged: OnceLock<u64>,
}

/// The collection query of the current MCP-AQL request, for a READ handler that applies
/// filtering, sorting and paging itself (say, in SQL). Take it as a parameter; it is empty
/// outside MCP-AQL.
///
/// - Call [`filtered`](Self::filtered) / [`sorted`](Self::sorted) once applied, and the
///   runtime leaves those stages alone; it still pages, aggregates and selects fields.
/// - Or push everything down: return exactly the [`page`](Self::page) window of the
///   filtered, sorted collection and call [`paged`](Self::paged) with the collection's total.
///   The runtime then reports that total and pages from it, and never reads past the window.
///
/// A handler that does neither returns the whole collection, unless the operation pages
/// itself with parameters of its own named `limit` and `offset`: those reach the handler as
/// sent, the runtime does not page again, and a full page leaves the total unknown (`null`
/// figures and a `VALIDATION_TRUNCATED_WARNING`, never a false count).
///
/// ```standalone_crate
/// use abilities::{aql::{CollectionQuery, FilterOp}, ability};
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

    /// The window of the filtered, sorted collection the answer needs ([`Window::ALL`] when
    /// it needs every matching item: an aggregation, or the last items counted from the
    /// end). `None` outside MCP-AQL, and when the query filters or sorts on computed fields,
    /// which only the runtime can apply: then return the operation's own page.
    pub fn page(&self) -> Option<Window> {
        self.0
            .as_ref()
            .filter(|s| !s.spec.uses_computed())
            .map(|s| s.spec.window())
    }

    /// Declare the items returned exactly the [`page`](Self::page) window of the filtered,
    /// sorted collection, which holds `total` items. Implies [`filtered`](Self::filtered) and
    /// [`sorted`](Self::sorted). Ignored when [`page`](Self::page) is `None`.
    pub fn paged(&self, total: u64) {
        if let Some(state) = &self.0
            && !state.spec.uses_computed()
        {
            let _ = state.paged.set(total);
            self.filtered();
            self.sorted();
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
            paged: OnceLock::new(),
        }
    }
}
