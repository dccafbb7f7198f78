//! The `todo` example's abilities over MCP-AQL on SQLite: the filter and sort of a collection
//! query go into the SQL, updates take `input`, deletions need confirmation.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities_examples::todo;

use crate::support::Lines;
use abilities::{Server, Surface};
use serde_json::{Value, json};

async fn aql(lines: &mut Lines, id: u64, tool: &str, args: Value) -> Value {
    let result = lines.call(id, tool, args).await;
    serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON")
}

#[tokio::test]
async fn todos_over_mcp_aql() {
    let dir = std::env::temp_dir().join(format!("abilities-aql-todo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("todo.db");
    let _ = std::fs::remove_file(&path);
    let db = todo::TodoDb::open(&path).expect("the database opens");
    for i in 0..60 {
        db.create(&format!("chore {i}"), todo::Priority::Low)
            .await
            .expect("created");
    }
    db.create("the one that matters", todo::Priority::High)
        .await
        .expect("created");
    let server = Server::builder()
        .registry(todo::registry().expect("valid"))
        .state(db)
        .surface(Surface::aql_semantic())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;

    // 63 rows: the handler's own LIMIT 50 would cut the high-priority ones off unless the
    // filter is in the SQL.
    let high = aql(
        &mut lines,
        2,
        "mcp_aql_read",
        json!({"operation": "list_todos", "params": {
            "filter": {"priority": "high"}, "sort": {"field": "title", "order": "desc"},
            "fields": ["id", "title"]
        }}),
    )
    .await;
    let titles: Vec<&str> = high["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|t| t["title"].as_str())
        .collect();
    assert_eq!(
        titles,
        ["the one that matters", "Write the README"],
        "{high}"
    );

    // A condition SQL cannot take (`in`): the runtime filters what the handler returned.
    let some = aql(
        &mut lines,
        3,
        "mcp_aql_read",
        json!({"operation": "list_todos", "params": {
            "filter": {"id": {"in": [1, 2]}}, "fields": ["id"]
        }}),
    )
    .await;
    assert_eq!(some["data"]["items"], json!([{"id": 1}, {"id": 2}]));

    let counts = aql(
        &mut lines,
        4,
        "mcp_aql_read",
        json!({"operation": "list_todos", "params": {"completed": false,
            "aggregate": {"by_priority": {"group_by": "priority"}}}}),
    )
    .await;
    // Every open low-priority todo, past the operation's own page of 50: 60 chores and
    // "Water the plants".
    assert_eq!(
        counts["data"]["aggregations"]["by_priority"]["low"], 61,
        "{counts}"
    );

    let updated = aql(
        &mut lines,
        5,
        "mcp_aql_update",
        json!({"operation": "update_todo", "params": {"id": 2, "input": {"completed": true}}}),
    )
    .await;
    assert_eq!(updated["data"]["completed"], true, "{updated}");

    let gate = aql(
        &mut lines,
        6,
        "mcp_aql_delete",
        json!({"operation": "delete_todo", "params": {"id": 2}}),
    )
    .await;
    assert_eq!(gate["error"]["code"], "CONFIRMATION_REQUIRED");
    let token = gate["confirmation"]["token"].clone();
    let deleted = aql(
        &mut lines,
        7,
        "mcp_aql_delete",
        json!({"operation": "delete_todo", "params": {"id": 2, "_confirmation": token}}),
    )
    .await;
    assert_eq!(deleted, json!({"success": true, "data": {"deleted": true}}));

    // clear_completed is EXECUTE, as the walkthrough declares it, and destructive: confirmed.
    let wrong = aql(
        &mut lines,
        8,
        "mcp_aql_delete",
        json!({"operation": "clear_completed"}),
    )
    .await;
    assert_eq!(
        wrong["error"]["code"], "VALIDATION_ENDPOINT_MISMATCH",
        "{wrong}"
    );
    let gate = aql(
        &mut lines,
        9,
        "mcp_aql_execute",
        json!({"operation": "clear_completed"}),
    )
    .await;
    assert_eq!(gate["error"]["code"], "CONFIRMATION_REQUIRED", "{gate}");
    let token = gate["confirmation"]["token"].clone();
    let cleared = aql(
        &mut lines,
        10,
        "mcp_aql_execute",
        json!({"operation": "clear_completed", "params": {"_confirmation": token}}),
    )
    .await;
    // "Write the README", the one completed todo left (todo 2 was deleted above).
    assert_eq!(cleared["data"], json!({"deletedCount": 1}), "{cleared}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The draft's standard profile: all five CRUDE tools, whatever the registry holds; skipping
/// the empty ones is an option.
#[tokio::test]
async fn the_standard_profile_registers_five_tools() {
    let names = |server: &Server| -> Vec<String> {
        server.tools().iter().map(|t| t.name.to_string()).collect()
    };
    let db = || todo::TodoDb::open(std::path::Path::new(":memory:")).expect("opens");
    let standard = Server::builder()
        .registry(todo::registry().expect("valid"))
        .state(db())
        .surface(Surface::aql_semantic())
        .build()
        .expect("valid");
    assert_eq!(
        names(&standard),
        [
            "mcp_aql_create",
            "mcp_aql_read",
            "mcp_aql_update",
            "mcp_aql_delete",
            "mcp_aql_execute"
        ]
    );
    let empty = Server::builder()
        .registry(todo::registry().expect("valid"))
        .registry(abilities::Registry::from_abilities([]).expect("empty"))
        .surface(Surface::aql_semantic())
        .build()
        .expect("valid");
    assert_eq!(names(&empty).len(), 5);
    let delete = empty
        .tools()
        .iter()
        .find(|t| t.name == "mcp_aql_delete")
        .and_then(|t| t.annotations.clone())
        .expect("annotated");
    assert_eq!(delete.destructive_hint, Some(true));
    assert_eq!(delete.read_only_hint, Some(false));
    let skipping = Server::builder()
        .registry(todo::registry().expect("valid"))
        .registry(abilities::Registry::from_abilities([]).expect("empty"))
        .surface(Surface::Aql(
            abilities::aql::Aql::new(abilities::aql::AqlMode::Semantic).skip_empty_families(true),
        ))
        .build()
        .expect("valid");
    assert_eq!(names(&skipping), ["mcp_aql_read"]);
}

/// Every answer the evidence bundles hold (made from the `todo` example's live answers and
/// checked against them in CI) fits the envelope schema, and a batch's the batch schema too:
/// the rules of the official operation-result and batch-operation schemas.
#[test]
fn the_evidence_bundles_answers_fit_the_schemas() {
    fn answers<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
        match value {
            Value::Object(map) => {
                if map.get("success").is_some_and(Value::is_boolean)
                    && (map.contains_key("data") || map.contains_key("error"))
                {
                    out.push(value);
                    return;
                }
                map.values().for_each(|v| answers(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| answers(v, out)),
            _ => {}
        }
    }
    for bundle in [
        include_str!("../../docs/aql-evidence/todo-aql-single.json"),
        include_str!("../../docs/aql-evidence/todo-aql-crude.json"),
    ] {
        let bundle: Value = serde_json::from_str(bundle).expect("a bundle");
        let mut found = Vec::new();
        answers(&bundle, &mut found);
        assert!(found.len() >= 10, "{} answers", found.len());
        for answer in found {
            crate::support::assert_aql_envelope(answer);
            if answer.get("results").is_some() {
                crate::support::assert_aql_batch(answer);
            }
        }
    }
}
