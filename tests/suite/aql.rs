//! The MCP-AQL surface on the wire: modes and tools, requests and their errors,
//! introspection, the envelope, batches, collection queries and the confirmation gate. Every
//! answer is validated against our JSON Schemas of the envelope and of introspection
//! (`tests/schemas/`), written from the draft's text.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use std::sync::{LazyLock, Mutex};

use crate::support::Lines;
use abilities::protocol::rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ErrorData,
};
use abilities::protocol::rmcp::service::RequestContext;
use abilities::protocol::rmcp::{ClientHandler, RoleClient, ServiceExt};
use abilities::{
    AbilityError, Server, State, Surface, ability,
    aql::{Aql, AqlLimits, AqlMode, CollectionQuery, FilterOp},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    High,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
struct Task {
    id: u64,
    title: String,
    done: bool,
    priority: Priority,
    hours: u32,
}

struct Tasks(Mutex<Vec<Task>>);

fn tasks() -> Tasks {
    let task = |id, title: &str, done, priority, hours| Task {
        id,
        title: title.into(),
        done,
        priority,
        hours,
    };
    Tasks(Mutex::new(vec![
        task(1, "write", true, Priority::High, 3),
        task(2, "review", false, Priority::Low, 1),
        task(3, "ship", false, Priority::High, 5),
        task(4, "rest", true, Priority::Low, 8),
    ]))
}

/// List tasks.
#[ability(semantic = "READ")]
fn list_tasks(tasks: State<Tasks>) -> Vec<Task> {
    tasks.0.0.lock().map(|t| t.clone()).unwrap_or_default()
}

/// Get one task.
#[ability(semantic = "READ")]
fn get_task(
    #[param(description = "The task id.")] id: u64,
    tasks: State<Tasks>,
) -> Result<Task, AbilityError> {
    tasks
        .0
        .0
        .lock()
        .ok()
        .and_then(|t| t.iter().find(|t| t.id == id).cloned())
        .ok_or_else(|| AbilityError::not_found(format!("no task {id}")))
}

/// Add a task.
#[ability(semantic = "CREATE")]
fn create_task(
    #[param(description = "What to do.")] title: String,
    #[param(default = 1)] hours: u32,
    tasks: State<Tasks>,
) -> Result<Task, AbilityError> {
    let mut tasks = tasks.0.0.lock().map_err(|_| "the store is poisoned")?;
    let task = Task {
        id: tasks.len() as u64 + 1,
        title,
        done: false,
        priority: Priority::Low,
        hours,
    };
    tasks.push(task.clone());
    Ok(task)
}

/// Change a task.
#[ability(semantic = "UPDATE")]
fn update_task(
    id: u64,
    title: Option<String>,
    done: Option<bool>,
    tasks: State<Tasks>,
) -> Result<Task, AbilityError> {
    let mut tasks = tasks.0.0.lock().map_err(|_| "the store is poisoned")?;
    let task = tasks
        .iter_mut()
        .find(|t| t.id == id)
        .ok_or_else(|| AbilityError::not_found(format!("no task {id}")))?;
    if let Some(title) = title {
        task.title = title;
    }
    if let Some(done) = done {
        task.done = done;
    }
    Ok(task.clone())
}

/// Delete a task.
#[ability(semantic = "DELETE")]
fn delete_task(id: u64, tasks: State<Tasks>) -> Result<bool, AbilityError> {
    let mut tasks = tasks.0.0.lock().map_err(|_| "the store is poisoned")?;
    let before = tasks.len();
    tasks.retain(|t| t.id != id);
    if tasks.len() == before {
        return Err(AbilityError::not_found(format!("no task {id}")));
    }
    Ok(true)
}

/// Wipe everything (admins only).
#[ability(semantic = "DELETE", permission = "tasks:admin")]
fn wipe() -> bool {
    true
}

/// Recompute everything.
#[ability(semantic = "EXECUTE", danger = "safe")]
fn recompute() -> &'static str {
    "done"
}

