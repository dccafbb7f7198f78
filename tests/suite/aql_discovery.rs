//! `introspect` in a large catalog (5,000 operations): keyword search, category and endpoint
//! filters and cursor pages, an extension advertised in `_protocol.capabilities`; the whole
//! list is still there for a client that asks for it.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::LazyLock;

use abilities_examples::catalog;

use crate::support::{Lines, assert_aql_envelope, assert_aql_introspection};
use abilities::{Server, Surface};
use serde_json::{Value, json};

static SERVER: LazyLock<Server> = LazyLock::new(|| {
    Server::builder()
        .registry(catalog::registry(5_000).expect("the catalog builds"))
        .surface(Surface::aql_single())
        .build()
        .expect("valid")
});

struct Aq {
    lines: Lines,
    id: u64,
}

impl Aq {
    async fn new() -> Self {
        Self {
            lines: Lines::initialized(&SERVER).await,
            id: 10,
        }
    }

    async fn introspect(&mut self, params: Value) -> Value {
        self.id += 1;
        let result = self
            .lines
            .call(
                self.id,
                "mcp_aql",
                json!({"operation": "introspect", "params": params}),
            )
            .await;
        let envelope: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
                .expect("JSON");
        assert_aql_envelope(&envelope);
        assert_aql_introspection(&envelope);
        envelope
    }
}

