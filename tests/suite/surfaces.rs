//! One registry, three surfaces: native tools, the WordPress adapter's meta tools
//! (discover / get-info / execute) and the lenient standard mode, alone and side by side on
//! separate HTTP paths.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::support::{Lines, http_session_at, post, tool_error};
use abilities::{
    AbilityError, Caller, Content, Rich, Server, Site, State, Surface, ability, auth::StaticTokens,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum PostType {
    Post,
    Page,
}

/// Count published posts of one type.
#[ability(
    semantic = "READ",
    flatten,
    name = "my-plugin/count-posts",
    title = "Count posts"
)]
fn count_posts(post_type: PostType) -> u64 {
    match post_type {
        PostType::Post => 12,
        PostType::Page => 3,
    }
}

#[derive(Serialize, JsonSchema)]
struct Post {
    id: u64,
    title: String,
}

/// Get a post by id.
#[ability(semantic = "READ")]
fn wp_get_post(#[param(description = "The post id.")] id: u64) -> Result<Post, AbilityError> {
    if id == 404 {
        return Err(AbilityError::not_found(format!("no post {id}")));
    }
    Ok(Post {
        id,
        title: "Héllo / wörld".into(),
    })
}

/// Counts created posts.
struct Counter(AtomicU64);

#[derive(Serialize, JsonSchema)]
struct Created {
    title: String,
    dry_run: bool,
    created: u64,
}

/// Create a post.
#[ability(semantic = "CREATE", permission = "posts:write")]
fn wp_create_post(
    title: String,
    #[param(default = false)] dry_run: bool,
    counter: State<Counter>,
) -> Created {
    if !dry_run {
        counter.0.0.fetch_add(1, Ordering::SeqCst);
    }
    Created {
        title,
        dry_run,
        created: counter.0.0.load(Ordering::SeqCst),
    }
}

/// Sum numbers.
#[ability(semantic = "READ", flatten, name = "math/sum")]
fn sum(numbers: Vec<i64>) -> i64 {
    numbers.iter().sum()
}

/// Shout a word.
#[ability(semantic = "READ", flatten, name = "text/shout")]
fn shout(#[param(default = "hey".to_owned())] word: String) -> String {
    word.to_uppercase()
}

/// Internal housekeeping.
#[ability(semantic = "EXECUTE", name = "internal/sweep", public = false)]
fn sweep() -> &'static str {
    "swept"
}

/// Always fails.
#[ability(semantic = "EXECUTE")]
fn broken() -> Result<(), AbilityError> {
    Err(AbilityError::failed("the disk is full"))
}

/// Panics.
#[ability(semantic = "EXECUTE")]
fn panicky() -> u8 {
    panic!("boom")
}

/// A chart with its data.
#[ability(semantic = "READ")]
fn chart() -> Rich<Vec<u8>> {
    Rich::new(vec![1, 2]).with(Content::image([7u8], "image/png"))
}

/// The readme.
#[ability(semantic = "READ", resource = "docs://readme")]
fn readme() -> String {
    "# Readme".into()
}

fn builder() -> abilities::ServerBuilder {
    builder!()
        .site(Site::new("main", "https://example.com"))
        .state(Counter(AtomicU64::new(0)))
        .local_scopes(["posts:write"])
}

