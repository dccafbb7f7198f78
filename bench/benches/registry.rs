//! Registry scale: building the registry (schemas derived, validators compiled) and serving
//! `tools/list` for 10, 100, 1,000 and 10,000 abilities: one page through the handler (the
//! default 100 tools, what a client's request costs), and every tool at once.
//!
//! Run: `cargo bench -p abilities-bench --bench registry`. The abilities are real `#[ability]` output: five
//! templates of different shapes below, replicated under generated names (`ns3/op-1234`), so
//! the build does the work it does for that many distinct functions without compiling them.

use std::hint::black_box;
use std::time::Duration;

use abilities::__private::{AbilityDef, inventory};
use abilities::protocol::rmcp::model::ListToolsResult;
use abilities::{Registry, Server};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rmcp::ServerHandler;

mod common;

mod templates {
    use abilities::{AbilityError, ability};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(crate) enum Kind {
        Post,
        Page,
        Attachment,
    }

    #[derive(Serialize, JsonSchema)]
    pub(crate) struct Item {
        id: u64,
        title: String,
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    pub(crate) struct Filter {
        status: Option<String>,
        after: Option<String>,
        limit: Option<u32>,
    }

    /// Count items of one kind.
    #[ability(semantic = "READ", flatten)]
    fn count(kind: Kind) -> u64 {
        let _ = kind;
        0
    }

    /// Create an item.
    #[ability(semantic = "CREATE", permission = "items:write")]
    fn create(
        #[param(description = "The title.")] title: String,
        #[param(default = false)] draft: bool,
        tags: Option<Vec<String>>,
    ) -> Result<Item, AbilityError> {
        let _ = draft;
        Ok(Item {
            id: 1,
            title,
            tags: tags.unwrap_or_default(),
        })
    }

    /// Search items.
    #[ability(semantic = "READ")]
    fn search(query: String, filter: Option<Filter>) -> Vec<Item> {
        let _ = (query, filter.map(|f| (f.status, f.after, f.limit)));
        Vec::new()
    }

    /// Delete an item.
    #[ability(semantic = "DELETE")]
    fn delete(id: u64) -> bool {
        id > 0
    }

    /// Rebuild the index.
    #[ability(semantic = "EXECUTE")]
    fn reindex() {}
}

/// `n` ability definitions: the templates under generated names, leaked for `'static`.
fn defs(n: usize) -> Vec<&'static AbilityDef> {
    let templates: Vec<&'static AbilityDef> = inventory::iter::<AbilityDef>
        .into_iter()
        .filter(|d| d.rust_path.starts_with("registry::templates::"))
        .collect();
    assert_eq!(templates.len(), 5, "the five templates");
    (0..n)
        .map(|i| {
            let template = templates[i % templates.len()];
            let name: &'static str = Box::leak(format!("ns{}/op-{i}", i % 10).into_boxed_str());
            let def: &'static AbilityDef = Box::leak(Box::new(AbilityDef {
                name,
                kind: template.kind.clone(),
                ..*template
            }));
            def
        })
        .collect()
}

fn registry(c: &mut Criterion) {
    let mut group = c.benchmark_group("registry build");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for n in [10, 100, 1_000, 10_000] {
        let defs = defs(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &defs, |b, defs| {
            // Building, not tearing down: a registry lives as long as the program.
            b.iter_with_large_drop(|| Registry::from_defs(black_box(defs.iter().copied())));
        });
    }
    group.finish();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let servers: Vec<(usize, Server)> = [10, 100, 1_000, 10_000]
        .into_iter()
        .map(|n| {
            let server = Server::builder()
                .registry(Registry::from_defs(defs(n)).unwrap_or_else(|e| panic!("{e}")))
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            (n, server)
        })
        .collect();

    let mut group = c.benchmark_group("tools/list page");
    for (n, server) in &servers {
        let handler = server.handler(None);
        let peer = rt.block_on(common::peer(handler.clone()));
        group.bench_with_input(BenchmarkId::from_parameter(n), &handler, |b, handler| {
            // A client's request: the first page from the snapshot, then its JSON.
            b.iter(|| {
                let page = rt.block_on(ServerHandler::list_tools(
                    handler,
                    None,
                    common::request(&peer),
                ));
                page.map(|page| serde_json::to_vec(&page).map(|v| v.len()))
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("tools/list all");
    for (n, server) in &servers {
        group.bench_with_input(BenchmarkId::from_parameter(n), server, |b, server| {
            // Every tool in one answer: the cached list, then its JSON.
            b.iter(|| {
                let result = ListToolsResult::with_all_items(server.tools());
                serde_json::to_vec(&result).map(|v| v.len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, registry);
criterion_main!(benches);
