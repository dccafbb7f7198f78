//! The integration tests, one binary: each module is a subject (a surface, a transport, a
//! guarantee) and serves only its own abilities (`builder!()`, or
//! `Registry::collect_in(module_path!())`), so modules may reuse ability names. What must
//! own the whole program is `tests/program.rs`; the compile-fail cases are `tests/compile.rs`.

/// `Server::builder()` serving the abilities of the calling module and those below it.
macro_rules! builder {
    () => {
        abilities::Server::builder().registry(
            abilities::Registry::collect_in(module_path!()).expect("the module's abilities"),
        )
    };
}

mod aql;
mod aql_collections;
mod aql_danger;
mod aql_discovery;
mod aql_fidelity;
mod aql_relations;
mod aql_todo;
mod audit;
mod batches;
mod client_requests;
mod confirmation;
mod duplicate_names;
mod duplicate_resources;
mod extractors;
mod fuzzing;
mod guide;
mod headers;
mod http_limits;
mod idempotency;
mod in_place;
mod jsonrpc;
mod jwt;
mod listen_streams;
mod live_abilities;
mod metrics;
mod middleware;
mod multi_round;
mod normalize;
mod notifications;
mod numbers;
mod one_map;
mod otel;
mod pipeline;
mod probes;
mod properties;
mod rate_limits;
mod replica_sessions;
mod replica_tasks;
mod replicas;
mod resources_prompts;
mod rich;
mod runtime_abilities;
mod schema;
mod schema_profile;
mod scopes;
mod server;
mod site_context;
mod skills;
mod store;
mod support;
mod surfaces;
mod tasks;
mod tasks_2025;
mod test_client;
mod tool_name_collision;