/// Crash.
#[ability(semantic = "EXECUTE", danger = "safe")]
fn crash() -> u8 {
    panic!("crashed")
}

/// Sensor readings.
#[ability(semantic = "READ", family = "observe", name = "sensors/read-all")]
fn sensors() -> Vec<Reading> {
    vec![Reading { level: 3 }, Reading { level: 9 }]
}

#[derive(Clone, Serialize, JsonSchema)]
struct Reading {
    level: u32,
}

/// Readings above a level, filtered by the handler itself when it can.
#[ability(semantic = "READ", family = "observe")]
fn levels(query: CollectionQuery) -> Vec<Reading> {
    let min = query
        .filter()
        .iter()
        .find(|c| c.field == "level" && c.op == FilterOp::Gte)
        .and_then(|c| c.value.as_u64());
    // Claims the filter, but "forgets" to apply it: the runtime must trust the claim.
    if min == Some(100) {
        query.filtered();
    }
    vec![Reading { level: 1 }, Reading { level: 200 }]
}

fn config(mode: AqlMode) -> Aql {
    Aql::new(mode).elicit_confirmation(false).computed_field(
        "list_tasks",
        "long",
        "boolean",
        "Takes four hours or more.",
        |item| json!(item["hours"].as_u64().is_some_and(|h| h >= 4)),
    )
}

fn server_with(aql: Aql) -> Server {
    builder!()
        .site(abilities::Site::new("test", "https://example.com"))
        .state(tasks())
        .surface(Surface::Aql(aql))
        .build()
        .expect("the test abilities are valid")
}

static ENVELOPE: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!("../schemas/aql-envelope.schema.json"))
        .expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
});

static INTROSPECTION: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value =
        serde_json::from_str(include_str!("../schemas/aql-introspection.schema.json"))
            .expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
});

fn assert_valid(validator: &jsonschema::Validator, value: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{value:#}");
}

struct Aq {
    lines: Lines,
    id: u64,
}

impl Aq {
    async fn new(server: &Server) -> Self {
        Self {
            lines: Lines::initialized(server).await,
            id: 100,
        }
    }

    /// Call `tool` and return the envelope and `isError`, after checking the envelope.
    async fn call(&mut self, tool: &str, args: Value) -> (Value, bool) {
        self.id += 1;
        let result = self.lines.call(self.id, tool, args.clone()).await;
        let text = result["content"][0]["text"].as_str().expect("a text block");
        let envelope: Value = serde_json::from_str(text).expect("JSON text");
        assert_valid(&ENVELOPE, &envelope);
        if args.get("operations").is_some() {
            support::assert_aql_batch(&envelope);
        }
        if args["operation"] == "introspect" {
            assert_valid(&INTROSPECTION, &envelope);
        }
        (envelope, result["isError"] == true)
    }

    async fn ok(&mut self, tool: &str, args: Value) -> Value {
        let (envelope, is_error) = self.call(tool, args.clone()).await;
        assert_eq!(envelope["success"], true, "{args}: {envelope}");
        assert!(!is_error);
        envelope["data"].clone()
    }

    async fn fail(&mut self, tool: &str, args: Value) -> Value {
        let (envelope, _) = self.call(tool, args.clone()).await;
        assert_eq!(envelope["success"], false, "{args}: {envelope}");
        envelope["error"].clone()
    }
}

fn names(server: &Server) -> Vec<String> {
    server.tools().iter().map(|t| t.name.to_string()).collect()
}

#[test]
fn modes_register_their_tools() {
    assert_eq!(names(&server_with(config(AqlMode::Single))), ["mcp_aql"]);
    assert_eq!(
        names(&server_with(config(AqlMode::Semantic))),
        [
            "mcp_aql_create",
            "mcp_aql_read",
            "mcp_aql_update",
            "mcp_aql_delete",
            "mcp_aql_execute",
            "mcp_aql_observe"
        ]
    );
    let all = server_with(config(AqlMode::All).prefix("tasks_"));
    assert_eq!(names(&all)[..2], ["tasks_mcp_aql", "tasks_mcp_aql_create"]);
    for tool in all.tools() {
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(description.contains("introspect"), "{description}");
        assert!(description.len() < 400, "{description}");
        assert_eq!(tool.input_schema["type"], "object");
    }
    let tools = all.tools();
    let annotations = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect("the tool");
        let a = tool.annotations.as_ref().expect("annotations");
        (a.read_only_hint, a.destructive_hint)
    };
    assert_eq!(annotations("tasks_mcp_aql"), (Some(false), Some(true)));
    assert_eq!(annotations("tasks_mcp_aql_read"), (Some(true), Some(false)));
    assert_eq!(
        annotations("tasks_mcp_aql_create"),
        (Some(false), Some(false))
    );
    assert_eq!(
        annotations("tasks_mcp_aql_delete"),
        (Some(false), Some(true))
    );
    assert_eq!(
        annotations("tasks_mcp_aql_observe"),
        (Some(true), Some(false))
    );
}