fn names(page: &Value) -> Vec<String> {
    page["data"]["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .filter_map(|o| o["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn search_ranks_the_operation_that_matches_every_word_first() {
    let mut aq = Aq::new().await;
    let found = aq
        .introspect(json!({"query": "operations", "search": "archive invoice eu", "first": 3}))
        .await;
    let best = names(&found);
    assert_eq!(best[0], "eu_billing_archive_invoice", "{found}");
    assert_eq!(best.len(), 3);
    // The other regions' copies come next: two of the three words.
    assert!(best[1].ends_with("_billing_archive_invoice"), "{found}");
    let discovery = &found["data"]["_protocol"]["discovery"];
    assert_eq!(discovery["search"], "archive invoice eu");
    assert_eq!(discovery["returned"], 3);
    assert_eq!(discovery["has_more"], true);
    // Plurals and descriptions count: "refunds" finds the refund operations.
    let refunds = aq
        .introspect(json!({"query": "operations", "search": "refunds", "first": 100}))
        .await;
    assert!(
        names(&refunds).iter().all(|n| n.contains("refund")),
        "{refunds}"
    );
    assert_eq!(refunds["data"]["_protocol"]["discovery"]["matched"], 50);
}

#[tokio::test]
async fn filters_and_pages_walk_every_match_once() {
    let mut aq = Aq::new().await;
    let ask =
        json!({"query": "operations", "category": "billing", "endpoint": "delete", "first": 10});
    let mut seen: Vec<String> = Vec::new();
    let mut params = ask.clone();
    loop {
        let page = aq.introspect(params.clone()).await;
        let discovery = page["data"]["_protocol"]["discovery"].clone();
        assert_eq!(discovery["matched"], 25, "{page}");
        for op in page["data"]["operations"].as_array().expect("operations") {
            assert_eq!(op["endpoint"], "delete", "{op}");
            seen.push(op["name"].as_str().expect("a name").to_owned());
        }
        if discovery["has_more"] == false {
            assert!(discovery.get("next_cursor").is_none());
            break;
        }
        params["after"] = discovery["next_cursor"].clone();
    }
    // Five regions of five billing entities each.
    assert_eq!(seen.len(), 25);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 25, "no operation twice");
    assert!(
        seen.iter().all(|n| n.contains("_billing_delete_")),
        "{seen:?}"
    );

    // A cursor belongs to its search: with other filters it is refused, not misread.
    let first = aq.introspect(ask.clone()).await;
    let cursor = first["data"]["_protocol"]["discovery"]["next_cursor"].clone();
    let other = aq
        .introspect(json!({"query": "operations", "category": "crm", "after": cursor}))
        .await;
    assert_eq!(
        other["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{other}"
    );
    let forged = aq
        .introspect(json!({"query": "operations", "category": "crm", "after": "bm9wZQ"}))
        .await;
    assert_eq!(
        forged["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{forged}"
    );
}

#[tokio::test]
async fn what_discovery_cannot_answer_is_refused() {
    let mut aq = Aq::new().await;
    for (params, code) in [
        (
            json!({"query": "operations", "name": "eu_crm_get_contact", "search": "contact"}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"query": "types", "search": "contact"}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"query": "operations", "search": "the of"}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"query": "operations", "search": " "}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"query": "operations", "search": 3}),
            "VALIDATION_INVALID_TYPE",
        ),
        (
            json!({"query": "operations", "search": (0..17).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ")}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"query": "operations", "first": 0}),
            "VALIDATION_INVALID_TYPE",
        ),
        (
            json!({"query": "operations", "page_size": 5}),
            "VALIDATION_UNKNOWN_PARAM",
        ),
    ] {
        let refused = aq.introspect(params.clone()).await;
        assert_eq!(refused["error"]["code"], code, "{params}: {refused}");
    }
    // Nothing matches: an empty page, said so.
    let none = aq
        .introspect(json!({"query": "operations", "search": "zeppelin"}))
        .await;
    assert_eq!(names(&none), Vec::<String>::new());
    assert_eq!(none["data"]["_protocol"]["discovery"]["matched"], 0);
}

#[tokio::test]
async fn the_extension_is_advertised_and_the_whole_list_stays() {
    let mut aq = Aq::new().await;
    let all = aq.introspect(json!({"query": "operations"})).await;
    assert_eq!(names(&all).len(), 5_001, "every operation and introspect");
    assert_eq!(
        all["data"]["_protocol"]["capabilities"]["operation_search"],
        true
    );
    let detail = aq
        .introspect(json!({"query": "operations", "name": "introspect"}))
        .await;
    let listed: Vec<&str> = detail["data"]["operation"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(
        listed,
        [
            "query", "name", "search", "category", "endpoint", "first", "after"
        ]
    );
}

#[tokio::test]
async fn plurals_pages_and_filters_are_read_as_documented() {
    let mut aq = Aq::new().await;
    // "-es" plurals find their singulars, and the other way round.
    for search in ["bonuses", "bonus"] {
        let found = aq
            .introspect(json!({"query": "operations", "search": search, "first": 100}))
            .await;
        assert_eq!(
            found["data"]["_protocol"]["discovery"]["matched"], 50,
            "{search}"
        );
        assert!(names(&found).iter().all(|n| n.contains("bonus")), "{found}");
    }
    // A page size past the most is refused, not cut; a whole float is an integer.
    let big = aq
        .introspect(json!({"query": "operations", "search": "invoice", "first": 1000}))
        .await;
    assert_eq!(big["error"]["code"], "VALIDATION_INVALID_TYPE", "{big}");
    let float = aq
        .introspect(json!({"query": "operations", "search": "invoice", "first": 5.0}))
        .await;
    assert_eq!(names(&float).len(), 5, "{float}");
    // A category or endpoint no operation has is refused with the ones there are.
    let semantic = aq
        .introspect(json!({"query": "operations", "category": "READ"}))
        .await;
    assert_eq!(
        semantic["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{semantic}"
    );
    assert!(
        semantic["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("billing")),
        "{semantic}"
    );
    // The detail says an operation's category, so a client can filter by it.
    let detail = aq
        .introspect(json!({"query": "operations", "name": "eu_billing_get_invoice"}))
        .await;
    assert!(
        detail["data"]["operation"]["description"]
            .as_str()
            .is_some_and(|d| d.ends_with("Category: billing.")),
        "{detail}"
    );
}

#[tokio::test]
async fn a_cursor_is_refused_once_the_catalog_changed() {
    let mut aq = Aq::new().await;
    let ask = json!({"query": "operations", "category": "crm", "first": 10});
    let first = aq.introspect(ask.clone()).await;
    let cursor = first["data"]["_protocol"]["discovery"]["next_cursor"].clone();
    // Another catalog of the same size: one operation replaced.
    let registry = catalog::registry(4_999).expect("builds");
    let extra = abilities::Ability::builder("eu-crm/merge-contacts", abilities::Semantic::Execute)
        .description("Merge two contacts.")
        .category("crm")
        .handler(|_ctx, _args: Value| async move { Ok(json!({})) })
        .build()
        .expect("builds");
    let changed = Server::builder()
        .registry(registry.with(extra).expect("added"))
        .surface(Surface::aql_single())
        .build()
        .expect("valid");
    let mut other = Aq {
        lines: Lines::initialized(&changed).await,
        id: 10,
    };
    let mut params = ask.clone();
    params["after"] = cursor.clone();
    let refused = other.introspect(params.clone()).await;
    assert_eq!(
        refused["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{refused}"
    );
    // On the catalog it came from, it still reads the next page.
    let next = aq.introspect(params).await;
    assert_eq!(names(&next).len(), 10, "{next}");
}
