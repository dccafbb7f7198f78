//! What introspection says an operation takes is what it takes (draft §4.6, §8.1.2), and the
//! answers keep what introspection promises: each case here was found by grading the `todo`
//! example's answers with MCP-AQL's own conformance runner.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities_examples::todo;

use crate::support::{Lines, assert_aql_envelope, assert_aql_introspection};
use abilities::{Server, Site, Surface};
use serde_json::{Value, json};

struct Todo {
    lines: Lines,
    id: u64,
    _dir: std::path::PathBuf,
}

impl Todo {
    /// The `todo` abilities on a fresh seeded database, through `mcp_aql`; with a site or not.
    async fn new(name: &str, site: bool) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "abilities-aql-fidelity-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let db = todo::TodoDb::open(&dir.join("todo.db")).expect("the database opens");
        let mut builder = Server::builder()
            .registry(todo::registry().expect("valid"))
            .state(db)
            .surface(Surface::aql_single());
        if site {
            builder = builder.site(Site::new("main", "https://todo.example"));
        }
        let server = builder.build().expect("valid");
        Self {
            lines: Lines::initialized(&server).await,
            id: 10,
            _dir: dir,
        }
    }

    /// The envelope `mcp_aql` answers `args` with, checked against the envelope schema (and
    /// the introspection schema for `introspect`).
    async fn send(&mut self, args: Value) -> Value {
        self.id += 1;
        let result = self.lines.call(self.id, "mcp_aql", args.clone()).await;
        let text = result["content"][0]["text"].as_str().expect("a text block");
        let envelope: Value = serde_json::from_str(text).expect("JSON");
        assert_aql_envelope(&envelope);
        if args["operation"] == "introspect" {
            assert_aql_introspection(&envelope);
        }
        envelope
    }

    async fn op(&mut self, operation: &str, params: Value) -> Value {
        self.send(json!({"operation": operation, "params": params}))
            .await
    }

    /// The parameters introspection lists for `operation`, by name.
    async fn listed(&mut self, operation: &str) -> Vec<Value> {
        let detail = self
            .op(
                "introspect",
                json!({"query": "operations", "name": operation}),
            )
            .await;
        detail["data"]["operation"]["parameters"]
            .as_array()
            .expect("parameters")
            .clone()
    }

    async fn names(&mut self, operation: &str) -> Vec<String> {
        self.listed(operation)
            .await
            .iter()
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect()
    }
}

#[tokio::test]
async fn site_id_is_listed_where_it_is_taken_and_refused_where_it_is_not() {
    // No site served: `site_id` means nothing, so it is an unknown parameter.
    let mut plain = Todo::new("nosite", false).await;
    assert!(!plain.names("get_todo").await.contains(&"site_id".into()));
    let refused = plain.op("get_todo", json!({"id": 1, "site_id": "x"})).await;
    assert_eq!(
        refused["error"]["code"], "VALIDATION_UNKNOWN_PARAM",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("site_id")),
        "{refused}"
    );
    // A site served: listed, accepted when it names the site, refused when it names another.
    let mut sited = Todo::new("site", true).await;
    assert!(sited.names("get_todo").await.contains(&"site_id".into()));
    let ok = sited
        .op("get_todo", json!({"id": 1, "site_id": "main"}))
        .await;
    assert_eq!(ok["data"]["id"], 1, "{ok}");
    let other = sited.op("get_todo", json!({"id": 1, "site_id": "x"})).await;
    assert_eq!(other["error"]["code"], "SITE_MISMATCH", "{other}");
}

#[tokio::test]
async fn confirmation_token_is_a_parameter_of_what_needs_confirmation_only() {
    let mut t = Todo::new("token", false).await;
    assert!(
        !t.names("get_todo")
            .await
            .contains(&"confirmation_token".into())
    );
    let ignored = t
        .op("get_todo", json!({"id": 1, "confirmation_token": "x"}))
        .await;
    assert_eq!(
        ignored["error"]["code"], "VALIDATION_UNKNOWN_PARAM",
        "{ignored}"
    );
    // Where confirmation is needed it is listed, and it is what confirms.
    let listed = t.listed("delete_todo").await;
    let token = listed
        .iter()
        .find(|p| p["name"] == "confirmation_token")
        .expect("listed for delete_todo");
    assert_eq!(token["type"], "string");
    assert_eq!(token["required"], false);
    let asked = t.op("delete_todo", json!({"id": 3})).await;
    assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let issued = asked["confirmation"]["token"].clone();
    let done = t
        .op(
            "delete_todo",
            json!({"id": 3, "confirmation_token": issued}),
        )
        .await;
    assert_eq!(done["data"], json!({"deleted": true}), "{done}");
    let gone = t.op("get_todo", json!({"id": 3})).await;
    assert_eq!(gone["error"]["code"], "NOT_FOUND_RESOURCE", "{gone}");
}