#[tokio::test]
async fn introspection_lists_and_describes() {
    let server = server_with(config(AqlMode::Semantic));
    let mut aq = Aq::new(&server).await;
    let list = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "operations"}}),
        )
        .await;
    let protocol = &list["_protocol"];
    assert_eq!(protocol["version"], "1.0.0-draft");
    assert_eq!(protocol["mode"], "semantic");
    assert_eq!(protocol["conformance"], "level-2");
    assert_eq!(protocol["limits"]["max_nesting_depth"], 32);
    assert_eq!(protocol["capabilities"]["batch"], true);
    let ops: Vec<(&str, &str, &str)> = list["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap_or_default(),
                o["semantic_category"].as_str().unwrap_or_default(),
                o["endpoint"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(ops.contains(&("introspect", "READ", "read")));
    assert!(ops.contains(&("sensors_read_all", "READ", "observe")));
    assert!(ops.contains(&("delete_task", "DELETE", "delete")));
    assert_eq!(ops.len(), 11);

    let detail = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "update_task"}}),
        )
        .await["operation"]
        .clone();
    assert_eq!(detail["mcpTool"], "mcp_aql_update");
    assert_eq!(
        detail["permissions"],
        json!({"readOnly": false, "destructive": true})
    );
    let params: Vec<(&str, bool)> = detail["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default(),
                p["required"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    // `site_id` is accepted wherever the ability checks the site.
    assert_eq!(params, [("id", true), ("site_id", false), ("input", true)]);
    assert_eq!(
        detail["examples"][0]["request"],
        json!({"operation": "update_task", "params": {"id": 1, "input": {"title": "example"}}})
    );

    let detail = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "query": "operations", "name": "list_tasks"}),
        )
        .await["operation"]
        .clone();
    let accepted: Vec<&str> = detail["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(accepted.contains(&"filter") && accepted.contains(&"aggregate"));
    assert_eq!(detail["computed_fields"][0]["name"], "long");
    assert_eq!(
        detail["aggregation_support"]["numeric_fields"],
        json!(["id", "hours"])
    );
    let delete = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "delete_task"}}),
        )
        .await;
    let description = delete["operation"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(description.contains("confirmation"), "{description}");

    // Unknown names: null, with success.
    let none = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "nope"}}),
        )
        .await;
    assert_eq!(none, json!({"operation": null}));
    let types = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "types"}}),
        )
        .await;
    let type_names: Vec<&str> = types["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(type_names.contains(&"SemanticCategory") && type_names.contains(&"GetTaskResult"));
    let task = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "types", "name": "GetTaskResult"}}),
        )
        .await;
    assert_eq!(task["type"]["kind"], "object");
    assert_eq!(task["type"]["fields"][0]["name"], "id");
    let category = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "types", "name": "SemanticCategory"}}),
        )
        .await;
    assert_eq!(category["type"]["values"][1], "READ");
    let none = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "types", "name": "Nope"}}),
        )
        .await;
    assert_eq!(none, json!({"type": null}));
    let bad = aq
        .fail(
            "mcp_aql_read",
            json!({"operation": "introspect", "params": {"query": "everything"}}),
        )
        .await;
    assert_eq!(bad["code"], "INVALID_QUERY_TYPE");
}

