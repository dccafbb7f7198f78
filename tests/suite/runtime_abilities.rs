//! Abilities built at run time (`Ability::builder`): JSON Schemas and an async closure, served
//! through the same schema transformation, validation and surfaces as `#[ability]` ones.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::Arc;

use crate::support::{Lines, tool_error};
use abilities::{
    Ability, AbilityError, Context, Semantic, Server, ServerError, Surface, ability,
    handler::{CallFuture, Handler, Output},
    registry::RegistryError,
};
use serde_json::{Value, json};

/// Count published posts.
#[ability(semantic = "READ", name = "posts/count")]
fn count_posts() -> u64 {
    2
}

/// `notes/search`: an object input with a bound, and an array output (wrapped on the wire).
fn search() -> Ability {
    Ability::builder("notes/search", Semantic::Read)
        .title("Search notes")
        .description("Search the notes.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 2},
                "limit": {"type": "integer", "minimum": 1, "default": 10}
            },
            "required": ["q"]
        }))
        .output_schema(json!({"type": "array", "items": {"type": "string"}}))
        .handler(|_ctx: Context, args: Value| async move {
            let q = args["q"].as_str().unwrap_or_default().to_owned();
            let limit = args["limit"].as_u64().unwrap_or(10);
            Ok(json!([format!("{q}: {limit}")]))
        })
        .build()
        .expect("the ability builds")
}

/// `notes/archive`: a flattened boolean input (wrapped under `input`), no output schema.
fn archive() -> Ability {
    Ability::builder("notes/archive", Semantic::Update)
        .description("Archive every note, or only read ones.")
        .input_schema(json!({"type": "boolean"}))
        .handler(|_ctx: Context, all: Value| async move {
            Ok(json!(if all == json!(true) { 12 } else { 3 }))
        })
        .build()
        .expect("the ability builds")
}

fn server(surface: Surface) -> Server {
    builder!()
        .site(abilities::Site::new("test", "https://example.com"))
        .surface(surface)
        .ability(search())
        .ability(archive())
        .build()
        .expect("the server builds")
}

#[tokio::test]
async fn a_runtime_ability_is_listed_with_wire_schemas_like_a_macro_one() {
    let mut lines = Lines::initialized(&server(Surface::Native)).await;
    let list = lines.request(2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "get_site_context",
            "notes-archive",
            "notes-search",
            "posts-count"
        ]
    );
    assert_eq!(
        tools[2],
        json!({
            "name": "notes-search",
            "title": "Search notes",
            "description": "Search the notes.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "q": {"type": "string", "minLength": 2},
                    "limit": {"type": "integer", "minimum": 1, "default": 10},
                    "site_id": {"type": "string", "description": "Optional: the site this call is meant for; a call naming another site is rejected."}
                },
                "required": ["q"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"type": "string"}}},
                "required": ["result"]
            },
            "annotations": {"title": "Search notes", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
        })
    );
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["input"],
        json!({"type": "boolean"})
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["input"]));
    assert!(tools[1].get("outputSchema").is_none(), "{}", tools[1]);
}

#[tokio::test]
async fn a_runtime_ability_is_validated_and_called_natively() {
    let mut lines = Lines::initialized(&server(Surface::Native)).await;
    let found = lines.call(2, "notes-search", json!({"q": "rust"})).await;
    assert_eq!(found["structuredContent"], json!({"result": ["rust: 10"]}));
    assert_eq!(found["isError"], false);
    let short = lines.call(3, "notes-search", json!({"q": "r"})).await;
    assert_eq!(tool_error(&short)["code"], "VALIDATION_INVALID_VALUE");
    assert_eq!(
        tool_error(&short)["details"]["violations"][0]["pointer"],
        "/q"
    );
    let missing = lines.call(4, "notes-search", json!({})).await;
    assert_eq!(tool_error(&missing)["code"], "VALIDATION_MISSING_PARAM");
    let site = lines
        .call(5, "notes-search", json!({"q": "rust", "site_id": 5}))
        .await;
    assert_eq!(tool_error(&site)["code"], "VALIDATION_INVALID_TYPE");
    // No output schema: a non-object result is still wrapped, so clients get an object.
    let archived = lines.call(6, "notes-archive", json!({"input": true})).await;
    assert_eq!(archived["structuredContent"], json!({"result": 12}));
    let wrong = lines
        .call(7, "notes-archive", json!({"input": "yes"}))
        .await;
    assert_eq!(tool_error(&wrong)["code"], "VALIDATION_INVALID_TYPE");
}

