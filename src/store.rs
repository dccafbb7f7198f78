//! Where what outlives a request is kept: tasks, confirmation tokens, idempotency records,
//! rate budgets, and (with a store replicas share) protocol 2025 sessions.
//!
//! A server keeps these in a [`MemoryStore`] by default. Give
//! [`ServerBuilder::store`](crate::ServerBuilder::store) an `SqliteStore` file (feature
//! `sqlite`) so they survive a restart, a `PostgresStore` (feature `postgres`) or a
//! `RedisStore` (feature `redis`) that replicas share, or your own [`Store`]: the other types
//! here are that trait's contract.

#[cfg(feature = "postgres")]
pub use abilities_runtime::PostgresStore;
#[cfg(feature = "redis")]
pub use abilities_runtime::RedisStore;
#[cfg(feature = "sqlite")]
pub use abilities_runtime::SqliteStore;
pub use abilities_runtime::{
    Claim, Claimed, MemoryStore, RateTaken, SessionEvent, SessionEvents, SessionRecord, Spend,
    Store, StoreError, StoreFuture, StreamEvent, StreamRead, TaskEvent, TaskEvents, TaskInsert,
    TaskLimits, TaskRecord, TaskSignal, TaskStatus, TokenRecord, Updates,
};