fn server(surface: Surface) -> Server {
    builder()
        .surface(surface)
        .build()
        .expect("the test abilities are valid")
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

// ----- meta surface -----

#[tokio::test]
async fn meta_serves_exactly_three_tools() {
    let mut lines = Lines::initialized(&server(Surface::meta())).await;
    let list = lines.request(2, "tools/list", json!({})).await;
    let tools = &list["result"]["tools"];
    assert_eq!(
        names(&list),
        [
            "mcp-adapter-discover-abilities",
            "mcp-adapter-get-ability-info",
            "mcp-adapter-execute-ability"
        ]
    );
    assert_eq!(tools[0]["title"], "Discover Abilities");
    assert_eq!(
        tools[0]["inputSchema"],
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        tools[0]["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["ability_name"]));
    assert_eq!(tools[2]["inputSchema"]["required"], json!(["ability_name"]));
    assert_eq!(tools[2]["annotations"]["destructiveHint"], true);
    // The output schemas the adapter declares: get-info requires what it always sends (its
    // `meta` is optional), execute has `error` as a string beside `data`.
    assert_eq!(
        tools[1]["outputSchema"]["required"],
        json!(["name", "label", "description", "input_schema"])
    );
    assert_eq!(
        tools[2]["outputSchema"]["properties"]["error"]["type"],
        "string"
    );
    assert_eq!(tools[2]["outputSchema"]["required"], json!(["success"]));
    // `data` lists every JSON type, as the adapter's own schema does.
    assert_eq!(
        tools[2]["outputSchema"]["properties"]["data"]["type"],
        json!([
            "object", "array", "string", "number", "integer", "boolean", "null"
        ])
    );
    // The abilities themselves are not tools here.
    let call = lines
        .request(
            3,
            "tools/call",
            json!({"name": "wp_get_post", "arguments": {"id": 1}}),
        )
        .await;
    assert_eq!(call["error"]["code"], -32602);
}

#[tokio::test]
async fn meta_tool_names_are_configurable() {
    let names_cfg = abilities::config::MetaNames {
        discover: "discover".into(),
        get_info: "info".into(),
        execute: "run".into(),
    };
    let mut lines = Lines::initialized(&server(Surface::Meta(names_cfg))).await;
    let list = lines.request(2, "tools/list", json!({})).await;
    assert_eq!(names(&list), ["discover", "info", "run"]);
    let result = lines
        .call(
            3,
            "run",
            json!({"ability_name": "text/shout", "parameters": "hi"}),
        )
        .await;
    assert_eq!(
        result["structuredContent"],
        json!({"success": true, "data": "HI"})
    );
}

#[tokio::test]
async fn discover_lists_public_tool_abilities_by_ability_name() {
    let mut lines = Lines::initialized(&server(Surface::meta())).await;
    // Arguments are ignored.
    let result = lines
        .call(2, "mcp-adapter-discover-abilities", json!({"filter": "x"}))
        .await;
    assert_eq!(result["isError"], false);
    let abilities = &result["structuredContent"]["abilities"];
    let listed: Vec<&str> = abilities
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    // Sorted by name; the non-public ability and the resource are absent.
    assert_eq!(
        listed,
        [
            "broken",
            "chart",
            "math/sum",
            "my-plugin/count-posts",
            "panicky",
            "text/shout",
            "wp_create_post",
            "wp_get_post"
        ]
    );
    assert_eq!(
        abilities[3],
        json!({"name": "my-plugin/count-posts", "label": "Count posts",
               "description": "Count published posts of one type."})
    );
    // Without a title, the label is the name.
    assert_eq!(abilities[0]["label"], "broken");
}

#[tokio::test]
async fn get_info_returns_the_abilitys_own_schemas() {
    let mut lines = Lines::initialized(&server(Surface::meta())).await;
    let info = lines
        .call(
            2,
            "mcp-adapter-get-ability-info",
            json!({"ability_name": "my-plugin/count-posts"}),
        )
        .await["structuredContent"]
        .clone();
    assert_eq!(info["name"], "my-plugin/count-posts");
    assert_eq!(info["label"], "Count posts");
    // Unwrapped: the enum itself, and the integer output.
    assert_eq!(
        info["input_schema"],
        json!({"type": "string", "enum": ["post", "page"]})
    );
    assert_eq!(
        info["output_schema"],
        json!({"type": "integer", "minimum": 0})
    );
    assert_eq!(info["meta"]["semantic"], "READ");
    assert_eq!(info["meta"]["mcp"]["tool_name"], "my-plugin-count-posts");
    assert_eq!(info["meta"]["mcp"]["input_wrapped"], true);
    assert_eq!(info["meta"]["annotations"]["readOnlyHint"], true);

    // An object input stays the object; no output schema for `()`.
    let info = lines
        .call(
            3,
            "mcp-adapter-get-ability-info",
            json!({"ability_name": "wp_create_post"}),
        )
        .await["structuredContent"]
        .clone();
    assert_eq!(info["input_schema"]["type"], "object");
    assert_eq!(info["input_schema"]["required"], json!(["title"]));
    assert_eq!(info["meta"]["permission"], "posts:write");
    let info = lines
        .call(
            4,
            "mcp-adapter-get-ability-info",
            json!({"ability_name": "broken"}),
        )
        .await["structuredContent"]
        .clone();
    assert!(info.get("output_schema").is_none(), "{info}");

    // Resources can be described too.
    let info = lines
        .call(
            5,
            "mcp-adapter-get-ability-info",
            json!({"ability_name": "readme"}),
        )
        .await["structuredContent"]
        .clone();
    assert_eq!(info["meta"]["mcp"]["type"], "resource");
    assert_eq!(info["meta"]["mcp"]["uri"], "docs://readme");
}

#[tokio::test]
async fn get_info_errors_are_tool_errors() {
    let mut lines = Lines::initialized(&server(Surface::meta())).await;
    let cases = [
        (json!({}), "VALIDATION_MISSING_PARAM"),
        (json!({"ability_name": 7}), "VALIDATION_INVALID_TYPE"),
        (json!({"ability_name": "nope/none"}), "NOT_FOUND_ABILITY"),
        (
            json!({"ability_name": "internal/sweep"}),
            "NOT_FOUND_ABILITY",
        ),
    ];
    let mut messages = Vec::new();
    for (id, (args, code)) in (2..).zip(cases) {
        let result = lines.call(id, "mcp-adapter-get-ability-info", args).await;
        let error = tool_error(&result);
        assert_eq!(error["code"], code, "{error}");
        messages.push(error["message"].clone());
    }
    // A hidden ability is indistinguishable from a missing one (but for its name).
    assert_eq!(messages[3], "no ability named 'internal/sweep'");
}

#[tokio::test]
async fn execute_takes_parameters_in_the_abilitys_own_shape() {
    let mut lines = Lines::initialized(&server(Surface::meta())).await;
    let execute = |args: Value| args;
    let cases = [
        // A flattened enum: the bare value.
        (
            execute(json!({"ability_name": "my-plugin/count-posts", "parameters": "page"})),
            json!(3),
        ),
        // A flattened array.
        (
            execute(json!({"ability_name": "math/sum", "parameters": [1, 2, 3]})),
            json!(6),
        ),
        // A flattened value with a default: parameters may be left out.
        (execute(json!({"ability_name": "text/shout"})), json!("HEY")),
        // An object.
        (
            execute(json!({"ability_name": "wp_get_post", "parameters": {"id": 5}})),
            json!({"id": 5, "title": "Héllo / wörld"}),
        ),
        // The tool name works too.
        (
            execute(json!({"ability_name": "my-plugin-count-posts", "parameters": "post"})),
            json!(12),
        ),
    ];
    for (id, (args, data)) in (2..).zip(cases) {
        let result = lines
            .call(id, "mcp-adapter-execute-ability", args.clone())
            .await;
        assert_eq!(result["isError"], false, "{args}: {result}");
        assert_eq!(
            result["structuredContent"],
            json!({"success": true, "data": data}),
            "{args}"
        );
        // The text is the same JSON, unescaped (`/` and accents as they are).
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().expect("text"))
                .expect("JSON text");
        assert_eq!(text, result["structuredContent"]);
    }
    let result = lines
        .call(
            9,
            "mcp-adapter-execute-ability",
            json!({"ability_name": "wp_get_post", "parameters": {"id": 5}}),
        )
        .await;
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("Héllo / wörld"), "{text}");
    // Content blocks follow the JSON.
    let result = lines
        .call(
            10,
            "mcp-adapter-execute-ability",
            json!({"ability_name": "chart"}),
        )
        .await;
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["structuredContent"]["data"], json!([1, 2]));
}