#[tokio::test]
async fn a_runtime_ability_is_served_through_meta_standard_and_aql() {
    let mut meta = Lines::initialized(&server(Surface::meta())).await;
    let executed = meta
        .call(
            2,
            "mcp-adapter-execute-ability",
            json!({"ability_name": "notes/archive", "parameters": false}),
        )
        .await;
    assert_eq!(
        executed["structuredContent"],
        json!({"success": true, "data": 3})
    );
    let invalid = meta
        .call(
            3,
            "mcp-adapter-execute-ability",
            json!({"ability_name": "notes/search", "parameters": {"q": 7}}),
        )
        .await;
    assert_eq!(tool_error(&invalid)["code"], "VALIDATION_INVALID_TYPE");

    let mut standard = Lines::initialized(&server(Surface::Standard)).await;
    let coerced = standard
        .call(2, "notes-archive", json!({"input": "yes"}))
        .await;
    assert_eq!(coerced["structuredContent"], json!({"result": 12}));
    let refused = standard
        .request(
            3,
            "tools/call",
            json!({"name": "notes-search", "arguments": {}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(refused["error"]["data"]["code"], "VALIDATION_MISSING_PARAM");

    let mut aql = Lines::initialized(&server(Surface::aql_single())).await;
    let envelope = |result: &Value| -> Value {
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
            .expect("the envelope is JSON")
    };
    let read = aql
        .call(
            2,
            "mcp_aql",
            json!({"operation": "notes_search", "params": {"q": "aql", "limit": 2}}),
        )
        .await;
    assert_eq!(
        envelope(&read),
        json!({"success": true, "data": ["aql: 2"]})
    );
    let unknown = aql
        .call(
            3,
            "mcp_aql",
            json!({"operation": "notes_search", "params": {"q": "aql", "top": 2}}),
        )
        .await;
    let unknown = envelope(&unknown);
    assert_eq!(unknown["error"]["code"], "VALIDATION_UNKNOWN_PARAM");
    assert_eq!(
        unknown["error"]["details"]["unknown_params"],
        json!(["top"])
    );
    let detail = aql
        .call(
            4,
            "mcp_aql",
            json!({"operation": "introspect", "params": {"query": "operations", "name": "notes_search"}}),
        )
        .await;
    let detail = envelope(&detail);
    let operation = &detail["data"]["operation"];
    assert_eq!(operation["name"], "notes_search", "{detail}");
    assert_eq!(
        operation["parameters"][0],
        json!({"name": "q", "type": "string", "required": true, "minLength": 2})
    );
}

/// A handler of its own type, holding state.
struct Echo {
    prefix: String,
}

impl Handler for Echo {
    fn call(&self, _ctx: Context, args: Value) -> CallFuture {
        let text = format!("{}{}", self.prefix, args.as_str().unwrap_or_default());
        Box::pin(async move { Ok(Output::json(json!(text))) })
    }
}

#[tokio::test]
async fn a_handler_object_and_errors_from_closures_reach_the_wire() {
    let echo = Ability::builder("echo", Semantic::Read)
        .description("Echo with a prefix.")
        .input_schema(json!({"type": "string"}))
        .output_schema(json!({"type": "string"}))
        .handler_object(Arc::new(Echo {
            prefix: "> ".into(),
        }))
        .build()
        .expect("the ability builds");
    let failing = Ability::builder("fail", Semantic::Execute)
        .description("Always fails.")
        .handler(|_ctx: Context, _args: Value| async move {
            Err::<Value, _>(AbilityError::conflict("already running"))
        })
        .build()
        .expect("the ability builds");
    let server = builder!()
        .ability(echo)
        .ability(failing)
        .build()
        .expect("the server builds");
    let client = server.connect().await.expect("connects");
    let echoed = client
        .call("echo", json!({"input": "hi"}))
        .await
        .expect("answers");
    assert_eq!(echoed.structured_content, Some(json!({"result": "> hi"})));
    let failed = client.call("fail", json!({})).await.expect("answers");
    assert_eq!(failed.is_error, Some(true));
    let text = serde_json::to_value(&failed.content[0]).expect("content");
    let error: Value = serde_json::from_str(text["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(error["code"], "CONFLICT_ALREADY_EXISTS");
}

#[test]
fn a_runtime_ability_is_checked_like_a_macro_one() {
    let no_description = Ability::builder("x", Semantic::Read)
        .handler(|_ctx: Context, _args: Value| async move { Ok(json!(1)) })
        .build()
        .expect_err("a description is required");
    assert!(
        matches!(&no_description, RegistryError::Incomplete { missing: "description", at, .. } if at.starts_with("tests/suite/runtime_abilities.rs:")),
        "{no_description}"
    );
    let no_handler = Ability::builder("x", Semantic::Read)
        .description("X.")
        .build()
        .expect_err("a handler is required");
    assert_eq!(
        no_handler.to_string().split(" (").next(),
        Some("ability `x`")
    );
    let bad_schema = Ability::builder("x", Semantic::Read)
        .description("X.")
        .input_schema(json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}}))
        .handler(|_ctx: Context, _args: Value| async move { Ok(json!(1)) })
        .build()
        .expect_err("the schema does not compile");
    assert!(matches!(bad_schema, RegistryError::InvalidSchema { .. }));
    // The naming and URI rules `#[ability]` checks at compile time hold at run time too.
    let handler = |_ctx: Context, _args: Value| async move { Ok(json!(1)) };
    let bad_name = Ability::builder("a/b/c", Semantic::Read)
        .description("X.")
        .handler(handler)
        .build()
        .expect_err("two namespaces");
    assert!(
        bad_name
            .to_string()
            .starts_with("ability name `a/b/c` (tests/suite/runtime_abilities.rs:"),
        "{bad_name}"
    );
    let bad_uri = Ability::builder("doc", Semantic::Read)
        .description("X.")
        .resource("docs://{a}{b}", None)
        .handler(handler)
        .build()
        .expect_err("adjacent variables");
    assert!(
        matches!(&bad_uri, RegistryError::InvalidUri { reason, .. } if reason.starts_with("two variables in a row")),
        "{bad_uri}"
    );
    let not_a_schema = Ability::builder("x", Semantic::Read)
        .description("X.")
        .input_schema(json!(5))
        .handler(|_ctx: Context, _args: Value| async move { Ok(json!(1)) })
        .build()
        .expect_err("5 is no schema");
    assert!(
        not_a_schema
            .to_string()
            .contains("the input schema must be a JSON object or a boolean"),
        "{not_a_schema}"
    );

    // A runtime ability whose tool name a macro ability already has fails the build, naming both.
    let clash = Ability::builder("posts-count", Semantic::Read)
        .description("Clashes.")
        .handler(|_ctx: Context, _args: Value| async move { Ok(json!(1)) })
        .build()
        .expect("builds alone");
    let error = builder!()
        .ability(clash)
        .build()
        .err()
        .expect("the tool names clash");
    assert!(
        matches!(&error, ServerError::Registry(RegistryError::ToolNameCollision { first_name, second_name, .. })
            if first_name == "posts-count" && second_name == "posts/count"
                || first_name == "posts/count" && second_name == "posts-count"),
        "{error}"
    );
}