#[tokio::test]
async fn a_null_the_handler_cannot_honour_is_refused_not_ignored() {
    let mut t = Todo::new("null", false).await;
    let refused = t
        .op("update_todo", json!({"id": 1, "input": {"priority": null}}))
        .await;
    assert_eq!(
        refused["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("input.priority")),
        "{refused}"
    );
    assert_eq!(
        refused["error"]["details"]["null_fields"],
        json!(["priority"])
    );
    // Nothing changed, and introspection no longer says null clears a field.
    let kept = t.op("get_todo", json!({"id": 1})).await;
    assert_eq!(kept["data"]["priority"], "high", "{kept}");
    let input = t
        .listed("update_todo")
        .await
        .into_iter()
        .find(|p| p["name"] == "input")
        .expect("input listed");
    let said = input["description"].as_str().expect("described");
    assert!(!said.contains("null clears"), "{said}");
    assert!(said.contains("null is refused"), "{said}");
    // A value still changes it.
    let changed = t
        .op(
            "update_todo",
            json!({"id": 1, "input": {"priority": "low"}}),
        )
        .await;
    assert_eq!(changed["data"]["priority"], "low", "{changed}");
}

#[tokio::test]
async fn every_read_operation_takes_fields() {
    let mut t = Todo::new("fields", false).await;
    let list = t.op("introspect", json!({"query": "operations"})).await;
    assert_eq!(
        list["data"]["_protocol"]["capabilities"]["field_selection"],
        true
    );
    for operation in ["get_todo", "export_todos", "list_todos"] {
        assert!(
            t.names(operation).await.contains(&"fields".into()),
            "{operation}"
        );
    }
    let one = t
        .op("get_todo", json!({"id": 2, "fields": ["id", "title"]}))
        .await;
    assert_eq!(one["data"], json!({"id": 2, "title": "Review the schemas"}));
    let minimal = t
        .op("get_todo", json!({"id": 2, "fields": "minimal"}))
        .await;
    assert_eq!(
        minimal["data"],
        json!({"id": 2, "title": "Review the schemas"})
    );
    let export = t.op("export_todos", json!({"fields": ["todos"]})).await;
    assert_eq!(export["data"]["todos"].as_array().map(Vec::len), Some(3));
    let unknown = t
        .op("get_todo", json!({"id": 2, "fields": ["colour"]}))
        .await;
    assert_eq!(
        unknown["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{unknown}"
    );
    assert_eq!(
        unknown["error"]["details"]["valid_fields"],
        json!(["id", "title", "completed", "priority"])
    );
}

#[tokio::test]
async fn every_type_introspection_names_is_described() {
    let mut t = Todo::new("types", false).await;
    let introspect = t
        .op(
            "introspect",
            json!({"query": "operations", "name": "introspect"}),
        )
        .await;
    let returned = introspect["data"]["operation"]["returns"]["name"]
        .as_str()
        .expect("a return type")
        .to_owned();
    let list = t.op("introspect", json!({"query": "operations"})).await;
    let mut names: Vec<String> = list["data"]["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .filter_map(|o| o["name"].as_str().map(str::to_owned))
        .collect();
    names.retain(|n| n != "introspect");
    let mut returns = vec![returned];
    for name in names {
        let detail = t
            .op("introspect", json!({"query": "operations", "name": name}))
            .await;
        returns.push(
            detail["data"]["operation"]["returns"]["name"]
                .as_str()
                .expect("a return type")
                .to_owned(),
        );
    }
    for name in returns {
        let described = t
            .op("introspect", json!({"query": "types", "name": name}))
            .await;
        assert!(described["data"]["type"].is_object(), "{name}: {described}");
        // A union's members are described too.
        for member in described["data"]["type"]["members"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let member = t
                .op("introspect", json!({"query": "types", "name": member}))
                .await;
            assert!(member["data"]["type"].is_object(), "{member}");
        }
    }
}

#[tokio::test]
async fn parameters_are_typed_and_constraints_listed() {
    let mut t = Todo::new("typed", false).await;
    let completed = t
        .listed("list_todos")
        .await
        .into_iter()
        .find(|p| p["name"] == "completed")
        .expect("listed");
    assert_eq!(completed["type"], "boolean", "{completed}");
    let title = t
        .listed("create_todo")
        .await
        .into_iter()
        .find(|p| p["name"] == "title")
        .expect("listed");
    assert_eq!(title["minLength"], 1, "{title}");
    let empty = t.op("create_todo", json!({"title": ""})).await;
    assert_eq!(
        empty["error"]["code"], "VALIDATION_INVALID_VALUE",
        "{empty}"
    );
    assert!(
        empty["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("title")),
        "{empty}"
    );
}

#[tokio::test]
async fn a_halted_batch_keeps_the_batch_shape() {
    let mut t = Todo::new("batch", false).await;
    let halted = t
        .send(json!({"operations": [
            {"operation": "get_todo", "params": {"id": 1}},
            {"operation": "delete_todo", "params": {"id": 2}},
            {"operation": "get_todo", "params": {"id": 2}}
        ]}))
        .await;
    let at = &halted["halted_at"]["result"];
    assert_eq!(at["error"]["code"], "CONFIRMATION_REQUIRED", "{halted}");
    // The token travels in the error's details: a batch item's result is closed.
    assert!(at.get("confirmation").is_none(), "{halted}");
    assert!(
        at["error"]["details"]["confirmation_token"].is_string(),
        "{halted}"
    );
    assert!(at["error"]["details"]["expires_at"].is_string(), "{halted}");
    assert_eq!(halted["data"], Value::Null);
    assert_eq!(
        halted["summary"],
        json!({"total": 3, "succeeded": 1, "failed": 0, "halted": 1, "pending": 1})
    );
}

#[tokio::test]
async fn pagination_says_what_is_missing() {
    let mut t = Todo::new("pages", false).await;
    let first = t.op("list_todos", json!({"first": 1})).await;
    let cursor = first["data"]["pageInfo"]["endCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let alone = t.op("list_todos", json!({"after": cursor})).await;
    assert_eq!(alone["error"]["code"], "VALIDATION_INVALID_TYPE", "{alone}");
    assert_eq!(
        alone["error"]["message"],
        "Parameter 'after' needs 'first': send first (the page size) with after"
    );
    let next = t
        .op("list_todos", json!({"after": cursor, "first": 1}))
        .await;
    assert_eq!(next["data"]["items"][0]["id"], 2, "{next}");
}

#[tokio::test]
async fn one_object_keeps_its_fields_under_standard_and_schema_less_results_take_no_fields() {
    let mut t = Todo::new("standard", false).await;
    let whole = t.op("export_todos", json!({"fields": "standard"})).await;
    assert_eq!(
        whole["data"]["todos"].as_array().map(Vec::len),
        Some(3),
        "{whole}"
    );
    // An operation that does not say what it returns lists no `fields` and refuses it.
    let server = Server::builder()
        .registry(abilities_examples::catalog::registry(10).expect("builds"))
        .surface(Surface::aql_single())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let detail = lines
        .call(
            2,
            "mcp_aql",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "eu_crm_get_contact"}}),
        )
        .await;
    let text = detail["content"][0]["text"].as_str().expect("text");
    assert!(!text.contains("\"fields\""), "{text}");
    let refused = lines
        .call(
            3,
            "mcp_aql",
            json!({"operation": "eu_crm_get_contact", "params": {"id": 1, "fields": ["id"]}}),
        )
        .await;
    let refused: Value =
        serde_json::from_str(refused["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(
        refused["error"]["code"], "VALIDATION_UNKNOWN_PARAM",
        "{refused}"
    );
}

#[tokio::test]
async fn a_handler_that_sees_json_gets_the_null_that_clears_a_field() {
    let update = abilities::Ability::builder("notes/update-note", abilities::Semantic::Update)
        .description("Change a note.")
        .input_schema(json!({"type": "object", "properties": {
            "id": {"type": "integer"},
            "due": {"type": ["string", "null"]}
        }, "required": ["id"]}))
        .handler(|_ctx, args: Value| async move { Ok(json!({"received": args})) })
        .build()
        .expect("builds");
    let server = Server::builder()
        .registry(abilities::Registry::from_abilities([update]).expect("valid"))
        .surface(Surface::aql_single())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let answer = lines
        .call(
            2,
            "mcp_aql",
            json!({"operation": "notes_update_note", "params": {"id": 1, "input": {"due": null}}}),
        )
        .await;
    let answer: Value =
        serde_json::from_str(answer["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(
        answer["data"]["received"],
        json!({"id": 1, "due": null}),
        "{answer}"
    );
}

#[tokio::test]
async fn malformed_batch_items_are_answered_in_the_batch_shape() {
    let mut t = Todo::new("malformed", false).await;
    let answer = t
        .send(json!({"operations": [
            {"params": {}},
            5,
            {"operation": 7},
            {"operation": "delete_todo", "params": {"id": 1}},
            {"operation": "get_todo"}
        ]}))
        .await;
    let operations: Vec<&Value> = answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| &r["operation"])
        .collect();
    assert_eq!(
        operations,
        [&json!(""), &json!(""), &json!("7")],
        "{answer}"
    );
    assert_eq!(
        answer["pending_operations"],
        json!([{"index": 4, "operation": "get_todo"}])
    );
}
