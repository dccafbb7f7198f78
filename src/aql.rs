//! MCP-AQL: the query language surface ([`Surface::Aql`](crate::Surface)), with the feature
//! `aql`.
//!
//! Reach for this module when you serve MCP-AQL and want to tune it ([`Aql`], [`AqlLimits`],
//! [`AqlMode`]) or when an ability reads a collection query: filters, sorting, windows and
//! computed fields a client sends ([`CollectionQuery`] and its parts).

pub use abilities_runtime::{
    Aql, AqlLimits, AqlMode, CollectionQuery, ComputedField, Condition, FilterOp, SortKey, Window,
    merge_input, operation_name,
};