#[tokio::test]
async fn execute_applies_the_targets_checks() {
    let server = builder()
        .surface(Surface::meta())
        .local_scopes(Vec::<String>::new())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let cases = [
        (
            json!({"ability_name": "wp_create_post", "parameters": {"title": "x"}}),
            "PERMISSION_DENIED",
        ),
        (
            json!({"ability_name": "my-plugin/count-posts", "parameters": "post", "site_id": "other"}),
            "SITE_MISMATCH",
        ),
        (
            json!({"ability_name": "wp_get_post", "parameters": {"id": 1, "site_id": "other"}}),
            "SITE_MISMATCH",
        ),
        (
            json!({"ability_name": "wp_get_post", "parameters": {"id": "one"}}),
            "VALIDATION_INVALID_TYPE",
        ),
        (
            json!({"ability_name": "wp_get_post"}),
            "VALIDATION_MISSING_PARAM",
        ),
        (
            json!({"ability_name": "my-plugin/count-posts", "parameters": "post-type"}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"ability_name": "wp_get_post", "parameters": {"id": 404}}),
            "NOT_FOUND_RESOURCE",
        ),
        (
            json!({"ability_name": "internal/sweep"}),
            "NOT_FOUND_ABILITY",
        ),
        (json!({"parameters": {}}), "VALIDATION_MISSING_PARAM"),
        (json!({"ability_name": "broken"}), "EXECUTION_FAILED"),
        (json!({"ability_name": "panicky"}), "INTERNAL_ERROR"),
    ];
    for (id, (args, code)) in (2..).zip(cases) {
        let result = lines
            .call(id, "mcp-adapter-execute-ability", args.clone())
            .await;
        let error = tool_error(&result);
        assert_eq!(error["code"], code, "{args}: {error}");
        assert!(result.get("structuredContent").is_none(), "{result}");
    }
    // The right site passes.
    let result = lines
        .call(
            20,
            "mcp-adapter-execute-ability",
            json!({"ability_name": "my-plugin/count-posts", "parameters": "post", "site_id": "main"}),
        )
        .await;
    assert_eq!(result["structuredContent"]["data"], 12);
}