#[tokio::test]
async fn requests_are_checked_before_anything_runs() {
    let server = server_with(config(AqlMode::Semantic).limits(AqlLimits {
        max_string_length: 64,
        ..AqlLimits::default()
    }));
    let mut aq = Aq::new(&server).await;
    let cases = [
        (
            "mcp_aql_read",
            json!({"operation": "nope"}),
            "NOT_FOUND_OPERATION",
            false,
        ),
        ("mcp_aql_read", json!({}), "VALIDATION_MISSING_PARAM", false),
        (
            "mcp_aql_read",
            json!({"operation": 7}),
            "VALIDATION_INVALID_TYPE",
            false,
        ),
        (
            "mcp_aql_create",
            json!({"operation": "get_task", "params": {"id": 1}}),
            "VALIDATION_ENDPOINT_MISMATCH",
            false,
        ),
        (
            "mcp_aql_create",
            json!({"operation": "introspect", "params": {"query": "operations"}}),
            "VALIDATION_ENDPOINT_MISMATCH",
            false,
        ),
        (
            "mcp_aql_read",
            json!({"operation": "get_task", "params": {"id": 1, "colour": "red"}}),
            "VALIDATION_UNKNOWN_PARAM",
            false,
        ),
        (
            "mcp_aql_read",
            json!({"operation": "get_task"}),
            "VALIDATION_MISSING_PARAM",
            false,
        ),
        (
            "mcp_aql_read",
            json!({"operation": "get_task", "params": {"id": "one"}}),
            "VALIDATION_INVALID_TYPE",
            false,
        ),
        (
            "mcp_aql_read",
            json!({"operation": "get_task", "params": {"id": 9}}),
            "NOT_FOUND_RESOURCE",
            false,
        ),
        (
            "mcp_aql_create",
            json!({"operation": "create_task", "params": {"title": "x".repeat(65)}}),
            "VALIDATION_PAYLOAD_TOO_LARGE",
            false,
        ),
        (
            "mcp_aql_read",
            json!({"operation": "get_task", "params": "id=1"}),
            "VALIDATION_INVALID_TYPE",
            false,
        ),
        (
            "mcp_aql_execute",
            json!({"operation": "crash"}),
            "INTERNAL_ERROR",
            true,
        ),
    ];
    for (tool, args, code, is_error) in cases {
        let (envelope, flagged) = aq.call(tool, args.clone()).await;
        assert_eq!(envelope["error"]["code"], code, "{args}: {envelope}");
        assert_eq!(flagged, is_error, "{args}");
    }
    let mismatch = aq
        .fail(
            "mcp_aql_create",
            json!({"operation": "get_task", "params": {"id": 1}}),
        )
        .await;
    assert_eq!(
        mismatch["details"],
        json!({"operation": "get_task", "expected_endpoint": "read", "actual_endpoint": "create",
               "expected_tool": "mcp_aql_read"})
    );
    let unknown = aq
        .fail(
            "mcp_aql_read",
            json!({"operation": "get_task", "params": {"id": 1, "colour": "red"}}),
        )
        .await;
    assert_eq!(unknown["details"]["unknown_params"], json!(["colour"]));
    // `fields` on every READ operation (field selection §5.1).
    assert_eq!(
        unknown["details"]["valid_params"],
        json!(["id", "site_id", "fields"])
    );
    let too_large = aq
        .fail(
            "mcp_aql_create",
            json!({"operation": "create_task", "params": {"title": "x".repeat(65)}}),
        )
        .await;
    assert_eq!(too_large["details"]["limit_type"], "string_length");

    // Top-level parameters are a fallback; `params` wins; `_` keys are ignored.
    let task = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "get_task", "id": 2, "_meta": {"trace": 1}}),
        )
        .await;
    assert_eq!(task["title"], "review");
    let task = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "get_task", "id": 2, "params": {"id": 3}}),
        )
        .await;
    assert_eq!(task["title"], "ship");
}

