//! Tuning a server: HTTP limits, tasks, the ledger, rate limits, schema profiles, the meta
//! tools' names.
//!
//! The values [`ServerBuilder`](crate::ServerBuilder) and [`Surface`](crate::Surface) take
//! besides the everyday ones; the defaults suit most servers. Durations say what they
//! measure: a `timeout` is how long the server waits, a `ttl` how long it keeps something,
//! an `interval` how often it does something.

pub use abilities_runtime::{
    HttpConfig, LedgerConfig, MetaNames, Rate, RateError, RateProblem, SchemaProfile, TaskConfig,
};
