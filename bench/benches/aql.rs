//! MCP-AQL costs: `introspect` (the operation list and one operation's detail) and a batch of
//! 100 operations, each a whole `tools/call` through the handler, in process; and discovery in
//! a catalog of 10,000 operations (a search, a filtered page, a detail, and the whole list for
//! comparison).
//!
//! Run: `cargo bench -p abilities-bench --bench aql`.

mod common;

use std::hint::black_box;
use std::sync::Mutex;

use abilities::protocol::rmcp::model::{CallToolRequestParams, CallToolResponse};
use abilities::{AbilityError, Registry, Server, State, Surface, ability};
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServerHandler;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Clone, Serialize, JsonSchema)]
struct Note {
    id: u64,
    text: String,
    pinned: bool,
}

struct Notes(Mutex<Vec<Note>>);

/// List notes.
#[ability(semantic = "READ")]
fn list_notes(notes: State<Notes>) -> Vec<Note> {
    notes.0.0.lock().map(|n| n.clone()).unwrap_or_default()
}

/// Get one note.
#[ability(semantic = "READ")]
fn get_note(id: u64, notes: State<Notes>) -> Result<Note, AbilityError> {
    notes
        .0
        .0
        .lock()
        .ok()
        .and_then(|n| n.iter().find(|n| n.id == id).cloned())
        .ok_or_else(|| AbilityError::not_found(format!("no note {id}")))
}

/// Pin or unpin a note.
#[ability(semantic = "UPDATE")]
fn update_note(id: u64, pinned: Option<bool>, text: Option<String>) -> bool {
    let _ = (id, pinned, text);
    true
}

fn params(args: Value) -> CallToolRequestParams {
    serde_json::from_value(json!({"name": "mcp_aql", "arguments": args}))
        .unwrap_or_else(|e| panic!("params: {e}"))
}

/// A server's handler called in process, on a runtime of its own.
struct Caller {
    rt: tokio::runtime::Runtime,
    handler: abilities::handler::McpHandler,
    peer: rmcp::Peer<rmcp::RoleServer>,
}

impl Caller {
    fn new(server: &Server) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let handler = server.handler(None);
        let peer = rt.block_on(common::peer(handler.clone()));
        Self { rt, handler, peer }
    }

    /// One `tools/call` of `mcp_aql`, as a client sends it.
    fn call(&self, args: &Value) -> Result<CallToolResponse, rmcp::ErrorData> {
        self.rt
            .block_on(ServerHandler::call_tool(
                &self.handler,
                params(black_box(args.clone())),
                common::request(&self.peer),
            ))
            .map(black_box)
    }

    /// Call each of `cases` once: every one answers a success.
    fn check<'a>(&self, cases: impl IntoIterator<Item = &'a Value>) {
        for args in cases {
            match self.call(args) {
                Ok(CallToolResponse::Complete(result)) => {
                    assert_eq!(result.is_error, Some(false), "{result:?}");
                }
                other => panic!("unexpected answer: {other:?}"),
            }
        }
    }
}

fn aql(c: &mut Criterion) {
    let notes = (0..50)
        .map(|id| Note {
            id,
            text: format!("note {id}"),
            pinned: id % 3 == 0,
        })
        .collect();
    let server = Server::builder()
        // This file's abilities (the examples' library is linked too, for the catalog).
        .registry(Registry::collect_in(module_path!()).unwrap_or_else(|e| panic!("{e}")))
        .state(Notes(Mutex::new(notes)))
        .surface(Surface::aql_single())
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"));
    let caller = Caller::new(&server);
    let call = |args: &Value| caller.call(args);

    let list = json!({"operation": "introspect", "params": {"query": "operations"}});
    let detail =
        json!({"operation": "introspect", "params": {"query": "operations", "name": "list_notes"}});
    let batch = json!({"operations": (0..100).map(|i| match i % 3 {
        0 => json!({"operation": "get_note", "params": {"id": i % 50}}),
        1 => json!({"operation": "update_note", "params": {"id": i, "input": {"pinned": true}}}),
        _ => json!({"operation": "list_notes", "params": {"filter": {"pinned": true}, "fields": ["id"], "limit": 5}}),
    }).collect::<Vec<_>>()});
    caller.check([&list, &detail, &batch]);

    let mut group = c.benchmark_group("aql");
    group.bench_function("introspect operations", |b| b.iter(|| call(&list)));
    group.bench_function("introspect detail", |b| b.iter(|| call(&detail)));
    group.bench_function("batch of 100", |b| b.iter(|| call(&batch)));
    group.finish();
}

/// `introspect` over the generated back office of 10,000 operations.
fn catalog(c: &mut Criterion) {
    let registry =
        abilities_examples::catalog::registry(10_000).unwrap_or_else(|e| panic!("catalog: {e}"));
    assert_eq!(registry.len(), 10_000);
    let server = Server::builder()
        .registry(registry)
        .surface(Surface::aql_single())
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"));
    let caller = Caller::new(&server);
    let introspect = |params: Value| json!({"operation": "introspect", "params": params});
    let cases = [
        (
            "search",
            introspect(
                json!({"query": "operations", "search": "refund payment invoice", "first": 10}),
            ),
        ),
        (
            "filtered page",
            introspect(
                json!({"query": "operations", "category": "billing", "endpoint": "read", "first": 20}),
            ),
        ),
        (
            "detail",
            introspect(json!({"query": "operations", "name": "jp_billing_list_invoices"})),
        ),
        ("whole list", introspect(json!({"query": "operations"}))),
    ];
    caller.check(cases.iter().map(|(_, args)| args));
    let mut group = c.benchmark_group("aql introspect, 10,000 operations");
    for (name, args) in &cases {
        group.bench_function(*name, |b| b.iter(|| caller.call(args)));
    }
    group.finish();
}

criterion_group!(benches, aql, catalog);
criterion_main!(benches);
