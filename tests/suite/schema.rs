//! Wire schemas pinned as exact JSON: object schemas pass, everything else is wrapped under
//! `input` / `result`, subschemas are inlined and top-level noise is gone.
#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::collections::BTreeMap;

use abilities::{Registry, Semantic, ability, handler::Annotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

// The kinds of content a site holds (no doc comment, so the schema has no description).
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum PostType {
    Post,
    Page,
    Attachment,
}

/// Count published posts of one type.
#[ability(
    semantic = "READ",
    flatten,
    name = "my-plugin/count-posts",
    category = "site"
)]
fn count_posts(post_type: PostType) -> u64 {
    match post_type {
        PostType::Post => 42,
        PostType::Page | PostType::Attachment => 0,
    }
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Author {
    /// Display name.
    name: String,
}

/// A post.
#[derive(Serialize, JsonSchema)]
struct Post {
    id: u32,
    title: String,
    author: Author,
}

/// Get one post.
#[ability(semantic = "READ", title = "Get post")]
fn get_post(#[param(description = "The post id.")] id: u32) -> Post {
    Post {
        id,
        title: String::new(),
        author: Author {
            name: String::new(),
        },
    }
}

/// List post ids.
#[ability(semantic = "READ")]
fn list_ids(#[param(default = 10)] limit: u8, status: Option<String>) -> Vec<u32> {
    let _ = status;
    (0..u32::from(limit)).collect()
}

/// Maybe a title.
#[ability(semantic = "READ")]
fn maybe_title() -> Option<String> {
    None
}

/// Forget everything.
#[ability(semantic = "DELETE", idempotent = false, open_world)]
fn forget() {}

/// Ping with a flattened default.
#[ability(semantic = "EXECUTE", flatten)]
fn ping(#[param(description = "How many times.", default = 3)] times: u8) -> String {
    "pong".repeat(usize::from(times))
}

/// A tree of comments, which is recursive.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Comment {
    text: String,
    replies: Vec<Comment>,
}

/// Store a comment thread.
#[ability(semantic = "CREATE")]
fn store_thread(thread: Comment) -> BTreeMap<String, u32> {
    BTreeMap::from([(thread.text, 1)])
}

fn registry() -> Registry {
    Registry::collect_in(module_path!()).expect("the test abilities are valid")
}

fn input(name: &str) -> Value {
    Value::Object((**registry().get(name).expect("registered").input_schema()).clone())
}

fn output(name: &str) -> Option<Value> {
    registry()
        .get(name)
        .expect("registered")
        .output_schema()
        .map(|s| Value::Object((**s).clone()))
}

#[test]
fn flattened_enum_input_is_wrapped_under_input() {
    assert_eq!(
        input("my-plugin/count-posts"),
        json!({
            "type": "object",
            "properties": {"input": {"type": "string", "enum": ["post", "page", "attachment"]}},
            "required": ["input"]
        })
    );
}

#[test]
fn integer_output_is_wrapped_under_result_with_its_bounds() {
    assert_eq!(
        output("my-plugin/count-posts"),
        Some(json!({
            "type": "object",
            "properties": {"result": {"type": "integer", "minimum": 0}},
            "required": ["result"]
        }))
    );
}

#[test]
fn named_parameters_make_an_object_with_descriptions_bounds_and_defaults() {
    assert_eq!(
        input("get_post"),
        json!({
            "type": "object",
            "properties": {"id": {
                "type": "integer", "minimum": 0, "description": "The post id."
            }},
            "required": ["id"]
        })
    );
    assert_eq!(
        input("list_ids"),
        json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 0, "maximum": 255, "default": 10},
                "status": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            }
        })
    );
}

#[test]
fn struct_output_passes_unwrapped_and_nested_structs_are_inlined() {
    assert_eq!(
        output("get_post"),
        Some(json!({
            "type": "object",
            "description": "A post.",
            "properties": {
                "id": {"type": "integer", "minimum": 0},
                "title": {"type": "string"},
                "author": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Display name."}},
                    "required": ["name"]
                }
            },
            "required": ["id", "title", "author"]
        }))
    );
}

#[test]
fn vec_and_option_outputs_are_wrapped() {
    assert_eq!(
        output("list_ids"),
        Some(json!({
            "type": "object",
            "properties": {"result": {
                "type": "array", "items": {"type": "integer", "minimum": 0}
            }},
            "required": ["result"]
        }))
    );
    assert_eq!(
        output("maybe_title"),
        Some(json!({
            "type": "object",
            "properties": {"result": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["result"]
        }))
    );
}

#[test]
fn no_parameters_and_unit_return() {
    assert_eq!(input("forget"), json!({"type": "object", "properties": {}}));
    assert_eq!(output("forget"), None);
}

#[test]
fn flattened_default_is_kept_inside_and_not_required() {
    assert_eq!(
        input("ping"),
        json!({
            "type": "object",
            "properties": {"input": {
                "type": "integer", "minimum": 0, "maximum": 255,
                "description": "How many times.", "default": 3
            }}
        })
    );
}

#[test]
fn recursive_types_keep_a_ref_and_its_definitions() {
    let schema = input("store_thread");
    assert_eq!(
        schema["properties"]["thread"]["type"], "object",
        "the first level is inlined"
    );
    assert_eq!(
        schema["properties"]["thread"]["properties"]["replies"]["items"]["$ref"],
        "#/$defs/Comment"
    );
    assert_eq!(
        schema["$defs"]["Comment"]["properties"]["replies"]["items"]["$ref"],
        "#/$defs/Comment"
    );
    assert_eq!(
        output("store_thread"),
        Some(
            json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}, "properties": {}})
        )
    );
}

#[test]
fn no_schema_carries_top_level_noise() {
    for ability in &registry() {
        let schemas = std::iter::once(ability.input_schema()).chain(ability.output_schema());
        for schema in schemas {
            assert_eq!(
                schema.get("type"),
                Some(&json!("object")),
                "{}",
                ability.name()
            );
            assert!(
                schema.get("properties").is_some_and(Value::is_object),
                "{}",
                ability.name()
            );
            assert!(
                !schema.contains_key("$schema") && !schema.contains_key("title"),
                "{}",
                ability.name()
            );
        }
    }
}

#[test]
fn metadata_and_annotations() {
    let registry = registry();
    let count = registry.get("my-plugin/count-posts").expect("registered");
    assert_eq!(count.tool_name(), "my-plugin-count-posts");
    assert_eq!(count.description(), "Count published posts of one type.");
    assert_eq!(count.category(), Some("site"));
    assert_eq!(count.semantic(), Semantic::Read);
    assert!(
        count.input_wrapped() && count.output_wrapped() && count.is_public() && count.checks_site()
    );
    assert!(count.rust_path().ends_with("::count_posts"));
    assert!(
        count.location().starts_with("tests/suite/schema.rs:"),
        "{}",
        count.location()
    );
    assert_eq!(
        serde_json::to_value(count.annotations()).ok(),
        Some(
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        )
    );
    let forget = registry.get("forget").expect("registered");
    assert_eq!(
        forget.annotations(),
        Annotations {
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            idempotent_hint: Some(false),
            open_world_hint: Some(true),
        }
    );
    assert_eq!(
        registry.get("get_post").and_then(|a| a.title()),
        Some("Get post")
    );
    let names: Vec<_> = registry.iter().map(|a| a.name()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "the registry is sorted by name");
}
