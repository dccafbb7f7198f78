//! MCP-AQL relations: a collection's items include the related items of another operation in
//! one request, fetched with one call of it; a relation naming what is not there fails
//! `build()`; the `site` example relates posts to their authors.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities_examples::site;

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::Lines;
use abilities::{
    Ability, Context, Registry, Semantic, ServerError, Surface,
    aql::{Aql, AqlMode},
};
use serde_json::{Value, json};

fn list(name: &'static str, items: Value, props: Value, calls: Arc<AtomicUsize>) -> Ability {
    Ability::builder(name, Semantic::Read)
        .description("A list.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .output_schema(json!({"type": "array", "items": {"type": "object", "properties": props}}))
        .handler(move |_ctx: Context, _args: Value| {
            let (items, calls) = (items.clone(), Arc::clone(&calls));
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(items)
            }
        })
        .build()
        .expect("builds")
}

fn registry(user_calls: &Arc<AtomicUsize>) -> Registry {
    let posts: Vec<Value> = (1..=30)
        .map(|i| json!({"id": i, "title": format!("post {i}"), "author_id": if i % 10 == 0 { Value::Null } else { json!(i % 3 + 1) }}))
        .collect();
    let users = json!([{"id": 1, "name": "Ada"}, {"id": 2, "name": "Grace"}, {"id": 3, "name": "Edsger"}, {"id": 4, "name": "Barbara"}]);
    Registry::from_abilities([
        list(
            "list_posts",
            Value::Array(posts),
            json!({"id": {"type": "integer"}, "title": {"type": "string"}, "author_id": {"type": ["integer", "null"]}}),
            Arc::new(AtomicUsize::new(0)),
        ),
        list(
            "list_users",
            users,
            json!({"id": {"type": "integer"}, "name": {"type": "string"}}),
            Arc::clone(user_calls),
        ),
    ])
    .expect("valid")
}

async fn aql(lines: &mut Lines, id: u64, args: Value) -> Value {
    let result = lines.call(id, "mcp_aql", args).await;
    let envelope: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON");
    if envelope.get("operations").is_none() && envelope["data"].get("_protocol").is_none() {
        support::assert_aql_envelope(&envelope);
    }
    envelope
}

#[tokio::test]
async fn related_items_come_in_one_request_with_one_batched_call() {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = builder!()
        .registry(registry(&calls))
        .surface(Surface::Aql(Aql::new(AqlMode::Single).relation(
            "list_posts",
            "author",
            "author_id",
            "list_users",
        )))
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let page = aql(
        &mut lines,
        2,
        json!({"operation": "list_posts", "params": {"include": ["author"], "limit": 12}}),
    )
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one call for every author");
    let items = page["data"]["items"].as_array().expect("items");
    assert_eq!(items.len(), 12, "{page}");
    for item in items {
        let expected = match item["author_id"].as_i64() {
            Some(1) => json!({"id": 1, "name": "Ada"}),
            Some(2) => json!({"id": 2, "name": "Grace"}),
            Some(3) => json!({"id": 3, "name": "Edsger"}),
            _ => Value::Null,
        };
        assert_eq!(item["author"], expected, "{item}");
    }
    assert!(page.get("warnings").is_none(), "{page}");

    // Without the key field in the selection, the relation cannot be resolved: said so.
    let refused = aql(
        &mut lines,
        3,
        json!({"operation": "list_posts", "params": {"include": ["author"], "fields": ["id"]}}),
    )
    .await;
    assert_eq!(
        refused["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{refused}"
    );
    let unknown = aql(
        &mut lines,
        4,
        json!({"operation": "list_posts", "params": {"include": ["editor"]}}),
    )
    .await;
    assert_eq!(
        unknown["error"]["details"]["valid_relations"],
        json!(["author"])
    );
    let list = aql(
        &mut lines,
        5,
        json!({"operation": "introspect", "params": {"query": "operations"}}),
    )
    .await;
    assert_eq!(
        list["data"]["_protocol"]["capabilities"]["relationship_queries"],
        true
    );
}

#[test]
fn a_relation_to_what_is_not_there_fails_build() {
    let calls = Arc::new(AtomicUsize::new(0));
    for (aql, problem) in [
        (
            Aql::new(AqlMode::Single).relation("list_posts", "author", "writer_id", "list_users"),
            "its items have no field `writer_id`",
        ),
        (
            Aql::new(AqlMode::Single).relation("list_posts", "author", "author_id", "list_people"),
            "there is no operation `list_people`",
        ),
    ] {
        let error = builder!()
            .registry(registry(&calls))
            .surface(Surface::Aql(aql))
            .build()
            .err()
            .expect("refused");
        assert!(
            matches!(&error, ServerError::AqlRelation { problem: p, .. } if p == problem),
            "{error}"
        );
    }
}

#[tokio::test]
async fn the_site_example_relates_posts_to_authors() {
    let dir = std::env::temp_dir().join(format!("abilities-aql-relations-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("site.db");
    let _ = std::fs::remove_file(&path);
    let server = builder!()
        .registry(site::registry().expect("valid"))
        .state(site::Db::open(&path).expect("opens"))
        .surface(Surface::Aql(site::aql(Aql::new(AqlMode::Single))))
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let posts = aql(
        &mut lines,
        2,
        json!({"operation": "wp_list_posts", "params": {
            "post_type": "post", "include": ["author"], "sort": {"field": "id"}, "fields": ["title", "author_id"]
        }}),
    )
    .await;
    let authors: Vec<(&str, &str)> = posts["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| {
            (
                p["title"].as_str().unwrap_or_default(),
                p["author"]["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        authors,
        [
            ("Hello world", "Ada"),
            ("Second thoughts", "Grace"),
            ("Unfinished", "Ada")
        ],
        "{posts}"
    );

    // SQL compares as the runtime does: a NULL author is not author 1, and sorts last.
    let others = aql(
        &mut lines,
        3,
        json!({"operation": "wp_list_posts", "params": {
            "filter": {"author_id": {"ne": 1}}, "sort": {"field": "author_id", "order": "desc"},
            "fields": ["title", "author_id"], "first": 100
        }}),
    )
    .await;
    assert_eq!(
        others["data"]["items"],
        json!([
            {"title": "Second thoughts", "author_id": 2},
            {"title": "logo.png", "author_id": null},
            {"title": "About", "author_id": null}
        ]),
        "{others}"
    );
    assert_eq!(others["data"]["pageInfo"]["totalCount"], 3);
    let _ = std::fs::remove_dir_all(&dir);
}