// ----- standard mode -----

#[tokio::test]
async fn standard_lists_the_native_tools() {
    let mut native = Lines::initialized(&server(Surface::Native)).await;
    let mut standard = Lines::initialized(&server(Surface::Standard)).await;
    let a = native.request(2, "tools/list", json!({})).await;
    let b = standard.request(2, "tools/list", json!({})).await;
    assert_eq!(a["result"], b["result"]);
}

#[tokio::test]
async fn standard_pretty_prints_and_keeps_structured_content() {
    let mut lines = Lines::initialized(&server(Surface::Standard)).await;
    let result = lines.call(2, "wp_get_post", json!({"id": 3})).await;
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["content"][0]["text"],
        "{\n  \"id\": 3,\n  \"title\": \"Héllo / wörld\"\n}"
    );
    assert_eq!(
        result["structuredContent"],
        json!({"id": 3, "title": "Héllo / wörld"})
    );
}

#[tokio::test]
async fn standard_accepts_string_booleans_and_numbers_native_does_not() {
    let mut standard = Lines::initialized(&server(Surface::Standard)).await;
    for (id, (given, expected)) in (2..).zip([
        ("true", true),
        ("TRUE", true),
        ("1", true),
        ("yes", true),
        ("Yes", true),
        ("false", false),
        ("0", false),
        ("no", false),
        ("NO", false),
    ]) {
        let result = standard
            .call(
                id,
                "wp_create_post",
                json!({"title": "t", "dry_run": given}),
            )
            .await;
        assert_eq!(
            result["structuredContent"]["dry_run"], expected,
            "{given}: {result}"
        );
    }
    let result = standard.call(20, "wp_get_post", json!({"id": "7"})).await;
    assert_eq!(result["structuredContent"]["id"], 7);

    let mut native = Lines::initialized(&server(Surface::Native)).await;
    let result = native
        .call(
            2,
            "wp_create_post",
            json!({"title": "t", "dry_run": "true"}),
        )
        .await;
    assert_eq!(tool_error(&result)["code"], "VALIDATION_INVALID_TYPE");
    let result = native.call(3, "wp_get_post", json!({"id": "7"})).await;
    assert_eq!(tool_error(&result)["code"], "VALIDATION_INVALID_TYPE");
}