#[tokio::test]
async fn single_mode_routes_every_family_through_one_tool() {
    let server = server_with(config(AqlMode::Single));
    let mut aq = Aq::new(&server).await;
    let created = aq
        .ok(
            "mcp_aql",
            json!({"operation": "create_task", "params": {"title": "plan"}}),
        )
        .await;
    assert_eq!(created["id"], 5);
    let reading = aq
        .ok("mcp_aql", json!({"operation": "sensors_read_all"}))
        .await;
    assert_eq!(reading["items"][1]["level"], 9);
    let list = aq
        .ok(
            "mcp_aql",
            json!({"operation": "introspect", "params": {"query": "operations"}}),
        )
        .await;
    assert_eq!(list["_protocol"]["mode"], "single");
    let detail = aq
        .ok(
            "mcp_aql",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "create_task"}}),
        )
        .await;
    assert_eq!(detail["operation"]["mcpTool"], "mcp_aql");
}

#[tokio::test]
async fn updates_take_changed_fields_under_input() {
    let server = server_with(config(AqlMode::Semantic));
    let mut aq = Aq::new(&server).await;
    let updated = aq
        .ok(
            "mcp_aql_update",
            json!({"operation": "update_task", "params": {"id": 2, "input": {"done": true}}}),
        )
        .await;
    assert_eq!(
        (updated["title"].clone(), updated["done"].clone()),
        (json!("review"), json!(true))
    );
    for (params, code) in [
        (json!({"id": 2}), "VALIDATION_MISSING_PARAM"),
        (json!({"id": 2, "input": "done"}), "VALIDATION_INVALID_TYPE"),
        (
            json!({"id": 2, "input": {"colour": "red"}}),
            "VALIDATION_UNKNOWN_FIELD",
        ),
        (
            json!({"id": 2, "input": {"id": 3}}),
            "VALIDATION_UNKNOWN_FIELD",
        ),
        (
            json!({"id": 2, "title": "x", "input": {}}),
            "VALIDATION_UNKNOWN_PARAM",
        ),
    ] {
        let error = aq
            .fail(
                "mcp_aql_update",
                json!({"operation": "update_task", "params": params.clone()}),
            )
            .await;
        assert_eq!(error["code"], code, "{params}: {error}");
    }
}

#[tokio::test]
async fn collection_queries_filter_sort_page_select_and_aggregate() {
    let server = server_with(config(AqlMode::Semantic));
    let mut aq = Aq::new(&server).await;
    let read = |params: Value| json!({"operation": "list_tasks", "params": params});
    let page = aq
        .ok(
            "mcp_aql_read",
            read(json!({
                "filter": {"priority": "high"},
                "sort": {"field": "hours", "order": "desc"},
                "fields": ["id", "title", "_computed.long"]
            })),
        )
        .await;
    assert_eq!(
        page,
        json!({
            "items": [
                {"id": 3, "title": "ship", "_computed": {"long": true}},
                {"id": 1, "title": "write", "_computed": {"long": false}}
            ],
            "pagination": {"limit": 20, "offset": 0, "returned": 2, "total_items": 2, "has_more": false}
        })
    );
    let first = aq
        .ok(
            "mcp_aql_read",
            read(json!({"first": 3, "fields": "minimal", "filter": {"hours": {"lt": 8}}})),
        )
        .await;
    assert_eq!(
        first["items"],
        json!([{"id": 1, "title": "write"}, {"id": 2, "title": "review"}, {"id": 3, "title": "ship"}])
    );
    assert_eq!(first["pageInfo"]["hasNextPage"], false);
    let paged = aq
        .ok(
            "mcp_aql_read",
            read(json!({"first": 1, "after": first["pageInfo"]["startCursor"], "fields": ["id"]})),
        )
        .await;
    assert_eq!(paged["items"], json!([{"id": 2}]));
    assert_eq!(paged["pageInfo"]["hasPreviousPage"], true);
    let stats = aq
        .ok(
            "mcp_aql_read",
            read(json!({"aggregate": {
                "count": {"count": true},
                "hours_by_priority": {"group_by": "priority", "sum": "hours"},
                "long": {"group_by": "_computed.long"}
            }})),
        )
        .await;
    assert_eq!(
        stats,
        json!({"aggregations": {
            "count": 4,
            "hours_by_priority": {"high": 8, "low": 9},
            "long": {"false": 2, "true": 2}
        }})
    );
    let computed = aq
        .ok(
            "mcp_aql_read",
            read(json!({"filter": {"_computed.long": true}, "fields": ["id"], "limit": 1, "offset": 1})),
        )
        .await;
    assert_eq!(computed["items"], json!([{"id": 4}]));
    let error = aq
        .fail("mcp_aql_read", read(json!({"first": 1, "limit": 2})))
        .await;
    assert_eq!(error["details"]["param_name"], "pagination");
}

#[tokio::test]
async fn handlers_may_push_the_filter_down() {
    let server = server_with(config(AqlMode::Semantic));
    let mut aq = Aq::new(&server).await;
    // Not pushed down: the runtime filters.
    let runtime = aq
        .ok(
            "mcp_aql_observe",
            json!({"operation": "levels", "params": {"filter": {"level": {"gte": 2}}}}),
        )
        .await;
    assert_eq!(runtime["items"], json!([{"level": 200}]));
    // Pushed down: the runtime trusts the handler (which kept everything).
    let pushed = aq
        .ok(
            "mcp_aql_observe",
            json!({"operation": "levels", "params": {"filter": {"level": {"gte": 100}}}}),
        )
        .await;
    assert_eq!(pushed["items"], json!([{"level": 1}, {"level": 200}]));
}

#[tokio::test]
async fn destructive_operations_need_a_single_use_token() {
    let server = server_with(config(AqlMode::Semantic));
    let mut aq = Aq::new(&server).await;
    let delete = |id: u64, token: Option<&str>| {
        let mut params = json!({"id": id});
        if let Some(token) = token {
            params["_confirmation"] = json!(token);
        }
        json!({"operation": "delete_task", "params": params})
    };
    let (gate, is_error) = aq.call("mcp_aql_delete", delete(1, None)).await;
    assert!(!is_error);
    assert_eq!(gate["error"]["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(gate["error"]["details"]["danger_level"], "destructive");
    let token = gate["confirmation"]["token"].as_str().expect("a token");
    assert_eq!(gate["error"]["details"]["confirmation_token"], token);
    // Nothing was deleted.
    let still = aq
        .ok(
            "mcp_aql_read",
            json!({"operation": "get_task", "params": {"id": 1}}),
        )
        .await;
    assert_eq!(still["id"], 1);
    // Another task with this token: refused.
    let other = aq.fail("mcp_aql_delete", delete(2, Some(token))).await;
    assert_eq!(other["code"], "TOKEN_SCOPE_MISMATCH");
    // Another session: refused.
    let mut elsewhere = Aq::new(&server).await;
    let stolen = elsewhere
        .fail("mcp_aql_delete", delete(1, Some(token)))
        .await;
    assert_eq!(stolen["code"], "TOKEN_INVALID");
    // The right retry runs, once.
    let done = aq.ok("mcp_aql_delete", delete(1, Some(token))).await;
    assert_eq!(done, json!(true));
    let again = aq.fail("mcp_aql_delete", delete(1, Some(token))).await;
    assert_eq!(again["code"], "TOKEN_ALREADY_USED");
    let gone = aq
        .fail(
            "mcp_aql_read",
            json!({"operation": "get_task", "params": {"id": 1}}),
        )
        .await;
    assert_eq!(gone["code"], "NOT_FOUND_RESOURCE");
}

#[tokio::test]
async fn batches_run_in_order_continue_after_failures_and_halt_for_confirmation() {
    let server = server_with(config(AqlMode::Single));
    let mut aq = Aq::new(&server).await;
    let batch = aq
        .ok(
            "mcp_aql",
            json!({"operations": [
                {"operation": "create_task", "params": {"title": "a"}},
                {"operation": "get_task", "params": {"id": 99}},
                {"operation": "get_task", "params": {"id": 5}}
            ]}),
        )
        .await;
    assert_eq!(batch, Value::Null);
    let (envelope, _) = aq
        .call(
            "mcp_aql",
            json!({"operations": [
                {"operation": "get_task", "params": {"id": 2}},
                {"operation": "nope"},
                {"operation": "delete_task", "params": {"id": 2}},
                {"operation": "recompute"}
            ]}),
        )
        .await;
    assert_eq!(
        envelope["summary"],
        json!({"total": 4, "succeeded": 1, "failed": 1, "halted": 1, "pending": 1})
    );
    assert_eq!(
        envelope["results"][1]["result"]["error"]["code"],
        "NOT_FOUND_OPERATION"
    );
    assert_eq!(envelope["halted_at"]["index"], 2);
    assert_eq!(
        envelope["halted_at"]["result"]["error"]["code"],
        "CONFIRMATION_REQUIRED"
    );
    assert_eq!(
        envelope["pending_operations"],
        // No `params` sent: none shown (the official schema's `params` is an object).
        json!([{"index": 3, "operation": "recompute"}])
    );
    let (envelope, _) = aq
        .call(
            "mcp_aql",
            json!({"operations": [
                {"operation": "create_task", "params": {"title": "b"}},
                {"operation": "get_task", "params": {"id": 6}}
            ]}),
        )
        .await;
    assert_eq!(envelope["results"][1]["result"]["data"]["title"], "b");
    assert_eq!(
        envelope["summary"],
        json!({"total": 2, "succeeded": 2, "failed": 0})
    );
    let error = aq
        .fail("mcp_aql", json!({"operations": [], "operation": "x"}))
        .await;
    assert_eq!(error["code"], "VALIDATION_INVALID_TYPE");
    // Refused whole for its size: the official batch failure, its numbers in the message.
    let many: Vec<Value> = (0..101)
        .map(|_| json!({"operation": "get_task", "params": {"id": 1}}))
        .collect();
    let error = aq.fail("mcp_aql", json!({"operations": many})).await;
    assert_eq!(
        error,
        json!({
            "code": "VALIDATION_PAYLOAD_TOO_LARGE",
            "message": "Payload exceeds batch_operations limit of 100 operations (it has 101)"
        })
    );
}

/// A client that answers every elicitation with `confirm`.
#[derive(Clone)]
struct Confirming {
    confirm: bool,
}

impl ClientHandler for Confirming {
    fn get_info(&self) -> ClientConfig {
        support::client_config("confirming", json!({"elicitation": {}}))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        assert!(
            asked["message"]
                .as_str()
                .is_some_and(|m| m.contains("delete_task")),
            "{asked}"
        );
        Ok(serde_json::from_value(
            json!({"action": "accept", "content": {"confirm": self.confirm}}),
        )
        .expect("a result"))
    }
}

#[tokio::test]
async fn clients_with_elicitation_are_asked_directly() {
    let server = server_with(Aql::new(AqlMode::Single));
    for (confirm, expected) in [(false, "PERMISSION_DENIED"), (true, "")] {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server_io);
        let serving = server.clone();
        tokio::spawn(async move { serving.serve_stream(read, write).await });
        let client = Confirming { confirm }
            .serve(client_io)
            .await
            .expect("the client connects");
        let result = client
            .call_tool(
                serde_json::from_value(json!({
                    "name": "mcp_aql",
                    "arguments": {"operation": "delete_task", "params": {"id": 4}}
                }))
                .expect("params"),
            )
            .await
            .expect("an answer");
        let result = serde_json::to_value(result).expect("serializes");
        let envelope: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
                .expect("JSON");
        assert_valid(&ENVELOPE, &envelope);
        if expected.is_empty() {
            assert_eq!(envelope, json!({"success": true, "data": true}));
        } else {
            assert_eq!(envelope["error"]["code"], expected);
        }
        let _ = client.cancel().await;
    }
}

#[tokio::test]
async fn callers_without_the_scope_are_refused_before_any_confirmation() {
    let server = builder!()
        .state(tasks())
        .surface(Surface::Aql(config(AqlMode::Semantic)))
        .local_scopes(Vec::<String>::new())
        .build()
        .expect("valid");
    let mut aq = Aq::new(&server).await;
    let denied = aq
        .fail("mcp_aql_delete", json!({"operation": "wipe"}))
        .await;
    assert_eq!(denied["code"], "PERMISSION_DENIED");
    assert_eq!(denied["details"]["required_scope"], "tasks:admin");
}

/// The pipeline's order on this surface: permission and site first, then MCP-AQL's own checks
/// among the arguments, validation, and the confirmation gate last, so no confirmation is
/// asked for a call that could not run.
#[tokio::test]
async fn stages_run_in_order_and_the_gate_sees_only_valid_calls() {
    let server = server_with(config(AqlMode::Single));
    let mut aq = Aq::new(&server).await;
    // An invalid destructive call is refused for what it is, with no token issued.
    let invalid = aq
        .fail(
            "mcp_aql",
            json!({"operation": "delete_task", "params": {"id": "three"}}),
        )
        .await;
    assert_eq!(invalid["code"], "VALIDATION_INVALID_TYPE", "{invalid}");
    let missing = aq
        .fail("mcp_aql", json!({"operation": "delete_task", "params": {}}))
        .await;
    assert_eq!(missing["code"], "VALIDATION_MISSING_PARAM", "{missing}");
    // Unknown parameters are refused before validation looks at the known ones.
    let unknown = aq
        .fail(
            "mcp_aql",
            json!({"operation": "delete_task", "params": {"id": "x", "force": true}}),
        )
        .await;
    assert_eq!(unknown["code"], "VALIDATION_UNKNOWN_PARAM", "{unknown}");
    // Another site is refused before the unknown parameter is even looked at.
    let site = aq
        .fail(
            "mcp_aql",
            json!({"operation": "delete_task", "params": {"id": 1, "force": true, "site_id": 7}}),
        )
        .await;
    assert_eq!(site["code"], "VALIDATION_INVALID_TYPE", "{site}");
    assert_eq!(
        site["message"],
        "parameter 'site_id' must be string, got integer"
    );
    // A valid one reaches the gate.
    let (gate, is_error) = aq
        .call(
            "mcp_aql",
            json!({"operation": "delete_task", "params": {"id": 1}}),
        )
        .await;
    assert_eq!(gate["error"]["code"], "CONFIRMATION_REQUIRED", "{gate}");
    assert!(!is_error);
    assert_eq!(
        gate["confirmation"]["token"],
        gate["error"]["details"]["confirmation_token"]
    );
}

/// A confirmation token issued before a live change of the registry is redeemed after it.
#[tokio::test]
async fn a_confirmation_token_survives_a_change_of_abilities() {
    let server = server_with(config(AqlMode::Single));
    let mut aq = Aq::new(&server).await;
    let (gate, _) = aq
        .call(
            "mcp_aql",
            json!({"operation": "delete_task", "params": {"id": 1}}),
        )
        .await;
    let token = gate["confirmation"]["token"].clone();
    assert!(token.is_string(), "{gate}");
    let added = abilities::Ability::builder("late/arrival", abilities::Semantic::Read)
        .description("Added between the gate and the retry.")
        .handler(|_ctx, _args: Value| async move { Ok(json!(1)) })
        .build()
        .expect("builds");
    server.abilities().add(added).expect("added");
    let deleted = aq
        .ok(
            "mcp_aql",
            json!({"operation": "delete_task", "params": {"id": 1, "_confirmation": token}}),
        )
        .await;
    assert_eq!(deleted, json!(true));
}