#[tokio::test]
async fn standard_reports_domain_errors_as_json_rpc_errors() {
    let server = builder()
        .surface(Surface::Standard)
        .local_scopes(Vec::<String>::new())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let cases = [
        (
            "wp_get_post",
            json!({"id": 404}),
            -32602,
            "NOT_FOUND_RESOURCE",
        ),
        ("wp_get_post", json!({}), -32602, "VALIDATION_MISSING_PARAM"),
        (
            "wp_create_post",
            json!({"title": "t", "dry_run": "maybe"}),
            -32001,
            "PERMISSION_DENIED",
        ),
        (
            "my-plugin-count-posts",
            json!({"input": "post", "site_id": "other"}),
            -32602,
            "SITE_MISMATCH",
        ),
        ("broken", json!({}), -32603, "EXECUTION_FAILED"),
        ("panicky", json!({}), -32603, "INTERNAL_ERROR"),
    ];
    for (id, (name, args, rpc, code)) in (2..).zip(cases) {
        let response = lines
            .request(id, "tools/call", json!({"name": name, "arguments": args}))
            .await;
        let error = &response["error"];
        assert_eq!(error["code"], rpc, "{name}: {response}");
        assert_eq!(error["data"]["code"], code, "{name}: {response}");
    }
    let response = lines
        .request(
            20,
            "tools/call",
            json!({"name": "wp_get_post", "arguments": {"id": 404}}),
        )
        .await;
    assert_eq!(response["error"]["message"], "no post 404");
    // Still serving.
    let result = lines.call(21, "wp_get_post", json!({"id": 1})).await;
    assert_eq!(result["isError"], false);
}

// ----- several surfaces, one process -----

#[tokio::test]
async fn surfaces_share_one_registry_on_separate_paths() {
    let server = builder()
        .authenticator(StaticTokens::new().allow_anonymous(Caller::new("anyone", ["posts:write"])))
        .mount("/mcp", Surface::Native)
        .mount("/mcp/meta", Surface::meta())
        .mount("/mcp/standard", Surface::Standard)
        .build()
        .expect("valid");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(abilities::http::serve_router(listener, server.app()));

    let mut created = Vec::new();
    for (path, tool, args) in [
        ("/mcp", "wp_create_post", json!({"title": "a"})),
        (
            "/mcp/meta",
            "mcp-adapter-execute-ability",
            json!({"ability_name": "wp_create_post", "parameters": {"title": "b"}}),
        ),
        (
            "/mcp/standard",
            "wp_create_post",
            json!({"title": "c", "dry_run": "no"}),
        ),
    ] {
        let session = http_session_at(addr, path).await;
        let headers = [
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let list = post(
            addr,
            path,
            &headers,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
        )
        .await
        .message();
        let listed = names(&list);
        assert!(listed.iter().any(|n| n == tool), "{path}: {listed:?}");
        let call = post(
            addr,
            path,
            &headers,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}})
            .to_string(),
        )
        .await
        .message();
        let data = &call["result"]["structuredContent"];
        let data = data.get("data").unwrap_or(data);
        created.push(data["created"].clone());
    }
    // One state behind all three: the counter went 1, 2, 3.
    assert_eq!(created, [json!(1), json!(2), json!(3)]);
    assert_eq!(server.surface(), &Surface::Native);
}
